// Low-bit element types the math reference kernels read and write: the 8-bit floats
// (float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz), float4e2m1, the
// exponent-only float8e8m0, and the packed 4- and 2-bit integers. Used by Cast,
// QuantizeLinear and DequantizeLinear.
//
// Sub-byte types pack 8 / bits elements per byte, the lowest bits holding the element
// with the lowest index (ONNX's layout; see get_packed in core/dtype.h).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "core/dtype.h"

namespace octet::ref {

// A small float format: 1 sign bit, `exp_bits`, `mant_bits`, exponent `bias`, and how it
// spends its special encodings.
struct MiniFloat {
  enum class Special {
    IEEE,  // inf = max exponent with zero mantissa, NaN = max exponent otherwise (E5M2)
    FN,    // no inf; NaN = all exponent and mantissa bits set (E4M3FN)
    FNUZ,  // no inf, no -0; NaN = sign bit alone, 0x80 (E4M3FNUZ, E5M2FNUZ)
    None,  // no inf, no NaN (E2M1)
  };
  int exp_bits;
  int mant_bits;
  int bias;
  Special special;

  int sign_shift() const { return exp_bits + mant_bits; }
  int max_exp_field() const { return (1 << exp_bits) - (special == Special::IEEE ? 2 : 1); }
  int max_mant_at_top() const { return (1 << mant_bits) - (special == Special::FN ? 2 : 1); }
  double max_value() const {
    return std::ldexp(1.0 + max_mant_at_top() / double(1 << mant_bits), max_exp_field() - bias);
  }
  uint8_t max_bits() const {
    return static_cast<uint8_t>((max_exp_field() << mant_bits) | max_mant_at_top());
  }
  uint8_t nan_bits(bool negative) const {
    switch (special) {
      case Special::FNUZ: return 0x80;
      case Special::None: return static_cast<uint8_t>(1 << sign_shift());  // -0, as ml_dtypes does
      // IEEE-style (E5M2): the quiet NaN, all-ones exponent with the top mantissa bit (0x7E).
      case Special::IEEE:
        return static_cast<uint8_t>((((1 << exp_bits) - 1) << mant_bits) | (1 << (mant_bits - 1)) |
                                    (negative << sign_shift()));
      default: return static_cast<uint8_t>(((1 << sign_shift()) - 1) | (negative << sign_shift()));
    }
  }

  double decode(uint8_t bits) const {
    const bool negative = (bits >> sign_shift()) & 1;
    const int e = (bits >> mant_bits) & ((1 << exp_bits) - 1);
    const int m = bits & ((1 << mant_bits) - 1);
    const int all_e = (1 << exp_bits) - 1, all_m = (1 << mant_bits) - 1;
    if (special == Special::FNUZ && bits == 0x80) return std::nan("");
    if (special == Special::FN && e == all_e && m == all_m) return negative ? -std::nan("") : std::nan("");
    if (special == Special::IEEE && e == all_e)
      return m ? std::nan("") : (negative ? -INFINITY : INFINITY);
    const double v = e == 0 ? std::ldexp(m, 1 - bias - mant_bits)
                            : std::ldexp(1.0 + m / double(1 << mant_bits), e - bias);
    return negative ? -v : v;
  }

  // Round to nearest even. Out of range ("[x] > max" after rounding, or +-inf) gives +-max
  // when `saturate`, else inf (IEEE) or NaN; see the tables in the ONNX Cast spec.
  uint8_t encode(double x, bool saturate) const {
    const bool negative = std::signbit(x);
    const uint8_t sign = static_cast<uint8_t>(negative << sign_shift());
    if (std::isnan(x)) return nan_bits(negative);
    const double a = std::fabs(x);
    const int emin = 1 - bias;
    double r = a;
    if (std::isfinite(a) && a > 0) {
      int e;
      std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
      const double quantum = std::ldexp(1.0, std::max(e - 1, emin) - mant_bits);
      r = std::nearbyint(a / quantum) * quantum;
    }
    if (r > max_value()) {
      if (saturate || special == Special::None) return static_cast<uint8_t>(sign | max_bits());
      if (special == Special::IEEE) return static_cast<uint8_t>(sign | (((1 << exp_bits) - 1) << mant_bits));
      return nan_bits(negative);
    }
    if (r == 0) return special == Special::FNUZ ? 0 : sign;
    if (r < std::ldexp(1.0, emin))
      return static_cast<uint8_t>(sign | static_cast<int>(std::ldexp(r, mant_bits - emin)));
    int e;
    std::frexp(r, &e);
    const int field = e - 1 + bias;
    const int m = static_cast<int>(std::ldexp(r, mant_bits - (e - 1))) - (1 << mant_bits);
    return static_cast<uint8_t>(sign | (field << mant_bits) | m);
  }
};

inline std::optional<MiniFloat> minifloat_format(DType t) {
  using S = MiniFloat::Special;
  switch (t) {
    case DType::Float8E4M3FN: return MiniFloat{4, 3, 7, S::FN};
    case DType::Float8E4M3FNUZ: return MiniFloat{4, 3, 8, S::FNUZ};
    case DType::Float8E5M2: return MiniFloat{5, 2, 15, S::IEEE};
    case DType::Float8E5M2FNUZ: return MiniFloat{5, 2, 16, S::FNUZ};
    case DType::Float4E2M1: return MiniFloat{2, 1, 1, S::None};
    default: return std::nullopt;
  }
}

// ---- float8e8m0 ----
//
// 8 exponent bits and nothing else: bits b encode 2^(b - 127), from 2^-127 (0x00) to 2^127
// (0xFE); 0xFF is NaN. There is no sign, no zero and no infinity. Conversion to it rounds
// to a power of two as Cast's `round_mode` says (opset 24):
//   up      - the nearest power of two away from zero (2^k <= |x| < 2^(k+1) gives 2^(k+1)
//             unless |x| is exactly 2^k), the default and what CUDA does;
//   down    - the nearest power of two toward zero (2^k);
//   nearest - the nearer of 2^k and 2^(k+1), the midpoint 1.5 * 2^k rounding up.
// A rounded value outside [2^-127, 2^127] saturates to that bound when `saturate` (the
// default), else gives NaN; 0 and inf count as out of range. With saturate 0 gives 2^-127
// and inf 2^127, without both give NaN: the two columns of the spec's table. NaN gives
// NaN. The spec leaves negative inputs unspecified; octet, like the ONNX reference (which
// reads the float32 exponent field), converts their magnitude.

enum class E8M0Rounding { Up, Down, Nearest };

inline std::optional<E8M0Rounding> e8m0_rounding_from_name(const std::string& name) {
  if (name == "up") return E8M0Rounding::Up;
  if (name == "down") return E8M0Rounding::Down;
  if (name == "nearest") return E8M0Rounding::Nearest;
  return std::nullopt;
}

inline double e8m0_decode(uint8_t bits) { return bits == 0xFF ? std::nan("") : std::ldexp(1.0, bits - 127); }

inline uint8_t e8m0_encode(double x, bool saturate, E8M0Rounding mode) {
  constexpr uint8_t kNaN = 0xFF, kMax = 0xFE, kMin = 0x00;
  if (std::isnan(x)) return kNaN;
  const double a = std::fabs(x);
  if (std::isinf(a)) return saturate ? kMax : kNaN;
  if (a == 0) return saturate ? kMin : kNaN;
  int e;
  const double f = std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): 2^(e-1) <= a < 2^e
  int k = e - 1;                        // the power of two toward zero
  switch (mode) {
    case E8M0Rounding::Down: break;
    case E8M0Rounding::Up: k += f != 0.5; break;
    case E8M0Rounding::Nearest: k += f >= 0.75; break;
  }
  if (k > 127) return saturate ? kMax : kNaN;
  if (k < -127) return saturate ? kMin : kNaN;
  return static_cast<uint8_t>(k + 127);
}

// ---- packed 4- and 2-bit integers ----

inline bool is_packed_int(DType t) {
  return t == DType::Int4 || t == DType::UInt4 || t == DType::Int2 || t == DType::UInt2;
}
// Element i of a packed 4- or 2-bit integer tensor's bytes, sign-extended for int4/int2.
inline int8_t packed_int_value(DType t, const uint8_t* data, int64_t i) {
  const int bits = dtype_bits(t);
  const uint8_t v = get_packed(data, i, bits);
  if (t == DType::UInt4 || t == DType::UInt2) return static_cast<int8_t>(v);
  const int sign = 1 << (bits - 1);
  return static_cast<int8_t>((v ^ sign) - sign);
}

// Element i of a 4-bit type (int4, uint4, float4e2m1): the nibble.
inline uint8_t get_nibble(const uint8_t* data, int64_t i) { return get_packed(data, i, 4); }
inline void set_nibble(uint8_t* data, int64_t i, uint8_t nibble) { set_packed(data, i, 4, nibble); }

}  // namespace octet::ref
