// The AVX-512 (F, BW) integer traits of the octet.QAttention task (qattention_impl.h):
// VPMADDWD on 16 pairs of int16 per zmm, 8 query rows per tile. Shared by the plain
// AVX-512 unit (qattention_avx512.cpp) and the AVX512-VNNI one
// (qattention_vnni_avx512.cpp), which replaces madd_add by VPDPWSSD. Include only from
// units compiled with the AVX-512 flags; everything stays in an anonymous namespace, so
// each unit keeps its own copy (see qattention_impl.h).
#pragma once

// GCC 12's AVX-512 intrinsic headers start masked ops from _mm512_undefined_*(), which
// its own -Wuninitialized then flags at every inlined use; nothing here reads it.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include "kernels/cpu/qattention_impl.h"

namespace octet::cpu::qattn {
namespace {

struct Avx512Int {
  using P = __m512i;
  using I = __m512i;
  static constexpr int64_t kLanes = 16;
  static constexpr int64_t kRows = 8;  // 8 accumulators of kCols / 16 = 1 zmm: the madd latency covered

  static void transpose_pairs(const int16_t* src, int64_t pairs, int64_t rows, int16_t* dst) {
    // One gather per 16 rows and pair: lane l reads row l's pair (int32 index l * pairs).
    const __m512i index = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), _mm512_set1_epi32(static_cast<int>(pairs)));
    for (int64_t r0 = 0; r0 < rows; r0 += 16)
      for (int64_t c = 0; c < pairs; ++c)
        _mm512_storeu_si512(dst + 2 * (c * rows + r0), _mm512_i32gather_epi32(index, src + 2 * (r0 * pairs + c), 4));
  }
  static void interleave(const int16_t* a, const int16_t* b, int64_t n, int16_t* out) {
    for (int64_t d = 0; d < n; d += 16) {
      const __m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + d)));
      const __m512i hi = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + d)));
      _mm512_storeu_si512(out + 2 * d, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));  // little-endian pairs
    }
  }

  static I zero() { return _mm512_setzero_si512(); }
  static P load(const int16_t* p) { return _mm512_loadu_si512(p); }
  static P bcast(const int16_t* p) {
    int32_t pair;
    __builtin_memcpy(&pair, p, 4);
    return _mm512_set1_epi32(pair);
  }
  static I madd_add(I acc, P a, P b) { return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b)); }
  static void store(float* y, I acc, float m) {
    _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_set1_ps(m), _mm512_cvtepi32_ps(acc)));
  }
  static void store2(float* y, I acc, float m1, float m2) {
    _mm512_storeu_ps(y, _mm512_mul_ps(_mm512_set1_ps(m2), _mm512_mul_ps(_mm512_set1_ps(m1), _mm512_cvtepi32_ps(acc))));
  }
  static int64_t quantize(const float* x, int64_t n, float mul, const Quant& q, int16_t* out) {
    return q.inv != 0.0f ? quantize_loop<true>(x, n, mul, q, out) : quantize_loop<false>(x, n, mul, q, out);
  }
  // The constants of one quantization, in registers.
  struct QuantVec {
    __m512 scale, inv, lo, hi;
    explicit QuantVec(const Quant& q)
        : scale(_mm512_set1_ps(q.scale)), inv(_mm512_set1_ps(q.inv)), lo(_mm512_set1_ps(q.lo)),
          hi(_mm512_set1_ps(q.hi)) {}
  };
  // round(v / scale) saturated to [lo, hi], as a float; NaN stays NaN (max and min return
  // their second operand when either is NaN). Shared by every vector quantization of the
  // AVX-512 tasks, so all of them round as quantize_one does.
  template <bool kByInverse>
  static __m512 quantize_vec(__m512 v, const QuantVec& q) {
    constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    __m512 r;
    if constexpr (kByInverse) {  // multiply, and divide only near a half-integer (see Quant)
      const __m512 t = _mm512_mul_ps(v, q.inv);
      r = _mm512_roundscale_ps(t, kNearest);
      if (_mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_sub_ps(t, r)),
                             _mm512_fnmadd_ps(_mm512_abs_ps(t), _mm512_set1_ps(0x1p-20f), _mm512_set1_ps(0.5f)),
                             _CMP_GE_OQ))
        r = _mm512_roundscale_ps(_mm512_div_ps(v, q.scale), kNearest);
    } else {
      r = _mm512_roundscale_ps(_mm512_div_ps(v, q.scale), kNearest);
    }
    return _mm512_min_ps(q.hi, _mm512_max_ps(q.lo, r));
  }
  template <bool kByInverse>
  static int64_t quantize_loop(const float* x, int64_t n, float mul, const Quant& q, int16_t* out) {
    const __m512 vmul = _mm512_set1_ps(mul);
    const QuantVec qv(q);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      // A NaN converts to 0x80000000, and VPMOVDW keeps its low 16 bits: 0, the zero
      // point, as the reference gives.
      const __m512 c = quantize_vec<kByInverse>(_mm512_mul_ps(_mm512_loadu_ps(x + i), vmul), qv);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(c)));
    }
    return i;
  }
};


}  // namespace
}  // namespace octet::cpu::qattn
