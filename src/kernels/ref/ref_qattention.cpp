// Reference kernel for octet.QAttention (docs/quantization.md section 2; op rule in
// src/ops/octet_attention.cpp), and the quantization-parameter checks every QAttention
// kernel shares (ref_attention.h).
//
// Literal: Q, K and V are quantized per tensor as QuantizeLinear does and kept centered
// (q - zero_point); for each (batch, head, query row) the Q.K^T dot products and the P.V
// sums accumulate exactly in int64, and only the scaling is float. The float steps are
// written in the order the formula reads, in float32,
//     s_j = scale * (q_scale * k_scale * acc_j) + mask        (each product rounded)
//     y   = p_scale * v_scale * acc
// so an optimized kernel that evaluates the same products in the same order gets the same
// scores and outputs bit for bit; the softmax between them runs in double (as the
// reference Softmax does) and is rounded to float32 before P is quantized. What remains
// between this kernel and an optimized one is the softmax's last bits, which can move a
// p_j / p_scale that lies within a few ulps of a .5 boundary to the next quantum
// (tests/unit/cpu_qattention_test.cpp bounds how often).
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/ref/ref_attention.h"
#include "kernels/ref/ref_families.h"

namespace octet {

QAttentionParams qattention_params(const KernelContext& ctx) {
  static const char* names[] = {"q", "k", "v", "p"};
  QAttentionParams out;
  const int64_t rows = ctx.node().attr_int("row_probabilities", 0);
  if (rows != 0 && rows != 1) ctx.fail("row_probabilities must be 0 or 1, got ", rows);
  out.row_probabilities = rows == 1;
  QuantParam* params[] = {&out.q, &out.k, &out.v, &out.p};
  for (int t = 0; t < 4; ++t) {
    const Tensor& scale = ctx.input(4 + 2 * t);
    const Tensor& zp = ctx.input(5 + 2 * t);
    if (scale.dtype() != DType::Float32 || scale.numel() != 1 || scale.rank() > 1)
      ctx.fail(names[t], "_scale ", scale.describe(), " must be one float32 (per-tensor quantization)");
    const bool p_int16 = t == 3 && zp.dtype() == DType::Int16;
    if ((zp.dtype() != DType::UInt8 && zp.dtype() != DType::Int8 && !p_int16) || zp.numel() != 1 || zp.rank() > 1)
      ctx.fail(names[t], "_zero_point ", zp.describe(), " must be one uint8 or int8 (or, for p, int16 0)");
    QuantParam& p = *params[t];
    p.scale = scale.data<float>()[0];
    if (p_int16) {  // P's 16-bit levels: centered values are the levels themselves
      if (zp.data<int16_t>()[0] != 0) ctx.fail("p_zero_point ", zp.describe(), ": an int16 zero point must be 0");
      p.zero_point = 0, p.lo = -32768, p.hi = 32767;
      continue;
    }
    const bool is_signed = zp.dtype() == DType::Int8;
    p.zero_point = is_signed ? zp.data<int8_t>()[0] : zp.data<uint8_t>()[0];
    p.lo = (is_signed ? -128 : 0) - p.zero_point;
    p.hi = (is_signed ? 127 : 255) - p.zero_point;
  }
  return out;
}

namespace {

// The whole tensor quantized and centered.
std::vector<int32_t> quantize_centered(const Tensor& x, const QuantParam& p) {
  std::vector<int32_t> out(static_cast<size_t>(x.numel()));
  const float* px = x.data<float>();
  for (size_t i = 0; i < out.size(); ++i) out[i] = p.centered(px[i]);
  return out;
}

void qattention_kernel(KernelContext& ctx) {
  const AttentionShape a = attention_shape(ctx);
  if (ctx.input(0).dtype() != DType::Float32)
    ctx.fail("Q, K, V and the mask must be float32, got Q ", ctx.input(0).describe());
  const QAttentionParams qp = qattention_params(ctx);
  const Tensor* mask = ctx.optional_input(3);
  Tensor& y = ctx.allocate_output(0, DType::Float32, a.out_shape);
  const std::vector<int32_t> qc = quantize_centered(ctx.input(0), qp.q), kc = quantize_centered(ctx.input(1), qp.k),
                             vc = quantize_centered(ctx.input(2), qp.v);
  const float* pm = mask ? mask->data<float>() : nullptr;
  float* py = y.mutable_data<float>();
  const float scale = static_cast<float>(a.scale), lowest = std::numeric_limits<float>::lowest();
  std::vector<float> s(static_cast<size_t>(a.kv_len));
  std::vector<int32_t> pc(static_cast<size_t>(a.kv_len));
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      for (int64_t i = 0; i < a.q_len; ++i) {
        const int32_t* qi = qc.data() + a.q_off + b * a.q_b + i * a.q_s + h * a.head_k;
        for (int64_t j = 0; j < a.kv_len; ++j) {
          const int32_t* kj = kc.data() + a.k_off + b * a.k_b + j * a.k_s + h * a.head_k;
          int64_t acc = 0;
          for (int64_t d = 0; d < a.head_k; ++d) acc += int64_t{qi[d]} * kj[d];
          s[j] = scale * (qp.q.scale * qp.k.scale * static_cast<float>(acc));
          if (pm) s[j] += pm[b * a.m_b + h * a.m_h + i * a.m_q + j * a.m_k];
          if (a.causal && j > a.last_key(i)) s[j] = lowest;
        }
        double mx = -INFINITY, sum = 0;
        for (float x : s) mx = std::max(mx, static_cast<double>(x));
        for (float x : s) sum += std::exp(x - mx);
        const double norm = qp.row_probabilities ? 1.0 : sum;  // rows: exp(s - max), divided below
        for (int64_t j = 0; j < a.kv_len; ++j)
          pc[j] = qp.p.centered(static_cast<float>(std::exp(s[j] - mx) / norm));
        float* yi = py + b * a.y_b + i * a.y_s + h * a.head_v;
        for (int64_t d = 0; d < a.head_v; ++d) {
          int64_t acc = 0;
          const int32_t* vd = vc.data() + a.v_off + b * a.v_b + h * a.head_v + d;
          for (int64_t j = 0; j < a.kv_len; ++j) acc += int64_t{pc[j]} * vd[j * a.v_s];
          yi[d] = qp.p.scale * qp.v.scale * static_cast<float>(acc);
          if (qp.row_probabilities) yi[d] /= static_cast<float>(sum);
        }
      }
    }
  }
}

}  // namespace

void register_ref_qattention(KernelRegistry& r) { r.add("octet", "QAttention", qattention_kernel); }

}  // namespace octet
