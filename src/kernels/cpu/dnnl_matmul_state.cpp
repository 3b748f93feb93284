// MatMulState: B prepacked at session creation, primitives created per shape and cached.
// See dnnl_matmul.h for what runs where.
#include <cstring>

#include "kernels/cpu/dnnl_common.h"
#include "kernels/cpu/dnnl_matmul.h"
#include "kernels/cpu/simd_kernels.h"
#include "kernels/cpu/vec_ops.h"
#include "kernels/cpu/weight_pages.h"

namespace octet::dnnl_cpu {
namespace {

using dims = dnnl::memory::dims;

// The M oneDNN is asked about when it picks B's layout at session creation. Its blocked
// layouts for float32 depend on K and N, not M, and a run whose M would want another
// layout still works: it then reads a plain B (see create() and execute()).
constexpr int64_t kPackingM = 128;

// Packed B of at least this many bytes goes to huge pages. Measured (bench/cpp/f32_gemv.cpp,
// the decode GEMV, 2 threads, load 5, 3 interleaved rounds): SmolLM2's LM head (108 MiB)
// 75-89 GB/s in 2 MiB pages against 69-80 in 4 KiB ones; its 1.3-6.8 MiB layer matrices
// within noise either way (whose few whole 2 MiB pages hardly shorten the page walks).
constexpr size_t kHugePagesFrom = size_t{8} << 20;


// B's descriptor as the graph stores it: [K, N], or [N, K] read through strides.
dnnl::memory::desc plain_b_desc(int64_t k, int64_t n, bool trans_b) {
  return trans_b ? f32_desc({k, n}, {1, k}) : f32_desc({k, n});
}

void append(std::vector<int64_t>& key, const dims& d) {
  key.push_back(static_cast<int64_t>(d.size()));
  key.insert(key.end(), d.begin(), d.end());
}

}  // namespace

MatMulState::MatMulState(const Node& node, MatMulSpec spec) : spec_(spec) {
  const Value* b = node.input(1);
  const Tensor* t = b && b->constant() && !b->is_graph_input() ? b->constant().get() : nullptr;
  if (!t || t->dtype() != DType::Float32 || t->rank() != 2 || t->numel() == 0) return;
  if (!weight_packing_enabled()) return;  // runs read the graph's plain B
  const int64_t k = spec_.trans_b ? t->shape()[1] : t->shape()[0];
  const int64_t n = spec_.trans_b ? t->shape()[0] : t->shape()[1];
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const auto any = dnnl::memory::desc({k, n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(f32_desc({kPackingM, k}), any, f32_desc({kPackingM, n})),
                                  attr, engine(), /*allow_empty=*/true);
  if (!pd || is_reference_impl(pd)) return;
  const dnnl::memory::desc plain = plain_b_desc(k, n, spec_.trans_b);
  const dnnl::memory::desc preferred = pd.weights_desc();
  if (preferred == plain) return;  // the graph's copy is already what oneDNN reads
  // A big B in 2 MiB pages of its own (weight_pages_exact: no page past its end resident),
  // which the decode GEMV streams (dnnl_matmul_gemv.cpp); smaller ones in oneDNN's memory.
  const size_t bytes = preferred.get_size();
  if (bytes >= kHugePagesFrom) packed_pages_ = cpu::weight_pages_exact(bytes);
  dnnl::memory packed = packed_pages_ ? dnnl::memory(preferred, engine(), packed_pages_->mutable_data())
                                      : dnnl::memory(preferred, engine());
  dnnl::memory source = wrap(plain, t->raw());
  dnnl::stream stream(engine());
  dnnl::reorder(source, packed).execute(stream, source, packed);
  stream.wait();
  packed_ = std::move(packed);
  packed_dims_ = {k, n};
  gemv_k_stride_ = gemv_panel_rows(preferred);
  b_shape_ = t->shape();
}

Tensor MatMulState::unpack_b() const {
  OCTET_ASSERT(packed_, "unpack_b without a prepacked B");
  Tensor plain = Tensor::uninitialized(DType::Float32, b_shape_);
  try {
    dnnl::memory to = wrap(plain_b_desc(packed_dims_[0], packed_dims_[1], spec_.trans_b), plain.mutable_raw());
    dnnl::memory from = *packed_;
    dnnl::stream stream(engine());
    dnnl::reorder(from, to).execute(stream, from, to);
    stream.wait();
  } catch (const dnnl::error& e) {
    fail("oneDNN could not unpack a prepacked MatMul weight: ", e.what());
  }
  return plain;
}

// GeLU(erf) as a pass of vec_ops' GeluErfFast (the piecewise polynomial octet.QMatMul's
// epilogue uses, |error| <= 4.1e-7) over Y after the product, instead of oneDNN's eltwise
// post-op (issue 20): the FFN up-projections of MiniLM / DINOv2 ran 5-6% faster at one
// thread, the pass over Y while it is still in cache costing less than the post-op's erf.
// With an addend the post-op stays (its position in the chain is before the add).
bool MatMulState::own_gelu(const MatMulProblem& p) const {
  return spec_.activation == Activation::GeluErf && p.addend.empty();
}

dnnl::primitive_attr MatMulState::attributes(const MatMulProblem& p) const {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  // beta * C joins as beta * (alpha / beta * acc + C): a binary post-op has no scale of
  // its own, and oneDNN 2.6's JIT post-ops mix up the constants of two eltwise_linear ops
  // in one chain, so the one linear op comes last and the output scale takes alpha / beta.
  // (oneDNN 2.x applies the output scale after the bias, so a bias never meets alpha != 1.)
  const bool scaled_addend = !p.addend.empty() && p.addend_scale != 1.0f;
  const float scale = scaled_addend ? spec_.alpha / p.addend_scale : spec_.alpha;
  if (scale != 1.0f) attr.set_output_scales(0, {scale});
  dnnl::post_ops ops;
  if (spec_.activation == Activation::GeluErf && !own_gelu(p))
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0, 0);
  if (spec_.activation == Activation::GeluTanh) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_tanh, 0, 0);
  if (!p.addend.empty()) ops.append_binary(dnnl::algorithm::binary_add, f32_desc(p.addend));
  if (scaled_addend) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, p.addend_scale, 0.0f);
  attr.set_post_ops(ops);
  return attr;
}

std::shared_ptr<const MatMulState::Entry> MatMulState::create(const MatMulProblem& p) const {
  const auto src = f32_desc(p.src, p.src_strides), dst = f32_desc(p.dst);
  // The prepacked B first; a plain B when oneDNN wants another layout for this M.
  std::vector<std::pair<dnnl::memory::desc, bool>> weights;
  if (packed_ && p.wei == packed_dims_) weights.emplace_back(packed_->get_desc(), true);
  weights.emplace_back(f32_desc(p.wei, p.wei_strides), false);
  return std::make_shared<Entry>(first_usable_matmul(
      weights,
      [&](const dnnl::memory::desc& wei) {
        return p.bias.empty() ? dnnl::matmul::desc(src, wei, dst) : dnnl::matmul::desc(src, wei, f32_desc(p.bias), dst);
      },
      attributes(p)));
}

std::shared_ptr<const MatMulState::Entry> MatMulState::primitive_for(const MatMulProblem& p, int threads) const {
  std::vector<int64_t> key{threads};
  for (const dims* d : {&p.src, &p.src_strides, &p.wei, &p.wei_strides, &p.bias, &p.addend}) append(key, *d);
  auto entry = cache_.get(std::move(key), [&] { return create(p); });
  return entry->usable ? entry : nullptr;
}

std::vector<std::string> MatMulState::implementations() const {
  std::vector<std::string> out;
  cache_.for_each([&](const Entry& e) { out.push_back(e.usable ? e.impl : "octet reference"); });
  return out;
}

void MatMulState::execute(const KernelContext& ctx, const MatMulProblem& p, const Entry& entry, Tensor& out) const {
  const Tensor& a = ctx.input(0);
  // A primitive on plain B reads the graph's copy, or (when the state owns B, and the
  // graph's copy may be gone) one unpacked for this run: rare shapes, and the reorder is
  // O(K N) next to the product's O(M K N).
  Tensor unpacked;
  const void* plain_b = nullptr;
  if (!entry.uses_packed) {
    if (owns_input(1)) unpacked = unpack_b();
    plain_b = owns_input(1) ? unpacked.raw() : ctx.input(1).raw();
  }
  std::unordered_map<int, dnnl::memory> args;
  args[DNNL_ARG_SRC] = wrap(f32_desc(p.src, p.src_strides), a.raw());
  args[DNNL_ARG_WEIGHTS] = entry.uses_packed ? wrap(packed_->get_desc(), packed_->get_data_handle())
                                              : wrap(f32_desc(p.wei, p.wei_strides), plain_b);
  args[DNNL_ARG_DST] = wrap(f32_desc(p.dst), out.mutable_raw());
  if (!p.bias.empty()) args[DNNL_ARG_BIAS] = wrap(f32_desc(p.bias), ctx.input(p.bias_from).raw());
  if (!p.addend.empty()) {
    const int position = spec_.activation != Activation::None ? 1 : 0;  // see attributes()
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(position) | DNNL_ARG_SRC_1] =
        wrap(f32_desc(p.addend), ctx.input(p.addend_from).raw());
  }
  try {
    run_primitive(entry.primitive, entry.scratchpad, args);
  } catch (const dnnl::error& e) {
    ctx.fail("oneDNN matmul failed: ", e.what());
  }
  if (own_gelu(p)) {
    const int64_t n = p.dst.back(), rows = out.numel() / n;
    float* y = out.mutable_data<float>();
    cpu::parallel_ranges(ctx, rows, out.numel(), [&](int64_t begin, int64_t end) {
      cpu::unary(cpu::UnaryOp::GeluErfFast, y + begin * n, y + begin * n, (end - begin) * n);
    });
  }
}

}  // namespace octet::dnnl_cpu
