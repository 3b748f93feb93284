// Shapes and strides of one octet.Attention call (op defined in src/ops/octet_attention.cpp),
// checked once from the concrete inputs and shared by the reference kernel
// (ref_attention.cpp) and the optimized one (kernels/cpu/attention.cpp), so both read the
// same layout and reject the same inputs with the same messages.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/kernel.h"

namespace octet {

struct AttentionShape {
  int64_t batch = 0, heads = 0, q_len = 0, kv_len = 0, head_k = 0, head_v = 0;
  bool causal = false, seq_first = false;
  double scale = 1;
  // Element offsets of row (b, s) of Q/K/V/Y: *_off + b * *_b + s * *_s; the row's H*D
  // channels are contiguous. seq_first only changes the strides; *_off is the first
  // channel of the node's channel_ranges (0 without), which kernels add to the input's
  // data pointer.
  int64_t q_b = 0, q_s = 0, k_b = 0, k_s = 0, v_b = 0, v_s = 0, y_b = 0, y_s = 0;
  int64_t q_off = 0, k_off = 0, v_off = 0;
  // The mask's strides along [B, H, Sq, Sk]; 0 on the axes it broadcasts over.
  bool has_mask = false;
  int64_t m_b = 0, m_h = 0, m_q = 0, m_k = 0;
  // The Y shape to allocate.
  std::vector<int64_t> out_shape;

  // Causal: the last key query row i may see.
  int64_t last_key(int64_t i) const { return i + (kv_len - q_len); }
};

// Validates the node's inputs and attributes; errors name the node.
AttentionShape attention_shape(const KernelContext& ctx);

// The lowest finite value of a float dtype (what a causal fill uses), as a double.
double attention_lowest(DType t);

// ---- octet.QAttention (docs/quantization.md section 2; ref_qattention.cpp)

// One per-tensor quantization: a float32 scale and a uint8/int8 zero point. Kernels keep
// quantized values centered (q - zero_point), so only the range they saturate to,
// [lo, hi] = [type min - zp, type max - zp], depends on the zero point: within [-255, 255].
struct QuantParam {
  float scale = 1;
  int32_t zero_point = 0, lo = 0, hi = 0;

  // QuantizeLinear(x) - zero_point: saturate(round_half_to_even(x / scale) + zp) - zp, with
  // x / scale a float32 division; NaN quantizes to the zero point (as ref_quant.cpp).
  int32_t centered(float x) const {
    const float r = std::nearbyint(x / scale);
    if (std::isnan(r)) return 0;
    return r < static_cast<float>(lo) ? lo : r > static_cast<float>(hi) ? hi : static_cast<int32_t>(r);
  }
};

struct QAttentionParams {
  QuantParam q, k, v, p;
  // row_probabilities = 1: p quantizes exp(s - rowmax) (each row peaks at 1) and the
  // product with V is divided by the row's sum afterwards: P with a scale per row.
  bool row_probabilities = false;
};

// Reads and checks inputs 4..11 (float32 scales, uint8/int8 zero points, one element each;
// P's may be int16 0, see ops/octet_attention.cpp); errors name the node.
QAttentionParams qattention_params(const KernelContext& ctx);

}  // namespace octet
