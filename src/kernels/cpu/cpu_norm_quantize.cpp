// octet.LayerNormQuantize (docs/quantization.md §2): LayerNorm rows written straight as the
// uint8/int8 input of the static QMatMuls that read them, and the float output beside it.
//
// Why: a statically quantized encoder normalized each row into a float tensor, then every
// QMatMul reading it quantized the whole tensor again in a parallel region of its own
// before its product; a SmoothQuant-smoothed encoder (MiniLM) also ran a second
// LayerNorm of the same input (gamma / s, beta / s) for the QMatMul. Here each row is
// normalized and quantized while it is in L1, in one parallel region: one pass over X
// instead of two or three, and one fork/join of the threads less per product.
//
// The row kernels are the ones the LayerNormalization and QuantizeLinear kernels use
// (vec_ops().norm_row, quant_ops().quantize), applied in the same order, so Q and Y are
// bit-identical to those kernels run one after the other.
#include <string>
#include <vector>

#include "kernels/cpu/quant_ops.h"
#include "kernels/cpu/simd_kernels.h"
#include "kernels/cpu/vec_ops.h"

namespace octet::cpu {
namespace {

bool row_param(const Tensor* p, int64_t cols) {
  return !p || (p->dtype() == DType::Float32 && p->rank() == 1 && p->numel() == cols);
}

void fall_back(KernelContext& ctx) {
  count_int8_reference_run();
  run_reference(ctx);
}

// Normalizes each row of x for the quantized branch (qg / qb) and hands it to
// `quantize_row(r, normalized)` while it is in L1; Y (py, when wanted) is the row normalized
// with g / b. `shared` (no parameters of its own for Q, and Y wanted): the row normalized
// into Y is the one quantized, normalized once.
template <class QuantizeRow>
void normalize_rows(KernelContext& ctx, const Tensor& x, const float* g, const float* b, const float* qg,
                    const float* qb, bool shared, float* py, QuantizeRow quantize_row) {
  const int64_t cols = x.shape().back(), rows = x.numel() / cols;
  const float eps = ctx.node().attr_float("epsilon", 1e-5f);
  const float* px = x.data<float>();
  const VecTable& t = vec_ops();
  parallel_ranges(ctx, rows, x.numel(), [&](int64_t begin, int64_t end) {
    std::vector<float> row(shared ? 0 : static_cast<size_t>(cols));
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = px + r * cols;
      float* yr = py ? py + r * cols : nullptr;
      float* n = shared ? yr : row.data();
      if (yr && !shared) t.norm_row2(xr, cols, eps, {qg, qb, n}, {g, b, yr}, nullptr, nullptr);
      else t.norm_row(xr, n, cols, shared ? g : qg, shared ? b : qb, eps, true);
      quantize_row(r, n);
    }
  });
}

// Per-row mode (dynamic_type): each normalized row, while it is in L1, gets the parameters
// QMatMulState::quantize_rows would compute from it (the same min_max / abs_max, params
// and quantize calls), so the per-token QMatMuls that read Q see the same numbers as when
// they quantized the float LayerNorm output themselves.
void layer_norm_quantize_per_row(KernelContext& ctx, const Tensor& x, const float* g, const float* b,
                                 const float* qg, const float* qb, bool separate_q) {
  const std::string dyn = ctx.node().attr_string("dynamic_type", "uint8");
  if ((dyn != "uint8" && dyn != "int8") || ctx.optional_input(3) || ctx.optional_input(4)) return fall_back(ctx);
  const bool int8 = dyn == "int8";
  const int64_t cols = x.shape().back();
  const std::vector<int64_t> lead(x.shape().begin(), x.shape().end() - 1);
  uint8_t* pq = ctx.allocate_output_uninitialized(0, DType::UInt8, x.shape()).mutable_raw();
  float* ps = ctx.allocate_output_uninitialized(1, DType::Float32, lead).mutable_data<float>();
  int32_t* pz = ctx.allocate_output_uninitialized(2, DType::Int32, lead).mutable_data<int32_t>();
  float* py = ctx.output_wanted(3) ? ctx.allocate_output_uninitialized(3, DType::Float32, x.shape()).mutable_data<float>()
                                   : nullptr;
  const QuantTable& qt = quant_ops();
  normalize_rows(ctx, x, g, b, qg, qb, !separate_q && py, py, [&](int64_t r, const float* n) {
    const RowParams p = quantize_row_dynamic(qt, n, cols, int8, pq + r * cols);
    ps[r] = p.scale;
    pz[r] = p.zero_point;
  });
}

void layer_norm_quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* bias = ctx.optional_input(2);
  const Tensor* y_scale_in = ctx.optional_input(3);  // absent in per-row mode
  const Tensor* zp = ctx.optional_input(4);
  const Tensor* q_scale = ctx.optional_input(5);
  const Tensor* q_bias = ctx.optional_input(6);
  if (x.dtype() != DType::Float32 || x.rank() < 1 || x.shape().back() == 0) return fall_back(ctx);
  const int64_t cols = x.shape().back();
  if (!row_param(&scale, cols) || !row_param(bias, cols) || !row_param(q_scale, cols) || !row_param(q_bias, cols) ||
      (q_bias && !q_scale))
    return fall_back(ctx);
  const float* g = scale.data<float>();
  const float* b = bias ? bias->data<float>() : nullptr;
  // The quantized branch's parameters: its own (the smoothed copy) or the float output's.
  const float* qg = q_scale ? q_scale->data<float>() : g;
  const float* qb = q_scale ? (q_bias ? q_bias->data<float>() : nullptr) : b;
  if (ctx.node().has_attr("dynamic_type")) return layer_norm_quantize_per_row(ctx, x, g, b, qg, qb, q_scale != nullptr);
  if (!y_scale_in) return fall_back(ctx);
  const Tensor& y_scale = *y_scale_in;
  if (y_scale.dtype() != DType::Float32 || y_scale.numel() != 1 || y_scale.rank() > 1) return fall_back(ctx);
  if (zp && ((zp->dtype() != DType::UInt8 && zp->dtype() != DType::Int8) || zp->numel() != 1 || zp->rank() > 1))
    return fall_back(ctx);

  const bool is_signed = zp && zp->dtype() == DType::Int8;
  const int32_t z = !zp ? 0 : is_signed ? zp->data<int8_t>()[0] : zp->data<uint8_t>()[0];
  const int32_t lo = is_signed ? -128 : 0, hi = is_signed ? 127 : 255;
  const float s = y_scale.data<float>()[0];
  Tensor& q = ctx.allocate_output_uninitialized(0, is_signed ? DType::Int8 : DType::UInt8, x.shape());
  float* py = ctx.output_wanted(1) ? ctx.allocate_output_uninitialized(1, DType::Float32, x.shape()).mutable_data<float>()
                                   : nullptr;
  uint8_t* pq = q.mutable_raw();
  const QuantTable& qt = quant_ops();
  normalize_rows(ctx, x, g, b, qg, qb, !q_scale && py, py,
                 [&](int64_t r, const float* n) { qt.quantize(n, cols, s, z, lo, hi, pq + r * cols); });
}

bool prepare_layer_norm_quantize(const Node& node, std::unique_ptr<KernelState>&) {
  return node.input(0) && node.input(0)->type.dtype == DType::Float32;
}

}  // namespace

void register_cpu_norm_quantize(KernelRegistry& r) {
  r.add("octet", "LayerNormQuantize", KernelDef{layer_norm_quantize_kernel, prepare_layer_norm_quantize});
}

}  // namespace octet::cpu
