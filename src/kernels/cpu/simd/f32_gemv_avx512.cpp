// The AVX-512 float32 decode GEMV (f32_gemv.h). Memory-bound: each panel of 64 columns is
// one contiguous stream of K * 256 bytes; every 256-byte row of it is loaded once into four
// registers and meets each row of A (a broadcast) in four FMAs per row of A, accumulating
// in 4 * R registers. One panel's partial sums stay in registers until the panel is done.
// Compiled with the AVX-512 flags (file-name suffix, see CMakeLists.txt).
#include <immintrin.h>

#include "kernels/cpu/simd/f32_gemv.h"

namespace octet::cpu {
namespace {

// No software prefetch: unlike the int8 GEMV (nbits_gemv_packed_vnni_avx512.cpp, 4 KiB ahead
// measured 1.2-1.5x there), a float32 panel is a plain sequential stream with one FMA per
// loaded vector, which the hardware prefetchers follow; prefetching 1, 4 or 8 KiB ahead
// measured within noise of none on SmolLM2's gate|up and LM-head shapes, 1 and 2 threads
// (bench/cpp/f32_gemv.cpp, load 4).
inline __mmask16 first_lanes(int64_t n) {
  return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

template <int R>
void panels(const F32GemvArgs& g, int64_t p0, int64_t p1) {
  constexpr int W = kF32GemvPanel;
  for (int64_t p = p0; p < p1; ++p) {
    const float* w = g.b + p * g.k_stride * W;
    __m512 acc[R][4];
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_ps();
    for (int64_t k = 0; k < g.K; ++k, w += W) {
      const __m512 w0 = _mm512_loadu_ps(w), w1 = _mm512_loadu_ps(w + 16);
      const __m512 w2 = _mm512_loadu_ps(w + 32), w3 = _mm512_loadu_ps(w + 48);
      for (int r = 0; r < R; ++r) {
        const __m512 a = _mm512_set1_ps(g.a[r * g.lda + k]);
        acc[r][0] = _mm512_fmadd_ps(w0, a, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(w1, a, acc[r][1]);
        acc[r][2] = _mm512_fmadd_ps(w2, a, acc[r][2]);
        acc[r][3] = _mm512_fmadd_ps(w3, a, acc[r][3]);
      }
    }
    const int64_t n0 = p * W;
    for (int r = 0; r < R; ++r) {
      float* y = g.y + r * g.ldy + n0;
      for (int j = 0; j < 4; ++j) {
        const int64_t left = g.N - n0 - 16 * j;
        if (left >= 16) _mm512_storeu_ps(y + 16 * j, acc[r][j]);
        else if (left > 0) _mm512_mask_storeu_ps(y + 16 * j, first_lanes(left), acc[r][j]);
      }
    }
  }
}

}  // namespace

void f32_gemv_avx512(const F32GemvArgs& g, int64_t p0, int64_t p1) {
  static_assert(kF32GemvMaxRows == 4, "one case per row count");
  switch (g.rows) {
    case 1: return panels<1>(g, p0, p1);
    case 2: return panels<2>(g, p0, p1);
    case 3: return panels<3>(g, p0, p1);
    default: return panels<4>(g, p0, p1);
  }
}

}  // namespace octet::cpu
