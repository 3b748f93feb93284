// ai.onnx MatMulInteger and QLinearMatMul on the shared int8 product (dnnl_int8_gemm.h):
// what onnxruntime's quantizer and other tools emit (dynamic mode: DynamicQuantizeLinear ->
// MatMulInteger; QOperator models: QLinearMatMul).
//
// Taken: A uint8/int8 of any rank >= 1 times a 2-D B (uint8 or int8; a constant is
// converted and packed once, a run-time B is converted per run), zero points per tensor
// or per row of A / per column of B, QLinearMatMul scales per tensor or per row / column,
// float32. Everything runs in one integer domain: A shifted into uint8, B into int8, each
// zero point with its operand, so
//   acc[m, n] = S[m, n] - za[m] colsum[n] - zb[n] (rowsum[m] - K za[m])   (int32, exact)
// with S = oneDNN's raw sums. MatMulInteger writes acc (int32 arithmetic wraps like the
// reference's); QLinearMatMul requantizes it exactly as the reference does (float32
// multiplier a_scale * b_scale / y_scale, product and rounding in double). Results are
// bit-identical to ref_quant_matmul.cpp. Batched B, other types or shapes, K > kMaxInt8K
// and non-finite multipliers go to the reference kernel.
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/cpu/dnnl_int8_gemm.h"
#include "kernels/cpu/dnnl_qmatmul.h"
#include "kernels/cpu/quant_ops.h"
#include "kernels/cpu/simd_kernels.h"

namespace octet::dnnl_cpu {
namespace {

bool is_8bit(DType t) { return t == DType::UInt8 || t == DType::Int8; }

class QGemmState : public KernelState {
 public:
  bool qlinear = false;
  DType a_type = DType::UInt8;
  // A constant B, converted to int8 (shifted by -128 when it is uint8) and packed.
  std::unique_ptr<Int8Gemm> constant_b;
  DType b_type = DType::Int8;
  // Run-time B: one Int8Gemm (with its primitives) per (K, N) seen.
  PrimitiveCache<Int8Gemm> runtime_b;
  mutable std::atomic<int64_t> reference_runs{0};
};

// Input i's data when it is a constant the session cannot override.
const Tensor* constant_input(const Node& node, size_t i) {
  const Value* v = node.input(i);
  return v && v->constant() && !v->is_graph_input() ? v->constant().get() : nullptr;
}

// `t` as int8: itself, or a uint8 tensor shifted by -128 (into `buffer`).
const int8_t* as_int8(const Tensor& t, int8_t* buffer) {
  if (t.dtype() == DType::Int8) return t.data<int8_t>();
  const uint8_t* p = t.data<uint8_t>();
  for (int64_t i = 0; i < t.numel(); ++i) buffer[i] = static_cast<int8_t>(p[i] ^ 0x80);
  return buffer;
}

// A zero point or scale of `len` values (per row / column), or of one: its i-th value.
struct PerIndex {
  const Tensor* t = nullptr;
  bool vector = false;
  double at(int64_t i) const;
};
double PerIndex::at(int64_t i) const {
  if (!t) return 0;
  const int64_t j = vector ? i : 0;
  switch (t->dtype()) {
    case DType::UInt8: return t->data<uint8_t>()[j];
    case DType::Int8: return t->data<int8_t>()[j];
    default: return t->data<float>()[j];
  }
}
// Null `t` is absent (0); otherwise `t` must have `type`, and one value or `len` of them (1-D).
bool per_index(const Tensor* t, DType type, int64_t len, PerIndex& out) {
  out = PerIndex{t, false};
  if (!t) return true;
  if (t->dtype() != type) return false;
  if (t->numel() == 1) return t->rank() <= 1;
  out.vector = true;
  return t->rank() == 1 && t->numel() == len;
}

void run_reference(KernelContext& ctx, const QGemmState& state) {
  ++state.reference_runs;
  cpu::count_int8_reference_run();
  run_reference_kernel(ctx);
}

void qgemm_kernel(KernelContext& ctx) {
  const auto& state = ctx.state_as<QGemmState>();
  const Tensor& a = ctx.input(0);
  const Tensor& b_in = ctx.input(state.qlinear ? 3 : 1);
  if (a.dtype() != state.a_type || a.rank() < 1 || !is_8bit(b_in.dtype()) || b_in.rank() != 2 || a.numel() == 0 ||
      b_in.numel() == 0)
    return run_reference(ctx, state);
  if (state.constant_b && b_in.dtype() != state.b_type) return run_reference(ctx, state);
  const int64_t k = b_in.shape()[0], n = b_in.shape()[1];
  if (a.shape().back() != k || k > kMaxInt8K) return run_reference(ctx, state);
  const int64_t rows = a.numel() / k, m_inner = a.rank() >= 2 ? a.shape()[a.rank() - 2] : 1;

  // Zero points (and QLinearMatMul's scales), per tensor or per row / column.
  PerIndex za, zb, sa, sb, sy, zy;
  const size_t za_in = 2, zb_in = state.qlinear ? 5 : 3;
  if (!per_index(ctx.optional_input(za_in), a.dtype(), m_inner, za) ||
      !per_index(ctx.optional_input(zb_in), b_in.dtype(), n, zb) || (za.vector && a.rank() < 2))
    return run_reference(ctx, state);
  DType out_type = DType::Int32;
  if (state.qlinear) {
    const Tensor* y_zp = ctx.optional_input(7);
    out_type = y_zp ? y_zp->dtype() : a.dtype();
    if (!is_8bit(out_type) || !per_index(&ctx.input(1), DType::Float32, m_inner, sa) ||
        !per_index(&ctx.input(4), DType::Float32, n, sb) || !per_index(&ctx.input(6), DType::Float32, n, sy) ||
        !per_index(y_zp, out_type, n, zy) || (sa.vector && a.rank() < 2))
      return run_reference(ctx, state);
  }

  // The integer domain: A as uint8, B as int8, each zero point shifted with its operand.
  const int32_t a_shift = a.dtype() == DType::Int8 ? 128 : 0, b_shift = b_in.dtype() == DType::UInt8 ? -128 : 0;
  const uint8_t* qa = nullptr;
  if (a.dtype() == DType::UInt8) {
    qa = a.data<uint8_t>();
  } else {
    uint8_t* shifted = thread_scratch_as<uint8_t>(Scratch::QuantizedA, a.numel());
    const int8_t* p = a.data<int8_t>();
    for (int64_t i = 0; i < a.numel(); ++i) shifted[i] = static_cast<uint8_t>(p[i]) ^ 0x80;
    qa = shifted;
  }
  const Int8Gemm* gemm = state.constant_b.get();
  std::shared_ptr<const Int8Gemm> runtime;
  const int8_t* plain_b = nullptr;
  const int32_t* colsum = nullptr;
  if (gemm) {
    colsum = gemm->colsum().data();
  } else {
    plain_b = as_int8(b_in, thread_scratch_as<int8_t>(Scratch::PlainB, k * n));
    int32_t* sums = thread_scratch_as<int32_t>(Scratch::Columns, n);
    column_sums(plain_b, k, n, sums);
    colsum = sums;
    try {
      runtime = state.runtime_b.get({k, n}, [&] { return std::make_shared<const Int8Gemm>(nullptr, k, n); });
    } catch (const dnnl::error&) {
      return run_reference(ctx, state);
    }
    gemm = runtime.get();
  }
  int32_t* acc = thread_scratch_as<int32_t>(Scratch::Sums, rows * n);
  if (!gemm->raw_sums(ctx, qa, rows, plain_b, acc)) return run_reference(ctx, state);

  // Multipliers in float32 as the reference forms them; a non-finite one is the
  // reference's business (its rounding of NaN is undefined).
  std::vector<double> mult, y_zero;
  if (state.qlinear) {
    for (int64_t r = 0; r < (sa.vector ? m_inner : 1); ++r)
      for (int64_t j = 0; j < n; ++j) {
        const float v = static_cast<float>(sa.at(r)) * static_cast<float>(sb.at(j)) / static_cast<float>(sy.at(j));
        if (!std::isfinite(v)) return run_reference(ctx, state);
        mult.push_back(v);
      }
    for (int64_t j = 0; j < n; ++j) y_zero.push_back(zy.at(j));
  }
  bool any_zb = false;
  std::vector<int32_t> zb_s(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    zb_s[j] = static_cast<int32_t>(zb.at(j)) + b_shift;
    any_zb |= zb_s[j] != 0;
  }

  std::vector<int64_t> out_shape = a.shape();
  out_shape.back() = n;
  Tensor& y = ctx.allocate_output_uninitialized(0, out_type, out_shape);
  uint8_t* py = y.mutable_raw();
  const int32_t lo = out_type == DType::Int8 ? -128 : 0, hi = out_type == DType::Int8 ? 127 : 255;
  const cpu::QuantTable& qt = cpu::quant_ops();
  cpu::parallel_ranges(ctx, rows, rows * n, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t mi = r % m_inner;
      const uint32_t zr = static_cast<uint32_t>(static_cast<int32_t>(za.at(mi)) + a_shift);
      uint32_t rs = 0;  // rowsum - K za, only needed with a weight zero point
      if (any_zb) {
        for (int64_t i = 0; i < k; ++i) rs += qa[r * k + i];
        rs -= static_cast<uint32_t>(k) * zr;
      }
      // int32 arithmetic that wraps (uint32), as the reference's int64 -> int32 cast does.
      uint32_t* row = reinterpret_cast<uint32_t*>(acc + r * n);
      for (int64_t j = 0; j < n; ++j)
        row[j] = row[j] - zr * static_cast<uint32_t>(colsum[j]) - static_cast<uint32_t>(zb_s[j]) * rs;
      if (state.qlinear)
        qt.requantize(acc + r * n, n, mult.data() + (sa.vector ? mi * n : 0), y_zero.data(), lo, hi, py + r * n);
      else
        std::memcpy(py + r * n * 4, acc + r * n, static_cast<size_t>(n) * 4);
    }
  });
}

bool prepare_qgemm(const Node& node, bool qlinear, std::unique_ptr<KernelState>& out) {
  auto state = std::make_unique<QGemmState>();
  state->qlinear = qlinear;
  const Value* a = node.input(0);
  const Value* b = node.input(qlinear ? 3 : 1);
  if (!a || !b || !is_8bit(a->type.dtype) || !is_8bit(b->type.dtype)) return false;
  if (b->type.dims && b->type.rank() != 2) return false;  // batched B: the reference kernel
  state->a_type = a->type.dtype;
  state->b_type = b->type.dtype;
  if (qlinear)
    for (size_t i : {1, 4, 6})
      if (!node.input(i) || node.input(i)->type.dtype != DType::Float32) return false;
  if (const Tensor* t = constant_input(node, qlinear ? 3 : 1)) {
    if (t->rank() != 2 || t->numel() == 0 || t->shape()[0] > kMaxInt8K) return false;
    std::vector<int8_t> converted(static_cast<size_t>(t->numel()));
    try {
      state->constant_b = std::make_unique<Int8Gemm>(as_int8(*t, converted.data()), t->shape()[0], t->shape()[1]);
    } catch (const dnnl::error&) {
      return false;
    }
  }
  out = std::move(state);
  return true;
}

bool prepare_matmul_integer(const Node& node, std::unique_ptr<KernelState>& state) {
  return prepare_qgemm(node, false, state);
}
bool prepare_qlinear_matmul(const Node& node, std::unique_ptr<KernelState>& state) {
  return prepare_qgemm(node, true, state);
}

}  // namespace

void register_qgemm_onnx(KernelRegistry& r) {
  r.add("", "MatMulInteger", KernelDef{qgemm_kernel, prepare_matmul_integer});
  r.add("", "QLinearMatMul", KernelDef{qgemm_kernel, prepare_qlinear_matmul});
}

}  // namespace octet::dnnl_cpu
