// The grouped-attention kernel's per-group row function (grouped_attention_avx512.cpp):
// every query head of key/value group g for query row i of batch b, at once.
#pragma once

#include <cstdint>

#include "kernels/cpu/vec_ops.h"
#include "kernels/ref/ref_grouped_attention.h"

namespace octet::cpu {

// scores: G * kv_len floats of scratch; y: the G heads' output rows, side by side
// (Y + (b * S + i) * H * D + g * G * D).
using GroupRowsFn = void (*)(const GroupedAttentionCall& c, const VecTable& vec, int64_t b, int64_t g, int64_t i,
                             float* scores, float* y);

// The AVX-512 function for Dk = Dv = head_size and heads_per_group query heads per group,
// or nullptr where it has none (other head sizes, more heads than its registers hold).
GroupRowsFn group_rows_avx512(int64_t head_size, int64_t heads_per_group);

}  // namespace octet::cpu
