// QuantizeLinear, DequantizeLinear (float32 <-> uint8/int8, per tensor) and
// DynamicQuantizeLinear on the vectorized int8 row helpers (quant_ops.h), split into
// chunks over the session's threads when the tensor is large.
//
// Results are bit-identical to ref_quant.cpp: x / scale as a float32 division, ties to
// even, saturation, NaN to the zero point; (x - zp) * scale in float32; the dynamic range,
// scale and zero point formed exactly as the reference forms them. Per-axis and blocked
// scales, other types, `precision` and anything unexpected at run time go to the
// reference kernel (its errors included).
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "kernels/cpu/quant_ops.h"
#include "kernels/cpu/simd_kernels.h"

namespace octet::cpu {
namespace {

constexpr int64_t kChunk = 16 * 1024;

void fall_back(KernelContext& ctx) {
  count_int8_reference_run();
  run_reference(ctx);
}

// fn(begin, end) over element ranges of at most kChunk, on the session's threads.
template <class Fn>
void for_chunks(const KernelContext& ctx, int64_t n, Fn&& fn) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  parallel_ranges(ctx, chunks, n, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) fn(c, c * kChunk, std::min(n, (c + 1) * kChunk));
  });
}

bool is_8bit(DType t) { return t == DType::UInt8 || t == DType::Int8; }

// One value of a one-element uint8/int8 tensor.
int32_t int8_value(const Tensor& t) {
  return t.dtype() == DType::Int8 ? t.data<int8_t>()[0] : t.data<uint8_t>()[0];
}

// The quantized type a QuantizeLinear node produces, when it is uint8 or int8.
std::optional<DType> quantize_output_type(const Node& node) {
  DType out = DType::UInt8;
  const Value* zp = node.input(2);
  if (const int64_t code = node.attr_int("output_dtype", 0)) {
    auto t = dtype_from_onnx(static_cast<int32_t>(code));
    if (!t || (zp && zp->type.dtype != *t)) return std::nullopt;  // the reference reports a conflict
    out = *t;
  }
  if (zp) out = zp->type.dtype;
  return is_8bit(out) ? std::optional<DType>(out) : std::nullopt;
}

bool prepare_quantize(const Node& node, std::unique_ptr<KernelState>&) {
  if (!node.input(0) || node.input(0)->type.dtype != DType::Float32) return false;
  if (!node.input(1) || node.input(1)->type.dtype != DType::Float32) return false;
  if (node.attr_int("block_size", 0) != 0 || node.has_attr("precision")) return false;
  return quantize_output_type(node).has_value();
}

void quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.optional_input(2);
  const auto out_type = quantize_output_type(ctx.node());
  if (x.dtype() != DType::Float32 || scale.dtype() != DType::Float32 || scale.numel() != 1 || !out_type ||
      (zp && (zp->numel() != 1 || zp->dtype() != *out_type)))
    return fall_back(ctx);  // per axis, or not what inference promised
  const float s = scale.data<float>()[0];
  const int32_t z = zp ? int8_value(*zp) : 0;
  const int32_t lo = *out_type == DType::Int8 ? -128 : 0, hi = *out_type == DType::Int8 ? 127 : 255;
  Tensor& y = ctx.allocate_output_uninitialized(0, *out_type, x.shape());
  const float* px = x.data<float>();
  uint8_t* py = y.mutable_raw();
  const QuantTable& q = quant_ops();
  for_chunks(ctx, x.numel(), [&](int64_t, int64_t b, int64_t e) { q.quantize(px + b, e - b, s, z, lo, hi, py + b); });
}

bool prepare_dequantize(const Node& node, std::unique_ptr<KernelState>&) {
  if (!node.input(0) || !is_8bit(node.input(0)->type.dtype)) return false;
  if (!node.input(1) || node.input(1)->type.dtype != DType::Float32) return false;
  if (node.attr_int("block_size", 0) != 0) return false;
  const int64_t out = node.attr_int("output_dtype", 0);
  return out == 0 || dtype_from_onnx(static_cast<int32_t>(out)) == DType::Float32;
}

// Per-axis DequantizeLinear (a weight quantized per output channel): one scale and zero
// point per index of `axis`, the elements as outer x channels x inner. The quantizer's
// Q/DQ graphs dequantize every weight this way on every run (its layer SQNR report ran
// ~20 s in the scalar reference kernel on SmolLM2-135M). (x - zp) is an exact float and
// the product is rounded once, as the reference's double product rounded to float is.
void dequantize_per_axis(KernelContext& ctx, int64_t axis) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.optional_input(2);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[d];
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.shape()[d];
  const int64_t channels = x.shape()[axis];
  std::vector<float> s(scale.data<float>(), scale.data<float>() + channels), z(static_cast<size_t>(channels), 0.0f);
  if (zp)
    for (int64_t c = 0; c < channels; ++c)
      z[c] = static_cast<float>(zp->dtype() == DType::Int8 ? reinterpret_cast<const int8_t*>(zp->raw())[c] : zp->raw()[c]);
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Float32, x.shape());
  float* py = y.mutable_data<float>();
  const bool is_signed = x.dtype() == DType::Int8;
  const uint8_t* xu = x.raw();
  const int8_t* xs = reinterpret_cast<const int8_t*>(xu);  // read as int8 when is_signed
  if (inner == 1) {  // the last axis: rows of `channels` values, each with every scale
    parallel_ranges(ctx, outer, x.numel(), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const int64_t off = o * channels;
        if (is_signed)
          for (int64_t c = 0; c < channels; ++c) py[off + c] = (static_cast<float>(xs[off + c]) - z[c]) * s[c];
        else
          for (int64_t c = 0; c < channels; ++c) py[off + c] = (static_cast<float>(xu[off + c]) - z[c]) * s[c];
      }
    });
    return;
  }
  // Rows of `inner` values sharing one channel, spread over the session's threads.
  parallel_ranges(ctx, outer * channels, x.numel(), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const float sc = s[r % channels], zc = z[r % channels];
      const int64_t off = r * inner;
      if (is_signed)
        for (int64_t i = 0; i < inner; ++i) py[off + i] = (static_cast<float>(xs[off + i]) - zc) * sc;
      else
        for (int64_t i = 0; i < inner; ++i) py[off + i] = (static_cast<float>(xu[off + i]) - zc) * sc;
    }
  });
}

void dequantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.optional_input(2);
  if (is_8bit(x.dtype()) && scale.dtype() == DType::Float32 && scale.rank() == 1 && scale.numel() > 1 &&
      x.rank() >= 1 && (!zp || (zp->dtype() == x.dtype() && zp->shape() == scale.shape()))) {
    int64_t axis = ctx.node().attr_int("axis", 1);
    if (axis < 0) axis += x.rank();
    if (axis >= 0 && axis < x.rank() && x.shape()[axis] == scale.numel()) return dequantize_per_axis(ctx, axis);
    return fall_back(ctx);  // the reference names the problem
  }
  if (!is_8bit(x.dtype()) || scale.dtype() != DType::Float32 || scale.numel() != 1 ||
      (zp && (zp->numel() != 1 || zp->dtype() != x.dtype())))
    return fall_back(ctx);
  const float s = scale.data<float>()[0];
  const int32_t z = zp ? int8_value(*zp) : 0;
  const bool is_signed = x.dtype() == DType::Int8;
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Float32, x.shape());
  const uint8_t* px = x.raw();
  float* py = y.mutable_data<float>();
  const QuantTable& q = quant_ops();
  for_chunks(ctx, x.numel(), [&](int64_t, int64_t b, int64_t e) { q.dequantize(px + b, e - b, is_signed, z, s, py + b); });
}

bool prepare_dynamic_quantize(const Node& node, std::unique_ptr<KernelState>&) {
  return node.input(0) && node.input(0)->type.dtype == DType::Float32;
}

void dynamic_quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::Float32) return fall_back(ctx);
  const int64_t n = x.numel();
  const float* px = x.data<float>();
  const QuantTable& q = quant_ops();
  // The range: per chunk in parallel, then combined (min/max are exact in any order).
  std::vector<float> lo(static_cast<size_t>((n + kChunk - 1) / kChunk)), hi(lo.size());
  for_chunks(ctx, n, [&](int64_t c, int64_t b, int64_t e) { q.min_max(px + b, e - b, &lo[c], &hi[c]); });
  float mn = 0, mx = 0;
  for (size_t c = 0; c < lo.size(); ++c) {
    mn = std::min(mn, lo[c]);
    mx = std::max(mx, hi[c]);
  }
  // As ref_quant.cpp: scale 1/255 for an all-zero input; the zero point rounds the
  // clamped -min / scale (NaN, from an infinite range, is 0 here; undefined in ONNX).
  const float scale = (mx == mn ? 1.0f : mx - mn) / 255.0f;
  const float zq = 0.0f - mn / scale;
  const int32_t zp = std::isnan(zq) ? 0 : static_cast<int32_t>(std::nearbyint(std::clamp(zq, 0.0f, 255.0f)));
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::UInt8, x.shape());
  uint8_t* py = y.mutable_raw();
  for_chunks(ctx, n, [&](int64_t, int64_t b, int64_t e) { q.quantize(px + b, e - b, scale, zp, 0, 255, py + b); });
  if (ctx.num_outputs() > 1 && ctx.output_wanted(1))
    ctx.allocate_output(1, DType::Float32, {}).mutable_data<float>()[0] = scale;
  if (ctx.num_outputs() > 2 && ctx.output_wanted(2))
    ctx.allocate_output(2, DType::UInt8, {}).mutable_data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

}  // namespace

void register_cpu_quantize(KernelRegistry& r) {
  r.add("", "QuantizeLinear", KernelDef{quantize_kernel, prepare_quantize});
  r.add("", "DequantizeLinear", KernelDef{dequantize_kernel, prepare_dequantize});
  r.add("", "DynamicQuantizeLinear", KernelDef{dynamic_quantize_kernel, prepare_dynamic_quantize});
}

}  // namespace octet::cpu
