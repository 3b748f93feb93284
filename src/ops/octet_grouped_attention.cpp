// octet.GroupedAttention and octet.CachedAttention: attention over a KV cache as decoders
// with past write it (Llama's GQA with repeat_kv, GPT-2's MHA), written by the
// fuse_grouped_attention pass (src/passes/rewrites/fuse_grouped_attention.cpp) and, for the
// in-place form, by the in-place decoder runner (src/generate/in_place_kv_runner.cpp).
//
//   octet.GroupedAttention(Q, K, V [, mask] [, keep]) scale [, fill] -> Y
//
//   Q [B, H, S, D]: the queries, heads split (RoPE already applied).
//   K [B, G, T, D], V [B, G, T, Dv]: the keys and values of all T = past + S positions
//     (the model's present.N.key / .value), G key/value heads; query head h reads K/V head
//     h / (H / G) (transformers' repeat_kv order). H must be a multiple of G.
//   mask (optional, float32): additive, broadcastable (numpy, right-aligned, rank <= 4)
//     to [B, H, S, T]: Llama's [B, 1, S, T] causal + padding mask, GPT-2's [B, 1, 1, T].
//   keep (optional, bool): broadcastable the same way; where false the score is replaced
//     by `fill` before the mask is added (GPT-2's Where(causal, s, finfo.min)).
//   scale (float, required) multiplies Q.K^T.
//   Y [B, S, H*Dv]: the heads merged back (the Transpose + Reshape after P.V).
//
// Per (b, h, i), in float32 with a double-free max-subtracted softmax:
//     s_j = scale * (q_i . k_j);  s_j = keep ? s_j : fill;  s_j += mask;  p = softmax(s)
//     y_i = sum_j p_j v_j
// exactly the decomposed graph's order of operations.
//
//   octet.CachedAttention(Q, K_new, V_new, K_cache, V_cache, past_length [, mask] [, keep])
//     scale [, fill] -> Y
//
// The in-place form, run only by the in-place decoder runner: K_new [B, G, S, D] and
// V_new [B, G, S, Dv] are this step's rows; K_cache [B, G, C, D] and V_cache [B, G, C, Dv]
// are buffers the runner owns (capacity C >= past_length + S), whose first past_length rows
// hold the past. The op WRITES the new rows into the caches at [past_length, past_length+S)
// (a side effect on its inputs: the cache is never copied) and then computes what
// GroupedAttention computes on K = K_cache[:, :, :past_length + S]. past_length is an int64
// scalar or [1]. Both ops are float32 only.
//
// Static int8 attention (octet quantize's default --attention int8 on a decoder, whose
// caches no int8 op reads) keeps its rounding: eight more optional inputs after keep,
//   q_scale, q_zero_point, k_scale, k_zero_point, v_scale, v_zero_point, p_scale, p_zero_point
// (per-tensor: float32 scalar scales, int8/uint8 scalar zero points; a zero point may be
// omitted: uint8 0), fake-quantize Q, K, V and the probabilities as QuantizeLinear +
// DequantizeLinear would: fq(x) = (saturate(round_half_even(x / scale) + zp) - zp) * scale.
// Then s_j = scale * (fq(q_i) . fq(k_j)), the keep fill and mask as above, and with the
// attribute row_probabilities = 0 (a Softmax then Q/DQ): p = fq_p(softmax(s)),
// y_i = sum_j p_j fq(v_j); with row_probabilities = 1 (the quantizer's per-row form):
// e_j = exp(s_j - max s), y_i = (sum_j fq_p(e_j) fq(v_j)) / sum_j e_j. Written by
// fuse_qbmm_attention for the decoder's attention over a cache.
#include <optional>

#include "ops/math_helpers.h"
#include "ops/op_families.h"

namespace octet {
namespace {

using math::describe_input;

std::optional<int64_t> known(const std::optional<DimVector>& d, size_t axis) {
  if (!d || d->size() <= axis) return std::nullopt;
  return (*d)[axis].constant();
}

void require_f32(InferContext& ctx, size_t i) {
  if (ctx.input_dtype(i) != DType::Float32) ctx.fail(describe_input(ctx, i), " must be float32");
}

void require_rank(InferContext& ctx, size_t i, size_t rank, const char* layout) {
  if (ctx.input_dims(i) && ctx.input_dims(i)->size() != rank)
    ctx.fail(describe_input(ctx, i), " must have rank ", rank, " (", layout, ")");
}

void require_equal(InferContext& ctx, const std::optional<DimVector>& a, size_t ai, const std::optional<DimVector>& b,
                   size_t bi, const std::string& what) {
  auto x = known(a, ai), y = known(b, bi);
  if (x && y && *x != *y) ctx.fail(what, ": ", *x, " vs ", *y);
}

// The optional mask (float32) and keep (bool) inputs at `first`, `first + 1`: rank <= 4.
void check_masks(InferContext& ctx, size_t first) {
  // The fake quantization inputs after mask and keep: scales float32, zero points 8-bit
  // (the probabilities' may be int16: more than 255 levels).
  for (size_t i = first + 2; i < first + 10 && i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const bool zero_point = (i - first) % 2 == 1;
    const DType t = ctx.input_dtype(i);
    const bool p_int16 = i == first + 9 && t == DType::Int16;
    if (zero_point ? (t != DType::Int8 && t != DType::UInt8 && !p_int16) : t != DType::Float32)
      ctx.fail(describe_input(ctx, i), zero_point ? " must be int8 or uint8 (a zero point; int16 for the probabilities')"
                                                  : " must be float32 (a scale)");
  }
  auto has = [&](size_t i) { return i < ctx.num_inputs() && ctx.has_input(i); };
  if (ctx.num_inputs() > first + 2 && !(has(first + 2) && has(first + 4) && has(first + 6) && has(first + 8)))
    ctx.fail("fake quantization needs all four scales (Q, K, V, probabilities)");
  if (ctx.has_input(first)) {
    require_f32(ctx, first);
    if (ctx.input_dims(first) && ctx.input_dims(first)->size() > 4)
      ctx.fail(describe_input(ctx, first), " must have rank <= 4 (it broadcasts to [B, H, S, T])");
  }
  if (ctx.has_input(first + 1)) {
    if (ctx.input_dtype(first + 1) != DType::Bool) ctx.fail(describe_input(ctx, first + 1), " must be bool");
    if (ctx.input_dims(first + 1) && ctx.input_dims(first + 1)->size() > 4)
      ctx.fail(describe_input(ctx, first + 1), " must have rank <= 4 (it broadcasts to [B, H, S, T])");
    if (!ctx.node().has_attr("fill")) ctx.fail("a keep input needs the fill attribute");
  }
}

// Q [B, H, S, D], keys (input k) [B, G, ., D], values (input v) [B, G, ., Dv] -> Y.
void infer_common(InferContext& ctx, size_t k, size_t v, size_t masks) {
  if (!ctx.node().has_attr("scale")) ctx.fail("the scale attribute is required");
  for (size_t i : {size_t{0}, k, v}) {
    require_f32(ctx, i);
    require_rank(ctx, i, 4, "[batch, heads, sequence, head_size]");
  }
  check_masks(ctx, masks);
  const auto &q = ctx.input_dims(0), &kd = ctx.input_dims(k), &vd = ctx.input_dims(v);
  require_equal(ctx, q, 3, kd, 3, "Q and K head sizes differ");
  require_equal(ctx, kd, 1, vd, 1, "K and V key/value head counts differ");
  require_equal(ctx, q, 0, kd, 0, "Q and K batch sizes differ");
  auto heads = known(q, 1), groups = known(kd, 1);
  if (heads && groups && (*groups < 1 || *heads % *groups != 0))
    ctx.fail("Q's ", *heads, " heads are not a multiple of K/V's ", *groups, " key/value heads");
  if (!q || !vd) {
    ctx.set_output(0, DType::Float32, std::nullopt);
    return;
  }
  ctx.set_output(0, DType::Float32, DimVector{(*q)[0], (*q)[2], (*q)[1] * (*vd)[3]});
}

void infer_grouped_attention(InferContext& ctx) {
  if (ctx.num_inputs() < 3 || ctx.num_inputs() > 13)
    ctx.fail("takes Q, K, V, optional mask and keep inputs and optional fake quantization (8 inputs)");
  require_equal(ctx, ctx.input_dims(1), 2, ctx.input_dims(2), 2, "K and V lengths differ");
  infer_common(ctx, 1, 2, 3);
}

void infer_cached_attention(InferContext& ctx) {
  if (ctx.num_inputs() < 6 || ctx.num_inputs() > 16)
    ctx.fail("takes Q, K_new, V_new, K_cache, V_cache, past_length, optional mask and keep inputs and optional "
             "fake quantization (8 inputs)");
  infer_common(ctx, 3, 4, 6);
  for (size_t i : {size_t{1}, size_t{2}}) {
    require_f32(ctx, i);
    require_rank(ctx, i, 4, "[batch, kv_heads, new_tokens, head_size]");
  }
  const auto &q = ctx.input_dims(0), &kn = ctx.input_dims(1), &vn = ctx.input_dims(2);
  const auto &kc = ctx.input_dims(3), &vc = ctx.input_dims(4);
  require_equal(ctx, kn, 1, kc, 1, "K_new and K_cache head counts differ");
  require_equal(ctx, kn, 3, kc, 3, "K_new and K_cache head sizes differ");
  require_equal(ctx, vn, 3, vc, 3, "V_new and V_cache head sizes differ");
  require_equal(ctx, q, 2, kn, 2, "Q and K_new token counts differ");
  require_equal(ctx, kc, 2, vc, 2, "K_cache and V_cache capacities differ");
  if (ctx.input_dtype(5) != DType::Int64) ctx.fail(describe_input(ctx, 5), " must be int64");
  if (const auto& p = ctx.input_dims(5)) {
    bool one = p->size() <= 1;
    if (one && p->size() == 1)
      if (auto c = (*p)[0].constant()) one = *c == 1;
    if (!one) ctx.fail(describe_input(ctx, 5), " must hold one value (the cached token count)");
  }
}

}  // namespace

void register_octet_grouped_attention_op(OpRegistry& r) {
  r.add({"octet", "GroupedAttention", infer_grouped_attention});
  r.add({"octet", "CachedAttention", infer_cached_attention});
}

}  // namespace octet
