// Reference kernels: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear. The integer
// matmuls and convolutions live in ref_quant_matmul.cpp.
//
// QuantizeLinear: y = saturate(round_half_even(x / scale) + zero_point). The division
// happens in the `precision` attribute's type, else in the scale's type (so a float16
// scale rounds x / scale to float16 before rounding to an integer, as the spec and the
// ONNX reference do); a float8e8m0 scale (a power of two, opset 24) divides in float32.
// NaN quantizes to the zero point (ONNX leaves it undefined).
// DequantizeLinear: y = (x - zero_point) * scale, computed in float32 and rounded once to
// the output type (output_dtype, else the scale's type; a float8e8m0 scale needs
// output_dtype, since the output must be float32, float16 or bfloat16).
#include <algorithm>
#include <cmath>

#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_quant.h"

namespace octet {
namespace ref {
namespace {

bool is_quant_output_type(DType t) {
  int64_t lo, hi;
  return quant_int_range(t, lo, hi) || minifloat_format(t).has_value();
}

// x / scale in the precision type `p`: float32 arithmetic, rounded to float16/bfloat16
// when that is the precision (float64 precision divides in double).
double divide_in(DType p, double x, double scale) {
  switch (p) {
    case DType::Float64: return x / scale;
    case DType::Float16: return half_to_float(float_to_half(static_cast<float>(x) / static_cast<float>(scale)));
    case DType::BFloat16:
      return bfloat16_to_float(float_to_bfloat16(static_cast<float>(x) / static_cast<float>(scale)));
    default: return static_cast<float>(x) / static_cast<float>(scale);
  }
}

// Stores element i of a quantized output: 2 or 4 packed bits, a byte or a 16-bit integer.
void write_quantized(Tensor& y, int64_t i, int64_t value) {
  uint8_t* raw = y.mutable_raw();
  switch (const int bits = dtype_bits(y.dtype())) {
    case 2: case 4: set_packed(raw, i, bits, static_cast<uint8_t>(value & ((1 << bits) - 1))); break;
    case 16: {
      const uint16_t v = static_cast<uint16_t>(value);
      std::memcpy(raw + 2 * i, &v, 2);
      break;
    }
    default: raw[i] = static_cast<uint8_t>(value); break;
  }
}

// Zero point and scale must have the same shape; a one-element zero point also goes with
// a scalar scale (the ONNX backend tests pair shape [1] with shape []).
bool same_granularity(const Tensor& zp, const Tensor& scale) {
  return zp.shape() == scale.shape() || (zp.numel() == 1 && scale.numel() == 1);
}

void quantize_linear_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.optional_input(2);
  const Node& node = ctx.node();
  using XTypes = Types<float, Float16, BFloat16, int32_t>;
  dispatch<XTypes>(ctx, x.dtype(), "x", [](auto) {});
  if (scale.dtype() != DType::Float8E8M0) dispatch<XTypes>(ctx, scale.dtype(), "y_scale", [](auto) {});

  // Output type: the zero point's, else output_dtype (opset 21), else uint8.
  DType out_type = DType::UInt8;
  const int64_t out_attr = node.attr_int("output_dtype", 0);
  if (out_attr != 0) {
    auto t = dtype_from_onnx(static_cast<int32_t>(out_attr));
    if (!t) ctx.fail("output_dtype ", out_attr, " is not a data type octet knows");
    out_type = *t;
  }
  if (zp) {
    if (out_attr != 0 && zp->dtype() != out_type)
      ctx.fail("output_dtype ", dtype_name(out_type), " differs from y_zero_point's ", dtype_name(zp->dtype()));
    out_type = zp->dtype();
    if (!same_granularity(*zp, scale))
      ctx.fail("y_zero_point shape ", shape_to_string(zp->shape()), " differs from y_scale shape ",
               shape_to_string(scale.shape()));
  }
  if (!is_quant_output_type(out_type))
    ctx.fail("cannot quantize to ", dtype_name(out_type),
             " (supported: uint8, int8, uint16, int16, uint4, int4, uint2, int2, float8 types, float4e2m1)");

  DType precision = scale.dtype();
  if (scale.dtype() == DType::Int32) precision = DType::Float64;
  if (scale.dtype() == DType::Float8E8M0) precision = DType::Float32;
  if (const int64_t p = node.attr_int("precision", 0)) {
    auto t = dtype_from_onnx(static_cast<int32_t>(p));
    if (!t || !Dispatch<FloatTypes>::contains(*t)) ctx.fail("precision ", p, " is not a float type");
    precision = *t;
  }
  const QuantGranularity gran(ctx, x.shape(), scale, node.attr_int("axis", 1), node.attr_int("block_size", 0));
  const bool saturate = node.attr_int("saturate", 1) != 0;
  Tensor& y = ctx.allocate_output(0, out_type, x.shape());
  int64_t lo = 0, hi = 0;
  const bool integer_out = quant_int_range(out_type, lo, hi);
  const auto fmt = minifloat_format(out_type);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t s = gran.index(i);
    const double q = divide_in(precision, element_as_double(x, i), element_as_double(scale, s));
    const double z = zp ? element_as_double(*zp, s) : 0.0;
    if (integer_out) {
      const double r = std::isnan(q) ? z : std::clamp(std::nearbyint(q) + z, double(lo), double(hi));
      write_quantized(y, i, static_cast<int64_t>(r));
    } else {
      write_quantized(y, i, fmt->encode(q + z, saturate));
    }
  }
}

void dequantize_linear_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* zp = ctx.optional_input(2);
  const Node& node = ctx.node();
  int64_t lo, hi;
  if (!quant_int_range(x.dtype(), lo, hi) && x.dtype() != DType::Int32 && !minifloat_format(x.dtype()))
    ctx.fail("x has dtype ", dtype_name(x.dtype()),
             ", which DequantizeLinear does not support (supported: int8, uint8, int16, uint16, "
             "int32, int4, uint4, int2, uint2, float8 types, float4e2m1)");
  if (zp) {
    if (zp->dtype() != x.dtype())
      ctx.fail("x_zero_point is ", dtype_name(zp->dtype()), " but x is ", dtype_name(x.dtype()));
    if (!same_granularity(*zp, scale))
      ctx.fail("x_zero_point shape ", shape_to_string(zp->shape()), " differs from x_scale shape ",
               shape_to_string(scale.shape()));
  }
  DType out_type = scale.dtype();
  if (const int64_t o = node.attr_int("output_dtype", 0)) {
    auto t = dtype_from_onnx(static_cast<int32_t>(o));
    if (!t) ctx.fail("output_dtype ", o, " is not a data type octet knows");
    out_type = *t;
  } else if (scale.dtype() == DType::Float8E8M0) {
    ctx.fail("x_scale is float8e8m0, so output_dtype must say the output type (float32, float16 or bfloat16)");
  }
  if (scale.dtype() != DType::Float8E8M0)
    dispatch<Types<float, Float16, BFloat16>>(ctx, scale.dtype(), "x_scale", [](auto) {});
  const QuantGranularity gran(ctx, x.shape(), scale, node.attr_int("axis", 1), node.attr_int("block_size", 0));
  Tensor& y = ctx.allocate_output(0, out_type, x.shape());
  dispatch<Types<float, Float16, BFloat16>>(ctx, out_type, "output", [&](auto tag) {
    using S = typename decltype(tag)::type;
    S* py = data_as<S>(y);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t s = gran.index(i);
      const double centered = element_as_double(x, i) - (zp ? element_as_double(*zp, s) : 0.0);
      const float v = static_cast<float>(centered) * static_cast<float>(element_as_double(scale, s));
      py[i] = store<S>(v);
    }
  });
}

// DynamicQuantizeLinear (uint8), following the ONNX reference implementation exactly:
//   max = max(0, max(x)), min = min(0, min(x))            (float32)
//   scale = (max == min ? 1 : max - min) / 255             (float32; all-zero x gives 1/255)
//   zero_point = round_half_even(clamp(0 - min / scale, 0, 255))
//   y = clamp(round_half_even(x / scale) + zero_point, 0, 255)
// The spec's formula divides by zero for an all-zero input; onnxruntime uses scale 1 there
// (y and the zero point are 0 either way).
void dynamic_quantize_linear_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<Types<float>>(ctx, x.dtype(), "x", [](auto) {});
  const float* px = x.data<float>();
  float mx = 0, mn = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(px[i])) continue;
    mx = std::max(mx, px[i]);
    mn = std::min(mn, px[i]);
  }
  const float scale = (mx == mn ? 1.0f : mx - mn) / 255.0f;
  const float zp = std::nearbyint(std::clamp(0.0f - mn / scale, 0.0f, 255.0f));
  Tensor& y = ctx.allocate_output(0, DType::UInt8, x.shape());
  uint8_t* py = y.mutable_data<uint8_t>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float q = px[i] / scale;
    py[i] = std::isnan(q) ? static_cast<uint8_t>(zp)
                          : static_cast<uint8_t>(std::clamp(std::nearbyint(q) + zp, 0.0f, 255.0f));
  }
  if (ctx.num_outputs() > 1 && ctx.output_wanted(1))
    ctx.allocate_output(1, DType::Float32, {}).mutable_data<float>()[0] = scale;
  if (ctx.num_outputs() > 2 && ctx.output_wanted(2))
    ctx.allocate_output(2, DType::UInt8, {}).mutable_data<uint8_t>()[0] = static_cast<uint8_t>(zp);
}

}  // namespace
}  // namespace ref

void register_ref_quant(KernelRegistry& r) {
  r.add("", "QuantizeLinear", ref::quantize_linear_kernel);
  r.add("", "DequantizeLinear", ref::dequantize_linear_kernel);
  r.add("", "DynamicQuantizeLinear", ref::dynamic_quantize_linear_kernel);
  ref::register_quant_matmul(r);
}

}  // namespace octet
