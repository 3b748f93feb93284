// The AVX2 instantiation of the octet.QAttention task (qattention_impl.h): VPMADDWD on 8
// pairs of int16 per ymm, 4 query rows of 2 ymm per tile. Compiled with the AVX2 flags
// (CMakeLists.txt, by the file-name suffix); qattention.cpp calls it only where
// active_isa() allows.
#include <immintrin.h>

#include "kernels/cpu/qattention_impl.h"

namespace octet::cpu::qattn {
namespace {

struct Avx2Int {
  using P = __m256i;
  using I = __m256i;
  static constexpr int64_t kLanes = 8;
  static constexpr int64_t kRows = 4;  // 4 x 2 accumulators, 2 loaded pairs: 16 ymm are enough

  static void transpose_pairs(const int16_t* src, int64_t pairs, int64_t rows, int16_t* dst) {
    // One gather per 8 rows and pair: lane l reads row l's pair (int32 index l * pairs).
    const __m256i index = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                             _mm256_set1_epi32(static_cast<int>(pairs)));
    for (int64_t r0 = 0; r0 < rows; r0 += 8)
      for (int64_t c = 0; c < pairs; ++c)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2 * (c * rows + r0)),
                            _mm256_i32gather_epi32(reinterpret_cast<const int*>(src + 2 * (r0 * pairs + c)), index, 4));
  }
  static void interleave(const int16_t* a, const int16_t* b, int64_t n, int16_t* out) {
    for (int64_t d = 0; d < n; d += 8) {
      const __m256i lo = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + d)));
      const __m256i hi = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + d)));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * d), _mm256_or_si256(lo, _mm256_slli_epi32(hi, 16)));
    }
  }

  static I zero() { return _mm256_setzero_si256(); }
  static P load(const int16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static P bcast(const int16_t* p) {
    int32_t pair;
    __builtin_memcpy(&pair, p, 4);
    return _mm256_set1_epi32(pair);
  }
  static I madd_add(I acc, P a, P b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
  static void store(float* y, I acc, float m) {
    _mm256_storeu_ps(y, _mm256_mul_ps(_mm256_set1_ps(m), _mm256_cvtepi32_ps(acc)));
  }
  static void store2(float* y, I acc, float m1, float m2) {
    _mm256_storeu_ps(y, _mm256_mul_ps(_mm256_set1_ps(m2), _mm256_mul_ps(_mm256_set1_ps(m1), _mm256_cvtepi32_ps(acc))));
  }
  static int64_t quantize(const float* x, int64_t n, float mul, const Quant& q, int16_t* out) {
    return q.inv != 0.0f ? quantize_loop<true>(x, n, mul, q, out) : quantize_loop<false>(x, n, mul, q, out);
  }
  template <bool kByInverse>
  static int64_t quantize_loop(const float* x, int64_t n, float mul, const Quant& q, int16_t* out) {
    constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m256 vmul = _mm256_set1_ps(mul), scale = _mm256_set1_ps(q.scale), inv = _mm256_set1_ps(q.inv);
    const __m256 lo = _mm256_set1_ps(q.lo), hi = _mm256_set1_ps(q.hi), half = _mm256_set1_ps(0.5f),
                 tol = _mm256_set1_ps(0x1p-20f), sign = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vmul);
      __m256 r;
      if constexpr (kByInverse) {  // multiply, and divide only near a half-integer (see Quant)
        const __m256 t = _mm256_mul_ps(v, inv);
        r = _mm256_round_ps(t, kNearest);
        const __m256 near = _mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_sub_ps(t, r)),
                                          _mm256_fnmadd_ps(_mm256_andnot_ps(sign, t), tol, half), _CMP_GE_OQ);
        if (_mm256_movemask_ps(near)) r = _mm256_round_ps(_mm256_div_ps(v, scale), kNearest);
      } else {
        r = _mm256_round_ps(_mm256_div_ps(v, scale), kNearest);
      }
      // Saturate; NaN to 0, the zero point (PACKSSDW would saturate its 0x80000000).
      const __m256 ordered = _mm256_cmp_ps(r, r, _CMP_ORD_Q);
      const __m256i c = _mm256_cvtps_epi32(_mm256_and_ps(ordered, _mm256_min_ps(hi, _mm256_max_ps(lo, r))));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       _mm_packs_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1)));
    }
    return i;
  }
};

}  // namespace

void task_avx2(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w) {
  Kernel<Avx2Int>::task(p, b, h, i0, i1, w);
}

}  // namespace octet::cpu::qattn
