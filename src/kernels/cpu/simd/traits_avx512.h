// AVX-512 (F, DQ, BW, VL) traits: 16 floats per vector, tails through mask registers.
// Only include from a translation unit compiled with the AVX-512 flags (*_avx512.cpp).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace octet::cpu::simd {

struct Avx512Traits {
  using F = __m512;
  using I = __m512i;
  using M = __mmask16;
  static constexpr int kWidth = 16;

  static __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static F load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, F v) { _mm512_storeu_ps(p, v); }
  // Masked loads suppress faults in the masked-off lanes, so reading p+n.. is safe.
  static F load_tail(const float* p, int64_t n, float fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), tail_mask(n), p);
  }
  static void store_tail(float* p, F v, int64_t n) { _mm512_mask_storeu_ps(p, tail_mask(n), v); }

  static F set1(float v) { return _mm512_set1_ps(v); }
  static F add(F a, F b) { return _mm512_add_ps(a, b); }
  static F sub(F a, F b) { return _mm512_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F div(F a, F b) { return _mm512_div_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F mul_error(F a, F b, F p) { return _mm512_fmsub_ps(a, b, p); }
  static F max(F a, F b) { return _mm512_max_ps(a, b); }
  static F min(F a, F b) { return _mm512_min_ps(a, b); }
  static F sqrt(F a) { return _mm512_sqrt_ps(a); }
  static F abs(F a) { return _mm512_abs_ps(a); }
  static F copy_sign(F mag, F src) {
    const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
    // (mag & ~sign) | (src & sign): ternary-logic truth table 0xCA is "sign ? src : mag" per bit.
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(sign, _mm512_castps_si512(src), _mm512_castps_si512(mag), 0xCA));
  }

  static M lt(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
  static M gt(F a, F b) { return _mm512_cmp_ps_mask(a, b, _CMP_GT_OQ); }
  static F select(M m, F a, F b) { return _mm512_mask_blend_ps(m, b, a); }

  static I round_to_int(F a) { return _mm512_cvtps_epi32(a); }
  static F int_to_float(I a) { return _mm512_cvtepi32_ps(a); }
  // p * 2^n with one rounding: VSCALEFPS handles the subnormal and overflow ranges
  // itself, in 2 instructions where the two-factor form of the other levels takes 8,
  // which is most of exp's dependency chain (softmax is exp-bound).
  static F ldexp(F p, I n) { return _mm512_scalef_ps(p, _mm512_cvtepi32_ps(n)); }

  static F round(F a) { return _mm512_roundscale_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // p * 2^nf for integral nf in [-126, 127] (exp_flush); one VSCALEFPS.
  static F scale_pow2(F p, F nf) { return _mm512_scalef_ps(p, nf); }

  static constexpr bool kLookup32 = true;
  // t[bits(u) & 31] per lane (t: 32 floats, 64-byte aligned): one two-register permute.
  static F lookup32(const float* t, F u) {
    return _mm512_permutex2var_ps(_mm512_load_ps(t), _mm512_castps_si512(u), _mm512_load_ps(t + 16));
  }

  static float reduce_add(F a) { return _mm512_reduce_add_ps(a); }
  static float reduce_max(F a) { return _mm512_reduce_max_ps(a); }
};

}  // namespace octet::cpu::simd
