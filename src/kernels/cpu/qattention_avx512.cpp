// The AVX-512 (F, BW) instantiation of the octet.QAttention task (qattention_impl.h):
// VPMADDWD on 16 pairs of int16 per zmm, 8 query rows per tile. Compiled with the AVX-512
// flags (CMakeLists.txt, by the file-name suffix); qattention.cpp calls it only where
// active_isa() allows.
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
    constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    const __m512 vmul = _mm512_set1_ps(mul), scale = _mm512_set1_ps(q.scale), inv = _mm512_set1_ps(q.inv);
    const __m512 lo = _mm512_set1_ps(q.lo), hi = _mm512_set1_ps(q.hi), half = _mm512_set1_ps(0.5f),
                 tol = _mm512_set1_ps(0x1p-20f);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(x + i), vmul);
      __m512 r;
      if (q.inv != 0.0f) {  // multiply, and divide only near a half-integer (see Quant)
        const __m512 t = _mm512_mul_ps(v, inv);
        r = _mm512_roundscale_ps(t, kNearest);
        const __m512 margin = _mm512_sub_ps(half, _mm512_abs_ps(_mm512_sub_ps(t, r)));
        if (_mm512_cmp_ps_mask(margin, _mm512_mul_ps(_mm512_abs_ps(t), tol), _CMP_LE_OQ))
          r = _mm512_roundscale_ps(_mm512_div_ps(v, scale), kNearest);
      } else {
        r = _mm512_roundscale_ps(_mm512_div_ps(v, scale), kNearest);
      }
      const __mmask16 ordered = _mm512_cmp_ps_mask(r, r, _CMP_ORD_Q);  // NaN -> 0, the zero point
      const __m512 c = _mm512_maskz_mov_ps(ordered, _mm512_min_ps(_mm512_max_ps(r, lo), hi));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi32_epi16(_mm512_cvtps_epi32(c)));
    }
    return i;
  }
};

}  // namespace

void task_avx512(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w) {
  Kernel<Avx512Int>::task(p, b, h, i0, i1, w);
}

}  // namespace octet::cpu::qattn
