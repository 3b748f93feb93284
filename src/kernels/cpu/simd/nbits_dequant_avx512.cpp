// The AVX-512 MatMulNBits prefill dequantization (NbitsDequantArgs in nbits_table.h): 32
// weights per step from 16 bytes (int4: low and high nibbles interleaved back into order
// with byte unpacks) or 32 bytes (int8), widened to int32, converted and scaled with one FMA.
// The prefill panel it fills is then multiplied by sgemm, so this only has to stay well
// under sgemm's time per weight (M multiply-adds each); the scalar loop it replaces did not.
// Compiled with the AVX-512 flags (file-name suffix, see CMakeLists.txt).
// gcc 12's -Wmaybe-uninitialized on the widening intrinsics' _undefined_ operand (as in the
// other nbits files).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/simd/nbits_table.h"

namespace octet::cpu {

namespace {

inline void store16(__m128i codes, __m512 s, __m512 zs, float* dst) {
  _mm512_storeu_ps(dst, _mm512_fmsub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(codes)), s, zs));
}

void dequant_avx512(const NbitsDequantArgs& g, int64_t n, float* dst) {
  const int64_t blob = g.block * g.bits / 8;
  const __m128i low4 = _mm_set1_epi8(0x0f);
  for (int64_t kb = 0; kb < g.k_blocks; ++kb) {
    const int64_t cell = n * g.k_blocks + kb, len = std::min(g.block, g.K - kb * g.block);
    const uint8_t* q = g.b + cell * blob;
    float* out = dst + kb * g.block;
    const __m512 s = _mm512_set1_ps(g.scales[cell]), zs = _mm512_set1_ps(g.zero_scales[cell]);
    int64_t c = 0;
    for (; c + 32 <= len; c += 32) {
      if (g.bits == 4) {
        const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + c / 2));
        const __m128i lo = _mm_and_si128(packed, low4), hi = _mm_and_si128(_mm_srli_epi16(packed, 4), low4);
        store16(_mm_unpacklo_epi8(lo, hi), s, zs, out + c);
        store16(_mm_unpackhi_epi8(lo, hi), s, zs, out + c + 16);
      } else {
        store16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + c)), s, zs, out + c);
        store16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + c + 16)), s, zs, out + c + 16);
      }
    }
    nbits_dequant_span(q, g.bits, g.scales[cell], g.zero_scales[cell], c, len, out);
  }
}

}  // namespace

void fill_nbits_dequant_avx512(NbitsTable& t) { t.dequant = dequant_avx512; }

}  // namespace octet::cpu
