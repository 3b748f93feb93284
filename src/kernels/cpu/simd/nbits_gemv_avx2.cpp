// The AVX2 MatMulNBits dot products (nbits_table.h): as the AVX-512 ones, 8 lanes wide.
// A 16-byte run of 4-bit weights widens in two halves; their low nibbles meet a's evens
// (lanes 0..15 of the arranged run), their high nibbles a's odds (lanes 16..31).
// Compiled with the AVX2/FMA flags (file-name suffix, see CMakeLists.txt).
#include <immintrin.h>

#include "kernels/cpu/simd/nbits_dispatch.h"

namespace octet::cpu {
namespace {

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

template <int R, int Bits>
struct Gemv {
  static void run(const NbitsGemvArgs& g, int64_t n0, int64_t n1);
};

template <int R, int Bits>
void Gemv<R, Bits>::run(const NbitsGemvArgs& g, int64_t n0, int64_t n1) {
  const int64_t kp = g.k_blocks * g.block, blob = g.block * Bits / 8;
  const __m256i low4 = _mm256_set1_epi32(15);
  for (int64_t n = n0; n < n1; ++n) {
    __m256 acc[2][R];
    for (int r = 0; r < R; ++r) acc[0][r] = acc[1][r] = _mm256_setzero_ps();
    const uint8_t* qn = g.b + n * g.k_blocks * blob;
    const float* sn = g.scales + n * g.k_blocks;
    const float* zn = g.zeros + n * g.k_blocks;
    for (int64_t b = 0; b < g.k_blocks; ++b) {
      const uint8_t* q = qn + b * blob;
      const float* a = g.a + b * g.block;
      __m256 t[R];
      for (int r = 0; r < R; ++r) t[r] = _mm256_setzero_ps();
      const __m256 zero = _mm256_set1_ps(zn[b]);
      if (Bits == 4) {
        for (int64_t c = 0; c < g.block; c += 32) {
          const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + c / 2));
          const __m256i w0 = _mm256_cvtepu8_epi32(raw), w1 = _mm256_cvtepu8_epi32(_mm_srli_si128(raw, 8));
          const __m256 v[4] = {_mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_and_si256(w0, low4)), zero),
                               _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_and_si256(w1, low4)), zero),
                               _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(w0, 4)), zero),
                               _mm256_sub_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(w1, 4)), zero)};
          for (int r = 0; r < R; ++r)
            for (int i = 0; i < 4; ++i) t[r] = _mm256_fmadd_ps(v[i], _mm256_loadu_ps(a + r * kp + c + 8 * i), t[r]);
        }
      } else {
        for (int64_t c = 0; c < g.block; c += 8) {
          const __m256 w = _mm256_sub_ps(
              _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + c)))), zero);
          for (int r = 0; r < R; ++r) t[r] = _mm256_fmadd_ps(w, _mm256_loadu_ps(a + r * kp + c), t[r]);
        }
      }
      const __m256 s = _mm256_set1_ps(sn[b]);
      for (int r = 0; r < R; ++r) acc[b & 1][r] = _mm256_fmadd_ps(t[r], s, acc[b & 1][r]);
    }
    for (int r = 0; r < R; ++r) g.y[r * g.ldy + n] = hsum(_mm256_add_ps(acc[0][r], acc[1][r]));
  }
}

}  // namespace

void fill_nbits_table_avx2(NbitsTable& t) {
  t.name = "avx2";
  t.gemv = simd::nbits_dispatch<Gemv>;
}

}  // namespace octet::cpu
