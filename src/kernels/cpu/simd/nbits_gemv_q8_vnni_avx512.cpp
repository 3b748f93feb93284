// The int8-activation MatMulNBits GEMV (NbitsQ8Args in nbits_table.h) with AVX512-VNNI's
// VPDPBUSD: unsigned bytes times signed bytes, four products summed into each int32 lane.
// The weight codes (0..15 or 0..255, zero point not yet subtracted) are the unsigned
// operand and the int8 activations the signed one, so no code is ever widened to float;
// the zero point comes off once per 32 activations (A's quantization run) as zero * a_sum,
// in integers, before the run's int32 lanes turn into floats and meet scale * a_scale.
// VPDPBUSD does not saturate and a lane gathers 4 products of at most |255 * 127|.
// 256-bit vectors (AVX512-VL): one 16-byte int4 load is exactly the 32 activations its
// low and high nibbles meet in the evens/odds layout, and blocks of 32 need no tail.
#pragma GCC target("avx512vnni")
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include "kernels/cpu/simd/nbits_table.h"

namespace octet::cpu {
namespace {

// 32 weight codes of a block from offset c as bytes in A's order.
template <int Bits>
inline __m256i codes32(const uint8_t* q, int64_t c) {
  if (Bits == 8) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + c));
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + c / 2));
  const __m128i mask = _mm_set1_epi8(0x0f);
  const __m128i lo = _mm_and_si128(packed, mask);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), mask);
  return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

template <int R, int Bits>
void gemv_q8(const NbitsQ8Args& g, int64_t n0, int64_t n1) {
  const int64_t kp = g.k_blocks * g.block, runs = kp / 32, blob = g.block * Bits / 8;
  for (int64_t n = n0; n < n1; ++n) {
    __m256 acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
    const uint8_t* qn = g.b + n * g.k_blocks * blob;
    for (int64_t b = 0; b < g.k_blocks; ++b) {
      const uint8_t* q = qn + b * blob;
      const int32_t zero = g.zeros[n * g.k_blocks + b];
      const float scale = g.scales[n * g.k_blocks + b];
      for (int64_t c = 0; c < g.block; c += 32) {
        const int64_t run = (b * g.block + c) / 32;
        const __m256i w = codes32<Bits>(q, c);
        for (int r = 0; r < R; ++r) {
          const __m256i dot = _mm256_dpbusd_epi32(
              _mm256_setzero_si256(), w, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.a + r * kp + run * 32)));
          // The zero point's share, zero * a_sum, comes off lane 0: exact integers.
          const __m256i centered =
              _mm256_sub_epi32(dot, _mm256_zextsi128_si256(_mm_cvtsi32_si128(zero * g.a_sums[r * runs + run])));
          acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(centered), _mm256_set1_ps(scale * g.a_scales[r * runs + run]), acc[r]);
        }
      }
    }
    for (int r = 0; r < R; ++r) {
      const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(acc[r]), _mm256_extractf128_ps(acc[r], 1));
      const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
      g.y[r * g.ldy + n] = _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
    }
  }
}

template <int Bits>
void gemv_q8_rows(const NbitsQ8Args& g, int64_t n0, int64_t n1) {
  static_assert(kNbitsMaxRows == 4, "one case per row count");
  switch (g.rows) {
    case 1: return gemv_q8<1, Bits>(g, n0, n1);
    case 2: return gemv_q8<2, Bits>(g, n0, n1);
    case 3: return gemv_q8<3, Bits>(g, n0, n1);
    default: return gemv_q8<4, Bits>(g, n0, n1);
  }
}

void gemv_q8_any(const NbitsQ8Args& g, int64_t n0, int64_t n1) {
  if (g.bits == 4) return gemv_q8_rows<4>(g, n0, n1);
  gemv_q8_rows<8>(g, n0, n1);
}

}  // namespace

void fill_nbits_q8_vnni_avx512(NbitsTable& t) { t.gemv_q8 = gemv_q8_any; }

}  // namespace octet::cpu
