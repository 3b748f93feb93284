// AVX2 + FMA traits: 8 floats per vector. Only include from a translation unit compiled
// with -mavx2 -mfma (the *_avx2.cpp files; see CMakeLists.txt).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace octet::cpu::simd {

struct Avx2Traits {
  using F = __m256;
  using I = __m256i;
  using M = __m256;
  static constexpr int kWidth = 8;

  static __m256i tail_mask(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static F load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, F v) { _mm256_storeu_ps(p, v); }
  // The first n lanes from p, the rest `fill`; masked loads never touch memory past p+n.
  static F load_tail(const float* p, int64_t n, float fill) {
    const __m256i m = tail_mask(n);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
  }
  static void store_tail(float* p, F v, int64_t n) { _mm256_maskstore_ps(p, tail_mask(n), v); }

  static F set1(float v) { return _mm256_set1_ps(v); }
  static F add(F a, F b) { return _mm256_add_ps(a, b); }
  static F sub(F a, F b) { return _mm256_sub_ps(a, b); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F div(F a, F b) { return _mm256_div_ps(a, b); }
  static F fmadd(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F mul_error(F a, F b, F p) { return _mm256_fmsub_ps(a, b, p); }
  static F max(F a, F b) { return _mm256_max_ps(a, b); }
  static F min(F a, F b) { return _mm256_min_ps(a, b); }
  static F sqrt(F a) { return _mm256_sqrt_ps(a); }
  static F abs(F a) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), a); }
  static F copy_sign(F mag, F src) {
    const F sign = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_andnot_ps(sign, mag), _mm256_and_ps(sign, src));
  }

  static M lt(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
  static M gt(F a, F b) { return _mm256_cmp_ps(a, b, _CMP_GT_OQ); }
  static F select(M m, F a, F b) { return _mm256_blendv_ps(b, a, m); }

  static I round_to_int(F a) { return _mm256_cvtps_epi32(a); }
  static F int_to_float(I a) { return _mm256_cvtepi32_ps(a); }
  static F pow2(I n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
  }
  // p * 2^n for n in [-252, 254] as two normal power-of-two factors (see ScalarTraits).
  static F ldexp(F p, I n) {
    const I a = _mm256_srai_epi32(n, 1);
    return _mm256_mul_ps(_mm256_mul_ps(p, pow2(a)), pow2(_mm256_sub_epi32(n, a)));
  }

  static F round(F a) { return _mm256_round_ps(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // p * 2^nf for integral nf in [-126, 127] (exp_flush): one normal power-of-two factor.
  static F scale_pow2(F p, F nf) { return _mm256_mul_ps(p, pow2(_mm256_cvtps_epi32(nf))); }

  // A 32-entry lookup takes 4 vpermps and 3 blends here (one permute under AVX-512): the
  // GeLU uses 16-entry tables instead (Math::gelu_erf_fast).
  static constexpr bool kLookup32 = false;
  // t[bits(u) & 15] per lane (t: 16 floats, 32-byte aligned): vpermps reads an index's low
  // 3 bits; bit 3, shifted into the sign bit, picks the half.
  static F lookup16(const float* t, F u) {
    const __m256i i = _mm256_castps_si256(u);
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(_mm256_load_ps(t), i),
                            _mm256_permutevar8x32_ps(_mm256_load_ps(t + 8), i),
                            _mm256_castsi256_ps(_mm256_slli_epi32(i, 28)));
  }

  static float reduce_add(F a) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float reduce_max(F a) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps(a, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace octet::cpu::simd
