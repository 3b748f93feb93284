// One octet.GroupedAttention / octet.CachedAttention call (ops defined in
// src/ops/octet_grouped_attention.cpp), checked once from the concrete inputs and shared by
// the reference kernel (ref_grouped_attention.cpp) and the optimized one
// (kernels/cpu/grouped_attention.cpp): both read the same layout, reject the same inputs
// with the same messages, and the cached form's cache write happens in one place.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel.h"

namespace octet {

struct GroupedAttentionCall {
  int64_t batch = 0, heads = 0, groups = 0, q_len = 0, kv_len = 0, head_k = 0, head_v = 0;
  float scale = 1, fill = 0;
  const float* q = nullptr;  // [B, H, S, Dk] contiguous
  // Row j of key/value head g of batch b: k + b * k_b + g * k_g + j * head_k (the cached
  // form's capacity makes k_g larger than kv_len * head_k).
  const float *k = nullptr, *v = nullptr;
  int64_t k_b = 0, k_g = 0, v_b = 0, v_g = 0;
  // The optional mask / keep inputs: strides along [B, H, S, T], 0 where they broadcast.
  const float* mask = nullptr;
  const uint8_t* keep = nullptr;
  int64_t m_str[4] = {0, 0, 0, 0}, k_str[4] = {0, 0, 0, 0};
  std::vector<int64_t> out_shape;  // [B, S, H*Dv]

  int64_t group_of(int64_t h) const { return h / (heads / groups); }
};

// Validates the node's inputs and attributes. For octet.CachedAttention it also writes
// K_new / V_new into the caches at [past_length, past_length + S) (the op's side effect),
// so the returned call reads the caches' first past_length + S rows.
GroupedAttentionCall grouped_attention_call(const KernelContext& ctx);

}  // namespace octet
