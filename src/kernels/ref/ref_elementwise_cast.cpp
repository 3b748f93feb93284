// Reference kernels: Cast and CastLike between all numeric types, bool, the 8-bit floats,
// float4e2m1, float8e8m0 and the packed 4- and 2-bit integers. String casts are not
// supported.
//
// Rules (ONNX Cast spec, and its backend tests where the spec leaves room):
// - float -> float rounds to nearest even, once (double -> float16 does not round twice).
// - float -> integer truncates toward zero; out of range keeps the low bits (see
//   float_to_int), which is what the backend tests expect for int4 (-9.0 -> 7) and int2
//   (-3.0 -> 1).
// - integer -> integer keeps the low bits (200 int16 -> -56 int8), also for the 4- and
//   2-bit integers.
// - anything -> bool is "!= 0" (NaN is true); bool -> number is 0/1.
// - to float8: round to nearest even, then saturate to +-max unless saturate=0 (opset 19).
// - to float8e8m0: round to a power of two as `round_mode` says (opset 24), saturating
//   unless saturate=0; see e8m0_encode.
#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_elementwise.h"
#include "kernels/ref/ref_math_lowbit.h"

namespace octet::ref {
namespace {

template <typename D, typename S>
D convert(S s) {
  const compute_t<S> v = load(s);
  if constexpr (std::is_same_v<D, bool>) {
    return v != compute_t<S>(0);
  } else if constexpr (is_float_storage_v<D>) {
    if constexpr (std::is_integral_v<compute_t<S>> && std::is_same_v<D, float>)
      return static_cast<float>(v);  // one rounding, also for int64
    else
      return store_double<D>(static_cast<double>(v));
  } else if constexpr (std::is_integral_v<compute_t<S>>) {
    return static_cast<D>(v);  // bool/integer -> integer: low bits (C++20 modular)
  } else {
    return float_to_int<D>(v);
  }
}

// Cast between two "plain" dtypes (numeric or bool).
Tensor cast_plain(const KernelContext& ctx, const Tensor& x, DType to) {
  Tensor out(to, x.shape());
  dispatch<NumericBoolTypes>(ctx, x.dtype(), "input", [&](auto src_tag) {
    using S = typename decltype(src_tag)::type;
    dispatch<NumericBoolTypes>(ctx, to, "target type 'to'", [&](auto dst_tag) {
      using D = typename decltype(dst_tag)::type;
      const S* in = data_as<S>(x);
      D* o = data_as<D>(out);
      for (int64_t i = 0; i < x.numel(); ++i) o[i] = convert<D>(in[i]);
    });
  });
  return out;
}

// Low-bit source -> a plain tensor holding the same values exactly: float32 for the small
// floats and float8e8m0 (2^-127 is a float32 subnormal), int8/uint8 for the packed
// integers.
Tensor widen(const Tensor& x) {
  const uint8_t* in = x.raw();
  const int64_t n = x.numel();
  if (auto fmt = minifloat_format(x.dtype())) {
    Tensor out(DType::Float32, x.shape());
    float* o = out.mutable_data<float>();
    const bool packed = dtype_bits(x.dtype()) == 4;
    for (int64_t i = 0; i < n; ++i)
      o[i] = static_cast<float>(fmt->decode(packed ? get_nibble(in, i) : in[i]));
    return out;
  }
  if (x.dtype() == DType::Float8E8M0) {
    Tensor out(DType::Float32, x.shape());
    float* o = out.mutable_data<float>();
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<float>(e8m0_decode(in[i]));
    return out;
  }
  OCTET_ASSERT(is_packed_int(x.dtype()), "widen ", x.describe());
  if (dtype_is_signed(x.dtype())) {
    Tensor out(DType::Int8, x.shape());
    int8_t* o = out.mutable_data<int8_t>();
    for (int64_t i = 0; i < n; ++i) o[i] = packed_int_value(x.dtype(), in, i);
    return out;
  }
  Tensor out(DType::UInt8, x.shape());
  uint8_t* o = out.mutable_data<uint8_t>();
  for (int64_t i = 0; i < n; ++i) o[i] = static_cast<uint8_t>(packed_int_value(x.dtype(), in, i));
  return out;
}

bool is_lowbit(DType t) {
  return minifloat_format(t).has_value() || t == DType::Float8E8M0 || is_packed_int(t);
}

struct CastOptions {
  bool saturate = true;
  E8M0Rounding rounding = E8M0Rounding::Up;
};

Tensor cast_tensor(const KernelContext& ctx, const Tensor& x, DType to, const CastOptions& opt) {
  if (x.dtype() == DType::String || to == DType::String)
    ctx.fail("casting ", dtype_name(x.dtype()), " to ", dtype_name(to),
             " is not supported (string casts are not implemented)");
  if (is_lowbit(x.dtype())) return cast_tensor(ctx, widen(x), to, opt);
  if (auto fmt = minifloat_format(to)) {
    const Tensor wide = cast_plain(ctx, x, DType::Float64);
    const double* in = wide.data<double>();
    Tensor out(to, x.shape());
    uint8_t* o = out.mutable_raw();
    const bool packed = dtype_bits(to) == 4;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const uint8_t bits = fmt->encode(in[i], opt.saturate);
      if (packed) set_nibble(o, i, bits);
      else o[i] = bits;
    }
    return out;
  }
  if (to == DType::Float8E8M0) {
    const Tensor wide = cast_plain(ctx, x, DType::Float64);
    const double* in = wide.data<double>();
    Tensor out(to, x.shape());
    uint8_t* o = out.mutable_raw();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = e8m0_encode(in[i], opt.saturate, opt.rounding);
    return out;
  }
  if (is_packed_int(to)) {
    const Tensor wide = cast_plain(ctx, x, DType::Int64);
    const int64_t* in = wide.data<int64_t>();
    Tensor out(to, x.shape());
    uint8_t* o = out.mutable_raw();
    const int bits = dtype_bits(to);
    for (int64_t i = 0; i < x.numel(); ++i)
      set_packed(o, i, bits, static_cast<uint8_t>(in[i] & ((1 << bits) - 1)));  // low bits
    return out;
  }
  return cast_plain(ctx, x, to);
}

void cast_to(KernelContext& ctx, DType to) {
  const Tensor& x = ctx.input(0);
  CastOptions opt;
  opt.saturate = ctx.node().attr_int("saturate", 1) != 0;
  const std::string mode = ctx.node().attr_string("round_mode", "up");
  auto rounding = e8m0_rounding_from_name(mode);
  if (!rounding) ctx.fail("round_mode is '", mode, "'; expected 'up', 'down' or 'nearest'");
  opt.rounding = *rounding;
  if (x.dtype() == to) {
    ctx.set_output(0, x);
    return;
  }
  ctx.set_output(0, cast_tensor(ctx, x, to, opt));
}

void cast_kernel(KernelContext& ctx) {
  if (!ctx.node().has_attr("to")) ctx.fail("attribute 'to' is required");
  const int64_t code = ctx.node().attr_int("to", 0);
  auto to = dtype_from_onnx(static_cast<int32_t>(code));
  if (!to) ctx.fail("'to' is ", code, ", which is not a data type octet knows");
  cast_to(ctx, *to);
}

void cast_like_kernel(KernelContext& ctx) { cast_to(ctx, ctx.input(1).dtype()); }

}  // namespace

void register_elementwise_cast(KernelRegistry& r) {
  r.add("", "Cast", cast_kernel);
  r.add("", "CastLike", cast_like_kernel);
}

}  // namespace octet::ref
