// The float attention kernel's (attention.cpp) two transposes under AVX-512, in their own
// unit because they use AVX-512 intrinsics (attention.cpp is compiled for every level and
// picks one at run time): K^T into blocks of 16 keys, and a tile's 8 query rows.
#pragma once

#include <cstdint>

namespace octet::cpu {

// kt[(j / 16) * head_k * 16 + d * 16 + j % 16] = k[j * k_stride + d] for j < kv_len, d < head_k.
// Leaves the padded key columns of the last block (j >= kv_len) as they are.
void attention_pack_kt_avx512(const float* k, int64_t k_stride, int64_t kv_len, int64_t head_k, float* kt);

// qt[d * 8 + r] = rows[r][d] for r < 8, d < head_k.
void attention_transpose_q8_avx512(const float* const rows[8], int64_t head_k, float* qt);

}  // namespace octet::cpu
