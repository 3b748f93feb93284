// AVX-512 transposes of the float attention kernel (attention_pack.h): 16 x 16 blocks in
// registers instead of one scalar load and store per value. On DINOv2-S's heads (257 keys x
// 64 channels) the scalar K^T packing and query transposes were ~9% of the kernel's time.
// Pure data movement: the kernel's results keep every bit.
#include "kernels/cpu/attention_pack.h"

// GCC 12's intrinsics headers start some shuffles from an undefined vector, which its
// inliner then reports as maybe-uninitialized (a false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/cpu/simd/transpose16_avx512.h"

namespace octet::cpu {

void attention_pack_kt_avx512(const float* k, int64_t k_stride, int64_t kv_len, int64_t head_k, float* kt) {
  const int64_t full_keys = kv_len / 16 * 16, full_d = head_k / 16 * 16;
  for (int64_t j0 = 0; j0 < full_keys; j0 += 16) {
    float* block = kt + j0 * head_k;  // (j0 / 16) * head_k * 16
    for (int64_t d0 = 0; d0 < full_d; d0 += 16) {
      __m512i r[16];
      for (int a = 0; a < 16; ++a) r[a] = _mm512_castps_si512(_mm512_loadu_ps(k + (j0 + a) * k_stride + d0));
      transpose16x16_epi32(r);  // r[c] lane a: key j0 + a, channel d0 + c
      for (int c = 0; c < 16; ++c) _mm512_storeu_si512(block + (d0 + c) * 16, r[c]);
    }
    for (int64_t a = 0; a < 16; ++a)
      for (int64_t d = full_d; d < head_k; ++d) block[d * 16 + a] = k[(j0 + a) * k_stride + d];
  }
  for (int64_t j = full_keys; j < kv_len; ++j) {
    float* dst = kt + full_keys * head_k + j % 16;
    for (int64_t d = 0; d < head_k; ++d) dst[d * 16] = k[j * k_stride + d];
  }
}

void attention_transpose_q8_avx512(const float* const rows[8], int64_t head_k, float* qt) {
  const int64_t full_d = head_k / 16 * 16;
  for (int64_t d0 = 0; d0 < full_d; d0 += 16) {
    __m512i r[16];
    for (int a = 0; a < 8; ++a) r[a] = _mm512_castps_si512(_mm512_loadu_ps(rows[a] + d0));
    for (int a = 8; a < 16; ++a) r[a] = _mm512_setzero_si512();
    transpose16x16_epi32(r);  // r[c] lanes 0-7: channel d0 + c of rows 0-7
    for (int c = 0; c < 16; ++c)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qt + (d0 + c) * 8), _mm512_castsi512_si256(r[c]));
  }
  for (int64_t d = full_d; d < head_k; ++d)
    for (int64_t r = 0; r < 8; ++r) qt[d * 8 + r] = rows[r][d];
}

}  // namespace octet::cpu
