// Scalar "vector" traits: one float per vector. The generic kernels are the same
// algorithms as the SIMD ones (simd/vec_impl.h) run one lane at a time, so every ISA
// level computes the same polynomials and differs only in rounding of fused multiply-adds.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace octet::cpu::simd {

struct ScalarTraits {
  using F = float;
  using I = int32_t;
  using M = bool;
  static constexpr int kWidth = 1;

  static F load(const float* p) { return *p; }
  static void store(float* p, F v) { *p = v; }
  // Width 1 never has a partial vector; these exist so the shared templates compile.
  static F load_tail(const float* p, int64_t, float) { return *p; }
  static void store_tail(float* p, F v, int64_t) { *p = v; }

  static F set1(float v) { return v; }
  static F add(F a, F b) { return a + b; }
  static F sub(F a, F b) { return a - b; }
  static F mul(F a, F b) { return a * b; }
  static F div(F a, F b) { return a / b; }
  // a*b + c, unfused: a software fma would be far slower than the error it saves.
  static F fmadd(F a, F b, F c) { return a * b + c; }
  // a*b - p exactly (p = fl(a*b)): the product of two floats is exact in double.
  static F mul_error(F a, F b, F p) { return static_cast<float>(static_cast<double>(a) * b - p); }
  // Operand order as x86 maxps: the second operand wins when either is NaN.
  static F max(F a, F b) { return a > b ? a : b; }
  static F min(F a, F b) { return a < b ? a : b; }
  static F sqrt(F a) { return std::sqrt(a); }
  static F abs(F a) { return std::fabs(a); }
  static F copy_sign(F mag, F src) { return std::copysign(mag, src); }

  static M lt(F a, F b) { return a < b; }
  static M gt(F a, F b) { return a > b; }
  static F select(M m, F a, F b) { return m ? a : b; }

  // round(x) to int32 (nearest even, as cvtps2dq) and 2^n for n in [-126, 127].
  // Nearest-even like cvtps2dq; NaN gives 0 here (converting NaN is undefined in C++),
  // callers only use the result where the input was finite.
  static I round_to_int(F a) { return a == a ? static_cast<I>(std::nearbyint(a)) : 0; }
  static F int_to_float(I a) { return static_cast<float>(a); }
  // p * 2^n for n in [-252, 254], as two power-of-two factors each in the normal range,
  // so results that are subnormal or near FLT_MAX are still right.
  static F ldexp(F p, I n) {
    const I a = n >> 1, b = n - a;
    return p * std::bit_cast<float>(static_cast<uint32_t>(a + 127) << 23) *
           std::bit_cast<float>(static_cast<uint32_t>(b + 127) << 23);
  }

  // Nearest-even, as the vector levels' round instructions.
  static F round(F a) { return std::nearbyint(a); }
  // p * 2^nf for integral nf in [-126, 127] (exp_flush): one normal power-of-two factor.
  // A NaN nf (from a NaN x) gives a finite factor; p is NaN then too.
  static F scale_pow2(F p, F nf) {
    const int n = nf == nf ? static_cast<int>(nf) : 0;
    return p * std::bit_cast<float>(static_cast<uint32_t>(n + 127) << 23);
  }

  static constexpr bool kLookup32 = true;
  // t[bits(u) & 31], as the vector levels' permutes read their index.
  static F lookup32(const float* t, F u) { return t[std::bit_cast<uint32_t>(u) & 31u]; }

  static float reduce_add(F a) { return a; }
  static float reduce_max(F a) { return a; }
};

}  // namespace octet::cpu::simd
