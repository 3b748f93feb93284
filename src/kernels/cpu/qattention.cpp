// Optimized kernel for octet.QAttention (docs/quantization.md section 2; oracle:
// kernels/ref/ref_qattention.cpp). The fp32 octet.Attention kernel (attention.cpp) with
// integer dot products:
//
// Q, K and V are quantized per tensor as QuantizeLinear does and kept centered (q - zp,
// within [-255, 255]) as int16, so the zero points cost nothing in the inner loops; Q.K^T
// and P.V run as VPMADDWD (two int16 products summed into an int32 lane) with exact int32
// accumulation. Scores are scaled to float, masked, softmaxed with the vectorized row
// softmax, and each P row is quantized to the p zero point's type before the P.V product.
// Where the CPU has AVX512-VNNI both products run in bytes instead (VPDPBUSD, four
// products per lane; qattention_vnni_avx512.cpp), with the same integers and floats
// (but its own exp2 for row_probabilities' P: one P level apart near .5 boundaries), and
// where it also has AMX-INT8, P.V on AMX tiles (qattention_amx_vnni_avx512.cpp; the VNNI
// task's outputs bit for bit).
// Tasks, threads and per-thread packing are the fp32 kernel's: (batch, head, 64 query
// rows) tasks over ctx.threads() OpenMP threads, K^T and V packed once per head and thread.
// The task bodies live in qattention_impl.h, compiled per ISA level, and in the VNNI units.
//
// Declined at session creation: anything but float32 Q. Handed to the reference kernel at
// run time: Sk = 0 or Dk = 0 (nothing to multiply), and head sizes or lengths whose sums
// could leave int32: 8-bit Q, K, V and P overflow only past 33000 terms (255 * 255 * n >=
// 2^31), but P with 16-bit levels (an int16 p zero point; octet quantize writes 4095 levels)
// times |v - zp| <= 255 allows about 2000 keys, more when V's zero point is central.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <iterator>
#include <limits>
#include <vector>

#include <omp.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/qattention.h"
#include "kernels/cpu/simd_kernels.h"
#include "kernels/cpu/thread_scratch.h"
#include "kernels/cpu/vec_ops.h"
#include "kernels/dispatch/cpu_features.h"
#include "kernels/ref/ref_attention.h"

namespace octet {
namespace {

using cpu::qattn::kBlockRows;
using cpu::qattn::kCols;
using cpu::qattn::kAmxRows;
using cpu::qattn::kMaxTileRows;

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// The largest |x - zp| a quantized tensor holds. P is at most 1 (a probability, or
// exp(s - rowmax) with row_probabilities), so it never exceeds round(1 / p_scale) either.
int64_t magnitude(const QuantParam& p) { return std::max<int64_t>(-int64_t{p.lo}, p.hi); }
int64_t p_magnitude(const QuantParam& p) {
  const double top = std::ceil(1.0 / static_cast<double>(p.scale)) + 1;
  return std::isfinite(top) && top > 0 ? std::min<int64_t>(magnitude(p), static_cast<int64_t>(std::min(top, 1e9)))
                                       : magnitude(p);
}

// True when `terms` products of centered values up to a and b sum exactly in int32.
bool sums_fit_int32(int64_t terms, int64_t a, int64_t b) {
  return a * b == 0 || terms <= std::numeric_limits<int32_t>::max() / (a * b);
}

std::atomic<bool> g_vnni_allowed{true};
std::atomic<bool> g_amx_allowed{true};

cpu::qattn::TaskFn vnni_task() {
  return cpu::qattn::amx_available() && cpu::qattn::amx_allowed() ? cpu::qattn::task_avx512_amx
                                                                  : cpu::qattn::task_avx512_vnni;
}

cpu::qattn::TaskFn task_for(IsaLevel level) {
  switch (level) {
    case IsaLevel::Avx512:
      return cpu::qattn::vnni_available() && cpu::qattn::vnni_allowed() ? vnni_task() : cpu::qattn::task_avx512;
    case IsaLevel::Avx2: return cpu::qattn::task_avx2;
    default: return cpu::qattn::task_generic;
  }
}

cpu::qattn::Quant quant(const QuantParam& p) {
  const float inv = 1.0f / p.scale;
  return {p.scale, static_cast<float>(p.lo), static_cast<float>(p.hi),
          std::isnormal(p.scale) && std::isnormal(inv) ? inv : 0.0f};
}

bool prepare(const Node& node, std::unique_ptr<KernelState>&) {
  const Value* q = node.input(0);
  return q && q->type.dtype == DType::Float32;
}

void run_reference(KernelContext& ctx) {
  const KernelFn fn = KernelRegistry::reference().find("octet", "QAttention");
  OCTET_ASSERT(fn, "no reference kernel for ", ctx.node().describe());
  fn(ctx);
}

void qattention_f32(KernelContext& ctx) {
  const AttentionShape a = attention_shape(ctx);
  if (ctx.input(0).dtype() != DType::Float32) ctx.fail("the optimized kernel takes float32, got ", ctx.input(0).describe());
  const QAttentionParams qp = qattention_params(ctx);
  // P.V sums over Sk rounded up to pairs (the padding pairs with zeros).
  if (a.kv_len == 0 || a.head_k == 0 || !sums_fit_int32(a.head_k + 1, magnitude(qp.q), magnitude(qp.k)) ||
      !sums_fit_int32(a.kv_len + 1, p_magnitude(qp.p), magnitude(qp.v)))
    return run_reference(ctx);
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Float32, a.out_shape);
  if (a.batch == 0 || a.q_len == 0 || a.heads * a.head_v == 0) return;
  const Tensor* mask = ctx.optional_input(3);

  cpu::qattn::Args p;
  p.heads = a.heads, p.q_len = a.q_len, p.kv_len = a.kv_len, p.head_k = a.head_k, p.head_v = a.head_v;
  p.q_b = a.q_b, p.q_s = a.q_s, p.k_b = a.k_b, p.k_s = a.k_s, p.v_b = a.v_b, p.v_s = a.v_s;
  p.y_b = a.y_b, p.y_s = a.y_s;
  p.m_b = a.m_b, p.m_h = a.m_h, p.m_q = a.m_q, p.m_k = a.m_k;
  p.causal = a.causal;
  p.row_probabilities = qp.row_probabilities;
  p.q = ctx.input(0).data<float>() + a.q_off, p.k = ctx.input(1).data<float>() + a.k_off;
  p.v = ctx.input(2).data<float>() + a.v_off;
  p.mask = mask ? mask->data<float>() : nullptr;
  p.y = y.mutable_data<float>();
  p.qq = quant(qp.q), p.kq = quant(qp.k), p.vq = quant(qp.v), p.pq = quant(qp.p);
  // The reference's float products, rounded the same way: scale * ((q_scale * k_scale) * acc)
  // and (p_scale * v_scale) * acc.
  p.scale = static_cast<float>(a.scale);
  p.qk_scale = qp.q.scale * qp.k.scale;
  p.out_scale = qp.p.scale * qp.v.scale;
  p.lowest = std::numeric_limits<float>::lowest();
  p.vec = &cpu::vec_ops();
  p.dk2 = round_up(a.head_k, 2), p.dk4 = round_up(a.head_k, 4), p.dk64 = round_up(p.dk4, 64);
  p.skp = round_up(a.kv_len, kCols), p.sk2 = round_up(a.kv_len, 2);
  p.sk4 = round_up(a.kv_len, 4), p.skq = round_up(p.sk4, 64);
  p.dvp = round_up(a.head_v, kCols);

  const cpu::qattn::TaskFn task = task_for(active_isa());
  // One thread's buffers, carved from its grow-only scratch (no allocation and no zeroing
  // per run; every task writes what it reads), each on a 64-byte line of its own.
  auto make_scratch = [&] {
    const int64_t sizes[] = {2 * p.dk2 * p.skp,  2 * p.sk2 * p.dvp,        2 * p.skp * p.dk2,
                             2 * 2 * p.dvp,      2 * kMaxTileRows * p.dk4, 4 * kMaxTileRows * p.skp,
                             2 * kMaxTileRows * p.skq, p.dk4 * p.skp,    p.dk64 * p.skp,
                             4 * p.skp,          kMaxTileRows * p.dk4,     p.skq * p.dvp,
                             4 * p.dvp,          2 * (p.skq / 32),         2 * (p.skq / 4),
                             2 * kAmxRows * p.skq, 2 * kAmxRows * p.skq,   4 * 2 * 2 * kAmxRows * p.dvp};
    int64_t total = 0;
    for (int64_t s : sizes) total += round_up(s, 64);
    char* at = cpu::thread_scratch_as<char>(cpu::Scratch::QAttention, total);
    char* part[std::size(sizes)];
    for (size_t i = 0; i < std::size(sizes); ++i) part[i] = at, at += round_up(sizes[i], 64);
    return cpu::qattn::Scratch{reinterpret_cast<int16_t*>(part[0]), reinterpret_cast<int16_t*>(part[1]),
                               reinterpret_cast<int16_t*>(part[2]), reinterpret_cast<int16_t*>(part[3]),
                               reinterpret_cast<int16_t*>(part[4]), reinterpret_cast<float*>(part[5]),
                               reinterpret_cast<int16_t*>(part[6]), reinterpret_cast<int8_t*>(part[7]),
                               reinterpret_cast<int8_t*>(part[8]),  reinterpret_cast<int32_t*>(part[9]),
                               reinterpret_cast<uint8_t*>(part[10]), reinterpret_cast<int8_t*>(part[11]),
                               reinterpret_cast<int8_t*>(part[12]), reinterpret_cast<uint8_t*>(part[13]),
                               reinterpret_cast<uint16_t*>(part[14]), reinterpret_cast<uint8_t*>(part[15]),
                               reinterpret_cast<uint8_t*>(part[16]), reinterpret_cast<int32_t*>(part[17]), -1};
  };
  cpu::parallel_attention_tasks(ctx, a.batch, a.heads, a.q_len, kBlockRows, make_scratch,
                                [&](cpu::qattn::Scratch& w, int64_t b, int64_t h, int64_t i0, int64_t i1) {
                                  task(p, b, h, i0, i1, w);
                                });
}

}  // namespace

namespace cpu::qattn {

bool vnni_available() {
  static const bool has = __builtin_cpu_supports("avx512vnni");
  return has;
}
void set_vnni_allowed(bool allowed) { g_vnni_allowed.store(allowed, std::memory_order_relaxed); }
bool vnni_allowed() { return g_vnni_allowed.load(std::memory_order_relaxed); }
bool amx_available() {
  static const bool has = vnni_available() && __builtin_cpu_supports("avx512vbmi") && amx_int8_usable();
  return has;
}
void set_amx_allowed(bool allowed) { g_amx_allowed.store(allowed, std::memory_order_relaxed); }
bool amx_allowed() { return g_amx_allowed.load(std::memory_order_relaxed); }

}  // namespace cpu::qattn

void register_cpu_qattention(KernelRegistry& r) { r.add("octet", "QAttention", KernelDef{qattention_f32, prepare}); }

}  // namespace octet
