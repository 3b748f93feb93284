// Element-type plumbing shared by the math reference kernels (elementwise, reductions,
// normalization, quantization): storage types for float16/bfloat16, load/store between
// storage and compute types, and a compile-time dispatch over a list of dtypes.
//
// Why storage structs: float16 and bfloat16 are both 16-bit patterns, so uint16_t cannot
// tell them apart (and uint16_t is a real ONNX dtype). Float16/BFloat16 wrap the bits; every
// kernel loads them to float32, computes, and stores back with round-to-nearest-even.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "core/dtype.h"
#include "core/tensor.h"
#include "kernels/kernel.h"

namespace octet::ref {

struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// double -> float rounding to odd: the float that truncates `d`, with its last bit set when
// anything was dropped. Rounding that float again to a narrower type (half, bfloat16) then
// gives the same result as rounding `d` directly, avoiding double-rounding errors.
inline float double_to_float_round_odd(double d) {
  if (!std::isfinite(d)) return static_cast<float>(d);
  float f = static_cast<float>(d);  // round to nearest
  if (static_cast<double>(f) == d || std::isinf(f)) return f;
  // Step back toward zero when rounding went away from zero, so `f` is the truncation.
  if (std::fabs(static_cast<double>(f)) > std::fabs(d))
    f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1u;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Storage type S -> compute type, dtype, load and store.
template <typename S>
struct Elem {
  static_assert(std::is_arithmetic_v<S>, "unknown storage type");
  using Compute = S;
  static constexpr DType dtype = dtype_of<S>();
  static Compute load(S v) { return v; }
  static S store(Compute v) { return v; }
};
template <>
struct Elem<Float16> {
  using Compute = float;
  static constexpr DType dtype = DType::Float16;
  static float load(Float16 v) { return half_to_float(v.bits); }
  static Float16 store(float v) { return Float16{float_to_half(v)}; }
};
template <>
struct Elem<BFloat16> {
  using Compute = float;
  static constexpr DType dtype = DType::BFloat16;
  static float load(BFloat16 v) { return bfloat16_to_float(v.bits); }
  static BFloat16 store(float v) { return BFloat16{float_to_bfloat16(v)}; }
};

template <typename S>
using compute_t = typename Elem<S>::Compute;

template <typename S>
constexpr bool is_float_storage_v =
    std::is_floating_point_v<S> || std::is_same_v<S, Float16> || std::is_same_v<S, BFloat16>;
template <typename S>
constexpr bool is_int_storage_v = std::is_integral_v<S> && !std::is_same_v<S, bool>;

template <typename S>
inline compute_t<S> load(S v) { return Elem<S>::load(v); }
template <typename S>
inline S store(compute_t<S> v) { return Elem<S>::store(v); }

// Stores a double into any float storage type with a single rounding.
template <typename S>
inline S store_double(double v) {
  if constexpr (std::is_same_v<S, double>) return v;
  else if constexpr (std::is_same_v<S, float>) return static_cast<float>(v);
  else return Elem<S>::store(double_to_float_round_odd(v));
}

template <typename S>
const S* data_as(const Tensor& t) {
  OCTET_ASSERT(t.dtype() == Elem<S>::dtype, "tensor ", t.describe(), " read as ",
               dtype_name(Elem<S>::dtype));
  return reinterpret_cast<const S*>(t.raw());
}
template <typename S>
S* data_as(Tensor& t) {
  OCTET_ASSERT(t.dtype() == Elem<S>::dtype, "tensor ", t.describe(), " written as ",
               dtype_name(Elem<S>::dtype));
  return reinterpret_cast<S*>(t.mutable_raw());
}

// ---- type lists and dispatch ----

template <typename... Ts>
struct Types {};
template <typename A, typename B>
struct ConcatTypes;
template <typename... A, typename... B>
struct ConcatTypes<Types<A...>, Types<B...>> {
  using type = Types<A..., B...>;
};

using FloatTypes = Types<float, Float16, BFloat16, double>;
using SignedIntTypes = Types<int8_t, int16_t, int32_t, int64_t>;
using UnsignedIntTypes = Types<uint8_t, uint16_t, uint32_t, uint64_t>;
using IntTypes = ConcatTypes<SignedIntTypes, UnsignedIntTypes>::type;
using SignedTypes = ConcatTypes<FloatTypes, SignedIntTypes>::type;  // floats + signed ints
using NumericTypes = ConcatTypes<FloatTypes, IntTypes>::type;
using NumericBoolTypes = ConcatTypes<NumericTypes, Types<bool>>::type;

template <typename T>
struct Tag {
  using type = T;
};

template <typename List>
struct Dispatch;
template <typename... Ts>
struct Dispatch<Types<Ts...>> {
  // Calls f(Tag<S>{}) for the S whose dtype is `t`; false when `t` is not in the list.
  template <typename F>
  static bool run(DType t, F&& f) {
    return ((t == Elem<Ts>::dtype ? (f(Tag<Ts>{}), true) : false) || ...);
  }
  static bool contains(DType t) { return ((t == Elem<Ts>::dtype) || ...); }
  static std::string names() {
    std::string out;
    ((out += (out.empty() ? "" : ", ") + dtype_name(Elem<Ts>::dtype)), ...);
    return out;
  }
};

// Dispatches on `t`; an unsupported dtype is an error naming the node, the operand and
// the dtypes this op accepts.
template <typename List, typename F>
void dispatch(const KernelContext& ctx, DType t, const char* operand, F&& f) {
  if (!Dispatch<List>::run(t, f))
    ctx.fail(operand, " has dtype ", dtype_name(t), ", which ", ctx.node().op_type(),
             " does not support (supported: ", Dispatch<List>::names(), ")");
}

// ---- integer helpers ----

// Wrapping arithmetic for integers (ONNX integer overflow wraps, as numpy does); plain
// C++ signed overflow would be undefined behaviour.
template <typename T>
inline T wrap_add(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
}
template <typename T>
inline T wrap_sub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
}
template <typename T>
inline T wrap_mul(T a, T b) {
  using U = std::make_unsigned_t<T>;
  if constexpr (sizeof(T) < sizeof(int)) {
    return static_cast<T>(static_cast<unsigned>(a) * static_cast<unsigned>(b));
  } else {
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  }
}

// Float -> integer conversion: truncation toward zero, then the low bits of the result
// (two's complement), which is what numpy's astype gives for values within int64 range and
// what the ONNX backend tests expect for int4 (e.g. -9.0 -> int4 7). ONNX leaves values
// out of the target's range undefined; octet's choice is the above, with NaN -> 0 and
// values beyond the 64-bit range saturated, so the oracle never relies on undefined
// behaviour.
template <typename I, typename F>
inline I float_to_int(F v) {
  const double t = std::trunc(static_cast<double>(v));
  if (std::isnan(t)) return 0;
  if (t >= 18446744073709551616.0) return static_cast<I>(std::numeric_limits<uint64_t>::max());
  if (t >= 9223372036854775808.0) return static_cast<I>(static_cast<uint64_t>(t));
  if (t <= -9223372036854775808.0) return static_cast<I>(std::numeric_limits<int64_t>::min());
  return static_cast<I>(static_cast<int64_t>(t));
}

// Saturating conversion of a 64-bit integer to the range [lo, hi].
inline int64_t clamp_int(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : (v > hi ? hi : v); }

}  // namespace octet::ref
