// The avx512 instantiation of the int8 row kernels in quant_impl.h (16 lanes, tails
// through mask registers), plus a vectorized requantization (8 doubles at a time).
// Compiled with the AVX-512 F/BW/DQ/VL flags (file-name suffix, see CMakeLists.txt); used
// only where active_isa() allows.
// GCC 12's AVX-512 headers trip its own -Wuninitialized (see vec_ops_avx512.cpp).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/cpu/simd/quant_impl.h"
#include "kernels/cpu/simd/traits_avx512.h"

namespace octet::cpu {
namespace simd {
namespace {

struct Avx512Quant : Avx512Traits {
  static I set1_i(int32_t v) { return _mm512_set1_epi32(v); }
  static I add_i(I a, I b) { return _mm512_add_epi32(a, b); }
  static I sub_i(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I mullo_i(I a, I b) { return _mm512_mullo_epi32(a, b); }
  static I load_i(const int32_t* p) { return _mm512_loadu_si512(p); }
  static I load_i_tail(const int32_t* p, int64_t n) { return _mm512_maskz_loadu_epi32(tail_mask(n), p); }
  static M is_nan(F a) { return _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q); }
  // t - round(t) in one VREDUCEPS (0 fraction bits kept, nearest even) for a round and a subtract.
  static F nearest_fraction(F t) { return _mm512_reduce_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static bool all_lanes(M m) { return m == 0xFFFF; }
  static void store_bytes(uint8_t* p, I v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtepi32_epi8(v)); }
  static void store_bytes_tail(uint8_t* p, I v, int64_t n) { _mm512_mask_cvtepi32_storeu_epi8(p, tail_mask(n), v); }
  static I widen(__m128i b, bool is_signed) { return is_signed ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b); }
  static I load_bytes(const uint8_t* p, bool is_signed) {
    return widen(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), is_signed);
  }
  static I load_bytes_tail(const uint8_t* p, int64_t n, bool is_signed) {
    return widen(_mm_maskz_loadu_epi8(tail_mask(n), p), is_signed);
  }
};

void requantize_avx512(const int32_t* acc, int64_t n, const double* mult, const double* zp, int32_t lo, int32_t hi,
                       uint8_t* y) {
  const __m512d vlo = _mm512_set1_pd(lo), vhi = _mm512_set1_pd(hi);
  for (int64_t i = 0; i < n; i += 8) {
    const __mmask8 m = static_cast<__mmask8>(n - i >= 8 ? 0xFF : (1u << (n - i)) - 1u);
    const __m256i a = _mm256_maskz_loadu_epi32(m, acc + i);
    __m512d v = _mm512_mul_pd(_mm512_cvtepi32_pd(a), _mm512_maskz_loadu_pd(m, mult + i));
    v = _mm512_add_pd(_mm512_roundscale_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                      _mm512_maskz_loadu_pd(m, zp + i));
    const __m256i q = _mm512_cvtpd_epi32(_mm512_min_pd(vhi, _mm512_max_pd(vlo, v)));
    _mm256_mask_cvtepi32_storeu_epi8(y + i, m, q);
  }
}

}  // namespace
}  // namespace simd

void fill_quant_table_avx512(QuantTable& t) {
  simd::fill_quant<simd::Avx512Quant>(t, "avx512");
  t.requantize = simd::requantize_avx512;
}

}  // namespace octet::cpu
