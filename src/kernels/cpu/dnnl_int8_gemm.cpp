// Int8Gemm: B packed once, primitives per shape, the 7-bit split where oneDNN's int8
// product saturates. See dnnl_int8_gemm.h.
#include "kernels/cpu/dnnl_int8_gemm.h"

#include <algorithm>
#include <cstring>

#include <omp.h>

namespace octet::dnnl_cpu {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// The M oneDNN is asked about when it picks B's layout at session creation. For a uint8
// source its layouts depend on K and N only (checked for M = 1 .. 2000 on AVX-512 VNNI and
// AMX); a run whose M wanted another one would still work on a plain B (see create()).
constexpr int64_t kPackingM = 128;

dnnl::memory::desc a_desc(int64_t m, int64_t k) { return dnnl::memory::desc({m, k}, dt::u8, tag::ab); }
dnnl::memory::desc b_desc(int64_t k, int64_t n) { return dnnl::memory::desc({k, n}, dt::s8, tag::ab); }

// One u8 x s8 product whose int16 pair sums saturate on pre-VNNI kernels (255 * 127 * 2 >
// 32767, and 255 * -128 * 2 < -32768), in the shapes that reach oneDNN's GEMV and GEMM paths.
bool products_are_exact() {
  try {
    for (int64_t m : {1, 16}) {
      const int64_t k = 64, n = 16;
      for (int8_t w : {int8_t{127}, int8_t{-128}}) {
        std::vector<uint8_t> a(static_cast<size_t>(m * k), 255);
        std::vector<int8_t> b(static_cast<size_t>(k * n), w);
        std::vector<int32_t> c(static_cast<size_t>(m * n), 0);
        const dnnl::memory::desc cd({m, n}, dt::s32, tag::ab);
        dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_desc(m, k), b_desc(k, n), cd), engine());
        std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, wrap(a_desc(m, k), a.data())},
                                                      {DNNL_ARG_WEIGHTS, wrap(b_desc(k, n), b.data())},
                                                      {DNNL_ARG_DST, wrap(cd, c.data())}};
        dnnl::stream stream(engine());
        dnnl::matmul(pd).execute(stream, args);
        stream.wait();
        for (int32_t v : c)
          if (v != 255 * w * k) return false;
      }
    }
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace

bool int8_gemm_exact() {
  static const bool exact = products_are_exact();
  return exact;
}

void column_sums(const int8_t* b, int64_t k, int64_t n, int32_t* out) {
  std::fill(out, out + n, 0);
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c) out[c] += b[r * n + c];
}

Int8Gemm::Int8Gemm(const int8_t* b, int64_t k, int64_t n) : k_(k), n_(n) {
  if (!b) return;
  colsum_.resize(static_cast<size_t>(n));
  column_sums(b, k, n, colsum_.data());
  const dnnl::memory::desc plain = b_desc(k, n);
  if (k > 0 && n > 0) {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    const dnnl::memory::desc any({k, n}, dt::s8, tag::any);
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(a_desc(kPackingM, k), any, dnnl::memory::desc({kPackingM, n}, dt::s32, tag::ab)), attr,
        engine(), /*allow_empty=*/true);
    if (pd && !is_reference_impl(pd) && !(pd.weights_desc() == plain)) {
      dnnl::memory packed(pd.weights_desc(), engine());
      dnnl::memory source = wrap(plain, b);
      dnnl::stream stream(engine());
      dnnl::reorder(source, packed).execute(stream, source, packed);
      stream.wait();
      packed_ = std::move(packed);
      return;
    }
  }
  // oneDNN reads B as it is: keep a plain copy (the graph's may be released).
  plain_ = Tensor::uninitialized(DType::Int8, {k, n});
  if (k * n > 0) std::memcpy(plain_.mutable_raw(), b, static_cast<size_t>(k * n));
}

Tensor Int8Gemm::unpack() const {
  if (!packed_) return plain_;
  Tensor plain = Tensor::uninitialized(DType::Int8, {k_, n_});
  try {
    dnnl::memory to = wrap(b_desc(k_, n_), plain.mutable_raw());
    dnnl::memory from = *packed_;
    dnnl::stream stream(engine());
    dnnl::reorder(from, to).execute(stream, from, to);
    stream.wait();
  } catch (const dnnl::error& e) {
    fail("oneDNN could not unpack a prepacked int8 weight: ", e.what());
  }
  return plain;
}

std::shared_ptr<const Int8Gemm::Entry> Int8Gemm::create(int64_t m, dnnl::memory::data_type dst_type,
                                                        dnnl::primitive_attr attr, bool with_bias) const {
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::memory::desc src = a_desc(m, k_), dst({m, n_}, dst_type, tag::ab);
  // The packed B first; a plain B when oneDNN wants another layout for this M.
  std::vector<std::pair<dnnl::memory::desc, bool>> weights;
  if (packed_) weights.emplace_back(packed_->get_desc(), true);
  weights.emplace_back(b_desc(k_, n_), false);
  return std::make_shared<Entry>(first_usable_matmul(
      weights,
      [&](const dnnl::memory::desc& wei) {
        return with_bias ? dnnl::matmul::desc(src, wei, f32_desc({1, n_}), dst) : dnnl::matmul::desc(src, wei, dst);
      },
      attr));
}

void Int8Gemm::execute_or_throw(const Entry& entry, const uint8_t* a, int64_t m, const int8_t* plain_b,
                                std::unordered_map<int, dnnl::memory>& args) const {
  // A primitive on plain B reads the run's B, the plain copy, or (rare shapes) one
  // unpacked for this run: O(K N) next to the product's O(M K N).
  Tensor unpacked;
  const void* w = plain_b;
  if (entry.uses_packed) {
    w = packed_->get_data_handle();
  } else if (!w) {
    if (packed_) unpacked = unpack();
    w = packed_ ? unpacked.raw() : plain_.raw();
  }
  args[DNNL_ARG_SRC] = wrap(a_desc(m, k_), a);
  args[DNNL_ARG_WEIGHTS] = wrap(entry.uses_packed ? packed_->get_desc() : b_desc(k_, n_), w);
  run_primitive(entry.primitive, entry.scratchpad, args);
}

void Int8Gemm::execute(const KernelContext& ctx, const Entry& entry, const uint8_t* a, int64_t m,
                       const int8_t* plain_b, std::unordered_map<int, dnnl::memory>& args) const {
  try {
    execute_or_throw(entry, a, m, plain_b, args);
  } catch (const dnnl::error& e) {
    ctx.fail("oneDNN int8 matmul failed: ", e.what());
  }
}

std::shared_ptr<const Int8Gemm::Entry> Int8Gemm::sums_entry(int64_t rows, int threads) const {
  // A run-time B has no packed copy, so its primitives differ from a constant B's only by
  // which memory they read; one key serves both. oneDNN sizes a primitive's work split
  // from omp_get_max_threads() at its creation: it is made with `threads` set.
  return cache_.get({rows, threads}, [&] {
    const int before = omp_get_max_threads();
    omp_set_num_threads(threads);
    auto entry = create(rows, dt::s32, dnnl::primitive_attr(), false);
    omp_set_num_threads(before);
    return entry;
  });
}

void Int8Gemm::run_sums(const Entry& entry, const uint8_t* a, int64_t m, const int8_t* plain_b, int32_t* sums) const {
  const bool split = !int8_gemm_exact();
  const int64_t rows = split ? 2 * m : m;
  const uint8_t* src = a;
  int32_t* dst = sums;
  const int64_t mk = m * k_, mn = m * n_;
  if (split) {
    uint8_t* halves = thread_scratch_as<uint8_t>(Scratch::SplitA, 2 * mk);
    for (int64_t i = 0; i < mk; ++i) {
      halves[i] = a[i] >> 1;
      halves[mk + i] = a[i] & 1;
    }
    src = halves;
    dst = thread_scratch_as<int32_t>(Scratch::SplitSums, 2 * mn);
  }
  std::unordered_map<int, dnnl::memory> args;
  args[DNNL_ARG_DST] = wrap(dnnl::memory::desc({rows, n_}, dt::s32, tag::ab), dst);
  execute_or_throw(entry, src, rows, plain_b, args);
  if (split)
    for (int64_t i = 0; i < mn; ++i)
      sums[i] = static_cast<int32_t>(2u * static_cast<uint32_t>(dst[i]) + static_cast<uint32_t>(dst[mn + i]));
}

bool Int8Gemm::raw_sums(const KernelContext& ctx, const uint8_t* a, int64_t m, const int8_t* plain_b,
                        int32_t* sums) const {
  auto entry = sums_entry(int8_gemm_exact() ? m : 2 * m, ctx.threads());
  if (!entry->usable) return false;
  try {
    run_sums(*entry, a, m, plain_b, sums);
  } catch (const dnnl::error& e) {
    ctx.fail("oneDNN int8 matmul failed: ", e.what());
  }
  return true;
}

bool Int8Gemm::prepare_serial(int64_t m) const { return sums_entry(int8_gemm_exact() ? m : 2 * m, 1)->usable; }

void Int8Gemm::serial_sums(const uint8_t* a, int64_t m, int32_t* sums) const {
  run_sums(*sums_entry(int8_gemm_exact() ? m : 2 * m, 1), a, m, nullptr, sums);
}

std::vector<std::string> Int8Gemm::implementations() const {
  std::vector<std::string> out;
  cache_.for_each([&](const Entry& e) { out.push_back(e.usable ? e.impl + (e.uses_packed ? "" : " (plain B)") : "octet reference"); });
  return out;
}

}  // namespace octet::dnnl_cpu
