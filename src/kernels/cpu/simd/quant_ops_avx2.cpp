// The avx2 instantiation of the int8 row kernels in quant_impl.h (8 lanes), plus a
// vectorized requantization (4 doubles at a time). Compiled with -mavx2 -mfma (file-name
// suffix, see CMakeLists.txt); used only where active_isa() allows.
#include <cstring>

#include "kernels/cpu/simd/quant_impl.h"
#include "kernels/cpu/simd/traits_avx2.h"

namespace octet::cpu {
namespace simd {
namespace {

struct Avx2Quant : Avx2Traits {
  static I set1_i(int32_t v) { return _mm256_set1_epi32(v); }
  static I add_i(I a, I b) { return _mm256_add_epi32(a, b); }
  static I sub_i(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I mullo_i(I a, I b) { return _mm256_mullo_epi32(a, b); }
  static I load_i(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static I load_i_tail(const int32_t* p, int64_t n) { return _mm256_maskload_epi32(p, tail_mask(n)); }
  static M is_nan(F a) { return _mm256_cmp_ps(a, a, _CMP_UNORD_Q); }
  static F nearest_fraction(F t) { return sub(t, round(t)); }
  static bool all_lanes(M m) { return _mm256_movemask_ps(m) == 0xFF; }
  // The low byte of each 32-bit lane, in order: bytes 0, 4, 8, 12 of each 128-bit half.
  static __m128i low_bytes(I v) {
    const __m256i pick = _mm256_setr_epi8(0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                          0, 4, 8, 12, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m256i b = _mm256_shuffle_epi8(v, pick);
    return _mm_unpacklo_epi32(_mm256_castsi256_si128(b), _mm256_extracti128_si256(b, 1));
  }
  static void store_bytes(uint8_t* p, I v) { _mm_storel_epi64(reinterpret_cast<__m128i*>(p), low_bytes(v)); }
  static void store_bytes_tail(uint8_t* p, I v, int64_t n) {
    alignas(16) uint8_t tmp[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(tmp), low_bytes(v));
    std::memcpy(p, tmp, static_cast<size_t>(n));
  }
  static I widen(__m128i b, bool is_signed) { return is_signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b); }
  static I load_bytes(const uint8_t* p, bool is_signed) {
    return widen(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), is_signed);
  }
  static I load_bytes_tail(const uint8_t* p, int64_t n, bool is_signed) {
    uint64_t tmp = 0;
    std::memcpy(&tmp, p, static_cast<size_t>(n));
    return widen(_mm_cvtsi64_si128(static_cast<long long>(tmp)), is_signed);
  }
};

// Four lanes of requantize_one: the product in double, nearest-even rounding, saturation.
__m128i requantize4(__m128i acc, const double* mult, const double* zp, __m256d lo, __m256d hi) {
  __m256d v = _mm256_mul_pd(_mm256_cvtepi32_pd(acc), _mm256_loadu_pd(mult));
  v = _mm256_add_pd(_mm256_round_pd(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), _mm256_loadu_pd(zp));
  return _mm256_cvtpd_epi32(_mm256_min_pd(hi, _mm256_max_pd(lo, v)));
}

void requantize_avx2(const int32_t* acc, int64_t n, const double* mult, const double* zp, int32_t lo, int32_t hi,
                     uint8_t* y) {
  const __m256d vlo = _mm256_set1_pd(lo), vhi = _mm256_set1_pd(hi);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i a = requantize4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + i)), mult + i, zp + i, vlo, vhi);
    const __m128i b = requantize4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(acc + i + 4)), mult + i + 4, zp + i + 4,
                                  vlo, vhi);
    Avx2Quant::store_bytes(y + i, _mm256_set_m128i(b, a));
  }
  requantize_scalar(acc + i, n - i, mult + i, zp + i, lo, hi, y + i);
}

}  // namespace
}  // namespace simd

void fill_quant_table_avx2(QuantTable& t) {
  simd::fill_quant<simd::Avx2Quant>(t, "avx2");
  t.requantize = simd::requantize_avx2;
}

}  // namespace octet::cpu
