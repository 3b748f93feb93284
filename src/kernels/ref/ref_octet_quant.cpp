// Reference kernels for octet.QMatMul and octet.LayerNormQuantize (docs/quantization.md §2,
// src/ops/octet_quant_ops.cpp).
//
// Written straight from the definition, as the oracle the int8 kernels are tested against:
// 0. With a_channel_scale c, A is first multiplied by c along its last axis (float32
//    products, exactly as a separate Mul would compute them).
// 1. qa: A quantized as ONNX QuantizeLinear does it (x / scale as a float32 division,
//    round half to even, + zero point, saturate; NaN gives the zero point), with the
//    node's a_scale/a_zero_point, or per row (dynamic: DynamicQuantizeLinear's rule on
//    each row for "uint8", symmetric max|x| / 127 for "int8"; NaN is skipped when the
//    range is taken). A uint8/int8 A is qa itself (with an int32 a_zero_point: per row,
//    a_scale[m] / a_zero_point[m]).
// 2. acc = sum_k (qa - za) * (B - zb), exact in 64 bits.
// 3. Y = sa * sb * acc + bias in double, rounded once to float32.
// 4. The activation and the residual run through the ai.onnx Gelu and Add reference
//    kernels, as in octet.MatMulBias; between them, output_scale multiplies each column
//    (float32 products, exactly as a separate Mul would compute them).
// 5. With y_scale, the QuantizeLinear reference on the result; with y_dynamic_type, each
//    row of the result quantized per row as a dynamic QMatMul would quantize it (the
//    per-row form of LayerNormQuantize's per-row mode: Y uint8, y_scale, y_zero_point).
// 6. With norm_dynamic_type, the float Y also goes through LayerNormQuantize's per-row
//    mode (outputs 1-4), the reference of that op applied to Y.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_octet_epilogue.h"

namespace octet {
namespace {

struct Range {
  int32_t lo, hi;
};
Range range_of(DType t) { return t == DType::Int8 ? Range{-128, 127} : Range{0, 255}; }

// The zero point of a QuantizeLinear-style rounding: NaN has no integer, so it maps to
// the zero point (0 before the zero point is added).
int32_t quantize_one(float x, float scale, int32_t zp, Range r) {
  const float q = x / scale;
  if (std::isnan(q)) return std::clamp(zp, r.lo, r.hi);
  const double v = std::nearbyint(static_cast<double>(q)) + zp;
  return static_cast<int32_t>(std::clamp(v, static_cast<double>(r.lo), static_cast<double>(r.hi)));
}

// Element i of an int8/uint8 tensor.
int32_t int8_at(const Tensor& t, int64_t i) {
  return t.dtype() == DType::Int8 ? static_cast<int32_t>(t.data<int8_t>()[i])
                                  : static_cast<int32_t>(t.data<uint8_t>()[i]);
}

// Per-row quantization parameters of a dynamic QMatMul (docs/quantization.md §2).
void dynamic_row(const float* x, int64_t k, bool int8, float& scale, int32_t& zp) {
  if (int8) {
    float amax = 0;
    for (int64_t i = 0; i < k; ++i)
      if (!std::isnan(x[i])) amax = std::max(amax, std::fabs(x[i]));
    scale = amax / 127.0f;
    if (scale == 0) scale = 1;
    zp = 0;
    return;
  }
  float mn = 0, mx = 0;
  for (int64_t i = 0; i < k; ++i) {
    if (std::isnan(x[i])) continue;
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  scale = (mx - mn) / 255.0f;
  if (scale == 0) scale = 1;
  zp = quantize_one(-mn, scale, 0, Range{0, 255});
}

// Rows of x [lead..., k] quantized per row as a dynamic QMatMul quantizes them, in the
// per-row form per-token QMatMuls read (int8 stored as q + 128, zero point 128): outputs
// first, first + 1, first + 2 = (Q uint8, scale float32 [lead], zero point int32 [lead]).
void set_per_row_outputs(KernelContext& ctx, size_t first, const Tensor& x, bool int8) {
  const int64_t k = x.shape().back();
  const std::vector<int64_t> lead(x.shape().begin(), x.shape().end() - 1);
  const int64_t rows = shape_numel(lead);
  Tensor q(DType::UInt8, x.shape()), scale(DType::Float32, lead), zero(DType::Int32, lead);
  for (int64_t m = 0; m < rows; ++m) {
    const float* row = x.data<float>() + m * k;
    float s = 1;
    int32_t z = 0;
    dynamic_row(row, k, int8, s, z);
    for (int64_t i = 0; i < k; ++i)
      q.mutable_data<uint8_t>()[m * k + i] = static_cast<uint8_t>(
          int8 ? quantize_one(row[i], s, 0, Range{-128, 127}) + 128 : quantize_one(row[i], s, z, Range{0, 255}));
    scale.mutable_data<float>()[m] = s;
    zero.mutable_data<int32_t>()[m] = int8 ? 128 : z;
  }
  ctx.set_output(first, std::move(q));
  ctx.set_output(first + 1, std::move(scale));
  ctx.set_output(first + 2, std::move(zero));
}

void qmatmul_kernel(KernelContext& ctx) {
  const Node& node = ctx.node();
  const Tensor& a = ctx.input(0);
  const Tensor* a_scale = ctx.optional_input(1);
  const Tensor* a_zp = ctx.optional_input(2);
  const Tensor& b = ctx.input(3);
  const Tensor& b_scale = ctx.input(4);
  const Tensor* b_zp = ctx.optional_input(5);
  const Tensor* bias = ctx.optional_input(6);
  const Tensor* residual = ctx.optional_input(7);
  const Tensor* channel_scale = ctx.optional_input(8);
  const Tensor* output_scale = ctx.optional_input(9);

  const std::string act = node.attr_string("activation", "");
  if (act != "" && act != "gelu" && act != "gelu_tanh")
    ctx.fail("activation must be \"\", \"gelu\" or \"gelu_tanh\", got \"", act, "\"");
  const std::string dyn = node.attr_string("dynamic_type", "uint8");
  if (dyn != "uint8" && dyn != "int8") ctx.fail("dynamic_type must be \"uint8\" or \"int8\", got \"", dyn, "\"");
  const bool quantized_a = a.dtype() == DType::UInt8 || a.dtype() == DType::Int8;
  if ((a.dtype() != DType::Float32 && !quantized_a) || a.rank() < 1)
    ctx.fail("A must be float32, uint8 or int8 of rank >= 1, got ", a.describe());
  const bool per_row_a = a_zp && a_zp->dtype() == DType::Int32;
  if (quantized_a && !per_row_a && (!a_scale || channel_scale || (a_zp ? a_zp->dtype() : DType::UInt8) != a.dtype()))
    ctx.fail("a quantized A ", a.describe(), " needs a_scale, an a_zero_point of its type (absent: uint8) and no "
             "a_channel_scale");
  if (b.dtype() != DType::Int8 || b.rank() != 2) ctx.fail("B must be int8 [K, N], got ", b.describe());
  const int64_t K = a.shape().back(), N = b.shape()[1];
  if (b.shape()[0] != K) ctx.fail("A ", a.describe(), " has K = ", K, " but B is ", b.describe());
  const std::vector<int64_t> lead(a.shape().begin(), a.shape().end() - 1);
  const int64_t rows = shape_numel(lead);

  // Activation parameters: sa[m], za[m] and the quantized rows.
  std::vector<float> sa(static_cast<size_t>(rows));
  std::vector<int32_t> za(static_cast<size_t>(rows)), qa(static_cast<size_t>(rows * K));
  const float* pa = quantized_a ? nullptr : a.data<float>();
  std::vector<float> scaled_a;
  if (channel_scale) {
    if (channel_scale->dtype() != DType::Float32 || channel_scale->rank() != 1 || channel_scale->numel() != K)
      ctx.fail("a_channel_scale must be float32 [", K, "], got ", channel_scale->describe());
    scaled_a.resize(static_cast<size_t>(rows * K));
    for (int64_t i = 0; i < rows * K; ++i) scaled_a[i] = pa[i] * channel_scale->data<float>()[i % K];
    pa = scaled_a.data();
  }
  if (per_row_a) {  // quantized per row (LayerNormQuantize, dynamic_type)
    if (a.dtype() != DType::UInt8 || !a_scale || a_scale->dtype() != DType::Float32 || a_scale->shape() != lead ||
        a_zp->shape() != lead)
      ctx.fail("an int32 a_zero_point (per row) needs a uint8 A and float32 a_scale / int32 a_zero_point of shape ",
               shape_to_string(lead), "; got A ", a.describe(), ", a_scale ",
               a_scale ? a_scale->describe() : std::string("absent"), ", a_zero_point ", a_zp->describe());
    for (int64_t m = 0; m < rows; ++m) {
      sa[m] = a_scale->data<float>()[m];
      za[m] = a_zp->data<int32_t>()[m];
    }
    for (int64_t i = 0; i < rows * K; ++i) qa[i] = a.data<uint8_t>()[i];
  } else if (a_scale) {
    if (a_scale->dtype() != DType::Float32 || a_scale->numel() != 1 || a_scale->rank() > 1)
      ctx.fail("a_scale must be a float32 scalar, got ", a_scale->describe());
    if (node.has_attr("dynamic_type")) ctx.fail("dynamic_type applies only without a_scale");
    Range r{0, 255};
    int32_t z = 0;
    if (a_zp) {
      if ((a_zp->dtype() != DType::UInt8 && a_zp->dtype() != DType::Int8) || a_zp->numel() != 1 || a_zp->rank() > 1)
        ctx.fail("a_zero_point must be a uint8 or int8 scalar, got ", a_zp->describe());
      r = range_of(a_zp->dtype());
      z = int8_at(*a_zp, 0);
    }
    const float s = a_scale->data<float>()[0];
    std::fill(sa.begin(), sa.end(), s);
    std::fill(za.begin(), za.end(), z);
    for (int64_t i = 0; i < rows * K; ++i) qa[i] = quantized_a ? int8_at(a, i) : quantize_one(pa[i], s, z, r);
  } else {
    if (a_zp) ctx.fail("a_zero_point is given without a_scale");
    const bool int8 = dyn == "int8";
    const Range r = int8 ? Range{-128, 127} : Range{0, 255};
    for (int64_t m = 0; m < rows; ++m) {
      dynamic_row(pa + m * K, K, int8, sa[m], za[m]);
      for (int64_t k = 0; k < K; ++k) qa[m * K + k] = quantize_one(pa[m * K + k], sa[m], za[m], r);
    }
  }

  // Weight parameters: sb[n], zb[n].
  const bool per_column = b_scale.numel() != 1;
  if (b_scale.dtype() != DType::Float32 || (per_column && (b_scale.rank() != 1 || b_scale.numel() != N)) ||
      b_scale.rank() > 1)
    ctx.fail("b_scale must be float32 with 1 or N = ", N, " values, got ", b_scale.describe());
  if (b_zp && (b_zp->dtype() != DType::Int8 || b_zp->rank() > 1 || b_zp->numel() != b_scale.numel()))
    ctx.fail("b_zero_point must be int8 shaped like b_scale ", b_scale.describe(), ", got ", b_zp->describe());
  if (bias && (bias->dtype() != DType::Float32 || bias->rank() != 1 || bias->numel() != N))
    ctx.fail("bias must be float32 [", N, "], got ", bias->describe());
  std::vector<double> sb(static_cast<size_t>(N));
  std::vector<int32_t> zb(static_cast<size_t>(N), 0);
  for (int64_t n = 0; n < N; ++n) {
    sb[n] = b_scale.data<float>()[per_column ? n : 0];
    if (b_zp) zb[n] = b_zp->data<int8_t>()[per_column ? n : 0];
  }

  std::vector<int64_t> out_shape = lead;
  out_shape.push_back(N);
  Tensor y(DType::Float32, out_shape);
  float* py = y.mutable_data<float>();
  const int8_t* pb = b.data<int8_t>();
  std::vector<int64_t> acc(static_cast<size_t>(N));
  for (int64_t m = 0; m < rows; ++m) {
    std::fill(acc.begin(), acc.end(), 0);
    for (int64_t k = 0; k < K; ++k) {
      const int64_t av = qa[m * K + k] - za[m];
      for (int64_t n = 0; n < N; ++n) acc[n] += av * (pb[k * N + n] - zb[n]);
    }
    for (int64_t n = 0; n < N; ++n) {
      const double v = static_cast<double>(sa[m]) * sb[n] * static_cast<double>(acc[n]) +
                       (bias ? static_cast<double>(bias->data<float>()[n]) : 0.0);
      py[m * N + n] = static_cast<float>(v);
    }
  }
  if (!act.empty()) y = ref::gelu_epilogue(y, act == "gelu_tanh");
  if (output_scale) {
    if (output_scale->dtype() != DType::Float32 || output_scale->rank() > 1 ||
        (output_scale->numel() != 1 && output_scale->numel() != N))
      ctx.fail("output_scale must be float32 with 1 or N = ", N, " values, got ", output_scale->describe());
    const float* os = output_scale->data<float>();
    float* scaled = y.mutable_data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) scaled[i] *= os[output_scale->numel() == 1 ? 0 : i % N];
  }
  if (residual) {
    if (residual->dtype() != DType::Float32 || residual->shape() != y.shape())
      ctx.fail("residual must be float32 of the output's shape ", shape_to_string(y.shape()), ", got ",
               residual->describe());
    y = ref::run_onnx_kernel("Add", node, {&y, residual});
  }
  if (node.has_attr("norm_dynamic_type")) {
    // 6. The LayerNorm epilogue: LayerNormQuantize's per-row mode (below) on Y.
    const std::string ndyn = node.attr_string("norm_dynamic_type", "uint8");
    if (ndyn != "uint8" && ndyn != "int8")
      ctx.fail("norm_dynamic_type must be \"uint8\" or \"int8\", got \"", ndyn, "\"");
    if (node.has_attr("y_dynamic_type") || ctx.optional_input(10) || ctx.optional_input(11))
      ctx.fail("norm_dynamic_type excludes y_dynamic_type, y_scale and y_zero_point");
    const Tensor* g = ctx.optional_input(12);
    const Tensor* q_scale = ctx.optional_input(14);
    if (!g) ctx.fail("norm_dynamic_type needs norm_scale (input 12)");
    if (ctx.optional_input(15) && !q_scale) ctx.fail("norm_q_bias is given without norm_q_scale");
    for (const Tensor* p : {g, ctx.optional_input(13), q_scale, ctx.optional_input(15)})
      if (p && (p->dtype() != DType::Float32 || p->rank() != 1 || p->numel() != N))
        ctx.fail("norm_scale, norm_bias, norm_q_scale and norm_q_bias must be float32 [", N, "], got ", p->describe());
    const Tensor normalized = ref::run_onnx_kernel(
        "LayerNormalization", node, {&y, q_scale ? q_scale : g, q_scale ? ctx.optional_input(15) : ctx.optional_input(13)});
    set_per_row_outputs(ctx, 1, normalized, ndyn == "int8");
    if (ctx.output_wanted(4))
      ctx.set_output(4, ref::run_onnx_kernel("LayerNormalization", node, {&y, g, ctx.optional_input(13)}));
    ctx.set_output(0, std::move(y));
    return;
  }
  for (size_t i = 12; i < 16; ++i)
    if (ctx.optional_input(i)) ctx.fail("input ", i, " (a LayerNorm parameter) is given without norm_dynamic_type");
  if (node.has_attr("y_dynamic_type")) {
    const std::string ydyn = node.attr_string("y_dynamic_type", "uint8");
    if (ydyn != "uint8" && ydyn != "int8")
      ctx.fail("y_dynamic_type must be \"uint8\" or \"int8\", got \"", ydyn, "\"");
    if (ctx.optional_input(10) || ctx.optional_input(11)) ctx.fail("y_scale / y_zero_point are given with y_dynamic_type");
    return set_per_row_outputs(ctx, 0, y, ydyn == "int8");
  }
  if (const Tensor* y_scale = ctx.optional_input(10)) {
    const Tensor* y_zp = ctx.optional_input(11);
    if (y_scale->dtype() != DType::Float32 || y_scale->numel() != 1 || y_scale->rank() > 1)
      ctx.fail("y_scale must be a float32 scalar, got ", y_scale->describe());
    if (y_zp && ((y_zp->dtype() != DType::UInt8 && y_zp->dtype() != DType::Int8) || y_zp->numel() != 1 ||
                 y_zp->rank() > 1))
      ctx.fail("y_zero_point must be a uint8 or int8 scalar, got ", y_zp->describe());
    y = ref::run_onnx_kernel("QuantizeLinear", node, {&y, y_scale, y_zp});
  } else if (ctx.optional_input(11)) {
    ctx.fail("y_zero_point is given without y_scale");
  }
  ctx.set_output(0, std::move(y));
}

// LayerNormQuantize with dynamic_type: each normalized row quantized with the parameters a
// dynamic QMatMul computes for it; int8 is stored as uint8 with zero point 128.
void layer_norm_quantize_per_row(KernelContext& ctx, const Tensor& x, const Tensor* g, const Tensor* b) {
  const std::string dyn = ctx.node().attr_string("dynamic_type", "uint8");
  if (dyn != "uint8" && dyn != "int8") ctx.fail("dynamic_type must be \"uint8\" or \"int8\", got \"", dyn, "\"");
  if (ctx.optional_input(3) || ctx.optional_input(4)) ctx.fail("y_scale / y_zero_point are given with dynamic_type");
  const Tensor normalized = ref::run_onnx_kernel("LayerNormalization", ctx.node(), {&x, g, b});
  set_per_row_outputs(ctx, 0, normalized, dyn == "int8");
  if (ctx.output_wanted(3))
    ctx.set_output(3, ref::run_onnx_kernel("LayerNormalization", ctx.node(),
                                           {&x, &ctx.input(1), ctx.optional_input(2)}));
}

// octet.LayerNormQuantize: the ai.onnx LayerNormalization reference (last axis) with the
// quantized branch's parameters, then the QuantizeLinear reference; Y from the
// LayerNormalization reference with scale and bias.
void layer_norm_quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::Float32 || x.rank() < 1) ctx.fail("X must be float32 of rank >= 1, got ", x.describe());
  const Tensor* q_scale = ctx.optional_input(5);
  if (ctx.optional_input(6) && !q_scale) ctx.fail("q_bias is given without q_scale");
  const Tensor* g = q_scale ? q_scale : &ctx.input(1);
  const Tensor* b = q_scale ? ctx.optional_input(6) : ctx.optional_input(2);
  for (const Tensor* p : {&ctx.input(1), ctx.optional_input(2), q_scale, ctx.optional_input(6)})
    if (p && (p->dtype() != DType::Float32 || p->rank() != 1 || p->numel() != x.shape().back()))
      ctx.fail("scale, bias, q_scale and q_bias must be float32 [", x.shape().back(), "], got ", p->describe());
  if (ctx.node().has_attr("dynamic_type")) return layer_norm_quantize_per_row(ctx, x, g, b);
  const Tensor* zp = ctx.optional_input(4);
  if (ctx.input(3).dtype() != DType::Float32 || ctx.input(3).numel() != 1 || ctx.input(3).rank() > 1)
    ctx.fail("y_scale must be a float32 scalar, got ", ctx.input(3).describe());
  if (zp && ((zp->dtype() != DType::UInt8 && zp->dtype() != DType::Int8) || zp->numel() != 1 || zp->rank() > 1))
    ctx.fail("y_zero_point must be a uint8 or int8 scalar, got ", zp->describe());
  const Tensor normalized = ref::run_onnx_kernel("LayerNormalization", ctx.node(), {&x, g, b});
  ctx.set_output(0, ref::run_onnx_kernel("QuantizeLinear", ctx.node(),
                                         {&normalized, &ctx.input(3), zp}));
  if (ctx.output_wanted(1))
    ctx.set_output(1, ref::run_onnx_kernel("LayerNormalization", ctx.node(),
                                           {&x, &ctx.input(1), ctx.optional_input(2)}));
}

}  // namespace

void register_ref_octet_quant(KernelRegistry& r) {
  r.add("octet", "QMatMul", qmatmul_kernel);
  r.add("octet", "LayerNormQuantize", layer_norm_quantize_kernel);
}

}  // namespace octet
