// One octet.GroupedAttention / octet.CachedAttention call (ops defined in
// src/ops/octet_grouped_attention.cpp), checked once from the concrete inputs and shared by
// the reference kernel (ref_grouped_attention.cpp) and the optimized one
// (kernels/cpu/grouped_attention.cpp): both read the same layout, reject the same inputs
// with the same messages, and the cached form's cache write happens in one place.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/kernel.h"

namespace octet {

// One per-tensor fake quantization (QuantizeLinear then DequantizeLinear).
struct FakeQuantParams {
  float scale = 1;
  int32_t zero = 0, lo = 0, hi = 255;
  float operator()(float x) const {
    const float q = std::nearbyint(x / scale);  // round half to even (the default mode)
    const float r = q != q ? float(zero) : std::min(std::max(q + float(zero), float(lo)), float(hi));
    return (r - float(zero)) * scale;
  }
};

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
  // Static int8 attention (the fake quantization inputs): Q, K, V and the probabilities
  // rounded as Q/DQ pairs would; row_probabilities: exp(s - max) is rounded and the sum
  // divides after the product (see the op's definition).
  bool quantized = false, row_probabilities = false;
  FakeQuantParams fq_q, fq_k, fq_v, fq_p;

  int64_t group_of(int64_t h) const { return h / (heads / groups); }
};

// Validates the node's inputs and attributes. For octet.CachedAttention it also writes
// K_new / V_new into the caches at [past_length, past_length + S) (the op's side effect),
// so the returned call reads the caches' first past_length + S rows.
GroupedAttentionCall grouped_attention_call(const KernelContext& ctx);

}  // namespace octet
