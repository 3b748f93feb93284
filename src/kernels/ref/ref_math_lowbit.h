// Low-bit element types the math reference kernels read and write: the 8-bit floats
// (float8e4m3fn, float8e4m3fnuz, float8e5m2, float8e5m2fnuz), float4e2m1, and the packed
// 4-bit integers. Used by Cast, QuantizeLinear and DequantizeLinear.
//
// Sub-byte types pack two elements per byte, element 2i in the low nibble and 2i+1 in the
// high nibble (ONNX's layout for int4/uint4/float4e2m1).
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>

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

// ---- 4-bit packing ----

inline uint8_t get_nibble(const uint8_t* data, int64_t i) {
  return static_cast<uint8_t>((data[i / 2] >> ((i & 1) * 4)) & 0x0F);
}
inline void set_nibble(uint8_t* data, int64_t i, uint8_t nibble) {
  uint8_t& byte = data[i / 2];
  if (i & 1) byte = static_cast<uint8_t>((byte & 0x0F) | ((nibble & 0x0F) << 4));
  else byte = static_cast<uint8_t>((byte & 0xF0) | (nibble & 0x0F));
}
// Sign-extends a 4-bit two's complement value.
inline int8_t int4_value(uint8_t nibble) { return static_cast<int8_t>((nibble ^ 0x08) - 0x08); }

}  // namespace octet::ref
