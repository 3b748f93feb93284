// The MatMulNBits prefill dequantization from the panel layout (nbits_packed.h), AVX-512:
// one 64-byte load holds 16 columns x 4 values of k (8-bit codes) or x 8 (4-bit codes, low
// nibbles k..k+3, high nibbles k+4..k+7), so each value of k is a shift and a mask of the
// load's 16 int32 lanes, and a row of the [K, 16] output is one store. The block's 16
// column scales are one load. code * scale - zero * scale in one FMA, as the file-layout
// dequantization (nbits_dequant_avx512.cpp) computes it.
// Compiled with the AVX-512 flags (file-name suffix, see CMakeLists.txt).
// gcc 12's -Wmaybe-uninitialized on the intrinsics' _undefined_ operand (as in the other
// nbits files).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/simd/nbits_packed.h"

namespace octet::cpu {

void dequant_packed_panel_avx512(const NbitsPacked& w, int64_t panel, int64_t K, float* dst, int64_t ldd) {
  const __m512i low16 = _mm512_set1_epi32(0xffff);
  const __m512i mask = _mm512_set1_epi32(w.bits == 8 ? 0xff : 0x0f);
  const int per_load = w.bits == 8 ? 4 : 8;  // values of k in one 64-byte load
  for (int64_t kb = 0; kb < w.k_blocks; ++kb) {
    const uint8_t* p = w.stream.raw() + (panel * w.k_blocks + kb) * w.block_bytes;
    const __m512 scale = _mm512_loadu_ps(reinterpret_cast<const float*>(p + w.codes_bytes));
    const __m512 zero = w.uniform_zero ? _mm512_set1_ps(static_cast<float>(w.zero))
                                       : _mm512_cvtepi32_ps(_mm512_and_si512(
                                             _mm512_loadu_si512(p + w.codes_bytes + kNbitsPanel * 4), low16));
    const __m512 zero_scale = _mm512_mul_ps(zero, scale);
    const int64_t k0 = kb * w.block, len = std::min(w.block, K - k0);
    for (int64_t g = 0; g * per_load < len; ++g) {
      const __m512i codes = _mm512_loadu_si512(p + 64 * g);
      for (int j = 0; j < per_load; ++j) {
        // 8-bit: byte j of each lane; 4-bit: j < 4 the low nibble of byte j, else the high one of byte j - 4.
        const int k = static_cast<int>(g) * per_load + j;
        if (k >= len) break;
        const int shift = w.bits == 8 ? 8 * j : (j < 4 ? 8 * j : 8 * (j - 4) + 4);
        const __m512i q = _mm512_and_si512(_mm512_srli_epi32(codes, static_cast<unsigned>(shift)), mask);
        _mm512_storeu_ps(dst + (k0 + k) * ldd, _mm512_fmsub_ps(_mm512_cvtepi32_ps(q), scale, zero_scale));
      }
    }
  }
}

}  // namespace octet::cpu
