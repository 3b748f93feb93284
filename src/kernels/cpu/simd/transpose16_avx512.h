// In-register transpose of a 16 x 16 matrix of 32-bit elements (r[a] lane c -> r[c] lane a),
// shared by the kernels that need one: QAttention's K packing (int32 quads of key bytes) and
// grouped attention's 16-key score sums (floats, bit-cast). Pairs of rows, then quads,
// interleaved within 128-bit lanes, then the 4 x 4 matrix of 128-bit lanes: 64 shuffles.
// Include only from files compiled with the AVX-512 flags (*_avx512.cpp).
#pragma once

#include <immintrin.h>

namespace octet::cpu {

__attribute__((always_inline)) inline void transpose16x16_epi32(__m512i (&r)[16]) {
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  __m512i u[16];  // u[4 g + k] lane L: column 4 L + k of rows 4 g .. 4 g + 3
  for (int g = 0; g < 4; ++g) {
    u[4 * g] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  for (int k = 0; k < 4; ++k) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0x44);
    const __m512i v1 = _mm512_shuffle_i32x4(u[k], u[4 + k], 0xEE);
    const __m512i v2 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0x44);
    const __m512i v3 = _mm512_shuffle_i32x4(u[8 + k], u[12 + k], 0xEE);
    r[k] = _mm512_shuffle_i32x4(v0, v2, 0x88);
    r[4 + k] = _mm512_shuffle_i32x4(v0, v2, 0xDD);
    r[8 + k] = _mm512_shuffle_i32x4(v1, v3, 0x88);
    r[12 + k] = _mm512_shuffle_i32x4(v1, v3, 0xDD);
  }
}

}  // namespace octet::cpu
