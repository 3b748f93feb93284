// The AVX-512 MatMulNBits dot products (nbits_table.h). Decode is memory-bound: each weight
// byte is loaded once, widened and turned into floats in registers (never written back),
// and serves every row of A; the zero point is subtracted there too. Per block the products sum in one register, then the block's
// scale multiplies that register into the column's accumulator; two accumulators
// alternate by block so the scale FMAs do not wait on each other.
// Compiled with the AVX-512 flags (file-name suffix, see CMakeLists.txt).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include "kernels/cpu/simd/nbits_dispatch.h"

namespace octet::cpu {
namespace {

template <int R, int Bits>
struct Gemv {
  static void run(const NbitsGemvArgs& g, int64_t n0, int64_t n1);
};

template <int R, int Bits>
void Gemv<R, Bits>::run(const NbitsGemvArgs& g, int64_t n0, int64_t n1) {
  const int64_t kp = g.k_blocks * g.block, blob = g.block * Bits / 8;
  const __m512 codes = _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  for (int64_t n = n0; n < n1; ++n) {
    __m512 acc[2][R];
    for (int r = 0; r < R; ++r) acc[0][r] = acc[1][r] = _mm512_setzero_ps();
    const uint8_t* qn = g.b + n * g.k_blocks * blob;
    const float* sn = g.scales + n * g.k_blocks;
    const float* zn = g.zeros + n * g.k_blocks;
    for (int64_t b = 0; b < g.k_blocks; ++b) {
      const uint8_t* q = qn + b * blob;
      const float* a = g.a + b * g.block;
      __m512 t[R];
      for (int r = 0; r < R; ++r) t[r] = _mm512_setzero_ps();
      const __m512 zero = _mm512_set1_ps(zn[b]);
      if (Bits == 4) {
        const __m512 table = _mm512_sub_ps(codes, zero);  // nibble -> its value minus the zero point
        for (int64_t c = 0; c < g.block; c += 32) {
          // vpermps reads only the low 4 bits of each index: the table lookup is the
          // nibble's mask and its conversion to float in one instruction.
          const __m512i w = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + c / 2)));
          const __m512 lo = _mm512_permutexvar_ps(w, table);
          const __m512 hi = _mm512_permutexvar_ps(_mm512_srli_epi32(w, 4), table);
          for (int r = 0; r < R; ++r) {
            t[r] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(a + r * kp + c), t[r]);
            t[r] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(a + r * kp + c + 16), t[r]);
          }
        }
      } else {
        for (int64_t c = 0; c < g.block; c += 16) {
          const __m512 w = _mm512_sub_ps(
              _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + c)))), zero);
          for (int r = 0; r < R; ++r) t[r] = _mm512_fmadd_ps(w, _mm512_loadu_ps(a + r * kp + c), t[r]);
        }
      }
      const __m512 s = _mm512_set1_ps(sn[b]);
      for (int r = 0; r < R; ++r) acc[b & 1][r] = _mm512_fmadd_ps(t[r], s, acc[b & 1][r]);
    }
    for (int r = 0; r < R; ++r) g.y[r * g.ldy + n] = _mm512_reduce_add_ps(_mm512_add_ps(acc[0][r], acc[1][r]));
  }
}

}  // namespace

void fill_nbits_table_avx512(NbitsTable& t) {
  t.name = "avx512";
  t.gemv = simd::nbits_dispatch<Gemv>;
}

}  // namespace octet::cpu
