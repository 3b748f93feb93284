// octet.Attention: multi-head scaled dot-product attention as one op, the form the
// fuse_attention pass (src/passes/rewrites/fuse_attention.cpp) writes for the chains
// exporters emit (Reshape/Transpose per head, MatMul, scale, mask, Softmax, MatMul,
// Transpose/Reshape back).
//
//   octet.Attention(Q, K, V [, mask]) num_heads, scale, causal, seq_first -> Y
//
//   Q [B, Sq, H*Dk], K [B, Sk, H*Dk], V [B, Sk, H*Dv]: the projections' outputs before
//     the head split; head h owns channels [h*D, (h+1)*D) of the last axis. With
//     seq_first=1 the first two axes are swapped ([Sq, B, .], nn.MultiheadAttention's
//     layout) for Q, K, V and Y alike.
//   mask (optional): an additive mask of Q's type, rank <= 4, broadcastable (numpy,
//     right-aligned) to [B, H, Sq, Sk]; BERT's [B, 1, 1, Sk] padding mask is one.
//   num_heads (int, required) H >= 1, dividing both channel counts.
//   scale (float; default 1/sqrt(Dk)) multiplies Q.K^T.
//   causal (int 0/1, default 0): query i sees key j only when j <= i + (Sk - Sq).
//   channel_ranges (ints [qb, qe, kb, ke, vb, ve], optional): Q, K and V use channels
//     [b, e) of their last axis only, as if each were Slice(axes=[-1]) of its input; the
//     fuse_attention_slices pass writes it so the three can read one packed QKV
//     projection in place. Absent: every channel. 0 <= b < e <= the axis length.
//   Y [B, Sq, H*Dv] (or [Sq, B, H*Dv] with seq_first=1).
//
// Per batch b, head h and query row i, in float32 (float64 for float64 inputs; float16
// and bfloat16 compute in float32 and round once at the end):
//     s_j = scale * (q_i . k_j) + mask[b, h, i, j]
//     s_j = lowest finite value of the type     where causal hides j
//     p   = softmax(s)  (max-subtracted),   y_i = sum_j p_j v_j
// This is what the decomposed graph computes, masked entries included: a padding mask
// adds finfo.min, which absorbs any ordinary score, so a row whose keys are all masked
// holds equal scores and gets the uniform average of V, as the original Softmax gives;
// the causal fill is exactly the Where(mask, finfo.min, s) GPT-2 exports.
//
//   octet.QAttention(Q, K, V, mask?, q_scale, q_zero_point, k_scale, k_zero_point,
//                    v_scale, v_zero_point, p_scale, p_zero_point) -> Y
//
// The int8 form (docs/quantization.md section 2): the same inputs, attributes and shapes,
// float32 only, plus a per-tensor float32 scale and uint8/int8 zero point for Q, K, V and
// the softmax output P (all eight required; the mask slot may be empty). Q, K and V are
// quantized as QuantizeLinear does, the dot products accumulate exactly in integers, and
// P is quantized before the integer product with V: what the fake-quant graph computes.
// row_probabilities (int 0/1, default 0): P's quantization reads exp(s - rowmax) instead
// of P (p_scale is then that of [0, 1]: every row peaks at exactly 1) and each output row
// is divided by its sum of exp afterwards, as octet quantize --attention int8 writes
// the softmax out: ReduceMax, Sub, Exp, Q/DQ, MatMul, Div by ReduceSum.
#include <cmath>
#include <optional>

#include "ops/math_helpers.h"
#include "ops/op_families.h"

namespace octet {
namespace {

using math::describe_input;

// Known dims must be equal; unknown (symbolic) ones are trusted until run time.
void require_same_dim(InferContext& ctx, const Dim& a, const Dim& b, const std::string& what) {
  auto ca = a.constant(), cb = b.constant();
  if (ca && cb && *ca != *cb) ctx.fail(what, ": ", *ca, " vs ", *cb);
}

void require_divisible(InferContext& ctx, const Dim& channels, int64_t heads, size_t input) {
  auto c = channels.constant();
  if (c && *c % heads != 0)
    ctx.fail(describe_input(ctx, input), ": ", *c, " channels do not split into num_heads = ", heads, " heads");
}

// The rule octet.Attention and octet.QAttention share: inputs 0..3 are Q, K, V and the
// optional mask; the attributes, shapes and output are the same for both ops.
void infer_attention_core(InferContext& ctx) {
  using namespace math;
  require_type(ctx, 0, is_float_type, kFloatTypes);
  require_same_type(ctx, 0, 1);
  require_same_type(ctx, 0, 2);
  const bool has_mask = ctx.has_input(3);
  if (has_mask) require_same_type(ctx, 0, 3);
  const int64_t heads = ctx.node().attr_int("num_heads", 0);
  if (heads < 1) ctx.fail("num_heads must be >= 1, got ", heads);
  const bool seq_first = attr_flag(ctx, "seq_first", false);
  for (const char* flag : {"causal", "seq_first"}) {
    const int64_t v = ctx.node().attr_int(flag, 0);
    if (v != 0 && v != 1) ctx.fail(flag, " must be 0 or 1, got ", v);
  }

  for (size_t i = 0; i < 3; ++i)
    if (ctx.input_dims(i) && ctx.input_dims(i)->size() != 3)
      ctx.fail(describe_input(ctx, i), " must have rank 3 ([batch, seq, heads*head_size])");
  if (!ctx.input_dims(0) || !ctx.input_dims(1) || !ctx.input_dims(2)) {
    ctx.set_output(0, ctx.input_dtype(0), std::nullopt);
    return;
  }
  // Q, K, V as the op reads them: the channel ranges applied.
  std::optional<DimVector> q = ctx.input_dims(0), k = ctx.input_dims(1), v = ctx.input_dims(2);
  if (const Attribute* r = ctx.node().find_attr("channel_ranges")) {
    if (r->kind != Attribute::Kind::Ints || r->ints.size() != 6)
      ctx.fail("channel_ranges must be 6 ints [q_begin, q_end, k_begin, k_end, v_begin, v_end]");
    std::optional<DimVector>* qkv[] = {&q, &k, &v};
    for (size_t i = 0; i < 3; ++i) {
      const int64_t b = r->ints[2 * i], e = r->ints[2 * i + 1];
      Dim& channels = (**qkv[i])[2];
      const std::optional<int64_t> c = channels.constant();
      if (b < 0 || e <= b || (c && e > *c))
        ctx.fail("channel_ranges: [", b, ", ", e, ") is not a range of the ", channels, " channels of ",
                 describe_input(ctx, i));
      channels = Dim(e - b);
    }
  }
  const size_t b_axis = seq_first ? 1 : 0, s_axis = seq_first ? 0 : 1;
  require_same_dim(ctx, (*q)[b_axis], (*k)[b_axis], "Q and K batch sizes differ");
  require_same_dim(ctx, (*q)[b_axis], (*v)[b_axis], "Q and V batch sizes differ");
  require_same_dim(ctx, (*k)[s_axis], (*v)[s_axis], "K and V sequence lengths differ");
  require_same_dim(ctx, (*q)[2], (*k)[2], "Q and K channel counts differ");
  require_divisible(ctx, (*q)[2], heads, 0);
  require_divisible(ctx, (*v)[2], heads, 2);

  if (has_mask) {
    if (const auto& m = ctx.input_dims(3)) {
      if (m->size() > 4) ctx.fail(describe_input(ctx, 3), " must have rank <= 4 (it broadcasts to [B, H, Sq, Sk])");
      const DimVector full = {(*q)[b_axis], Dim(heads), (*q)[s_axis], (*k)[s_axis]};
      for (size_t i = 0; i < m->size(); ++i) {
        const Dim& md = (*m)[m->size() - 1 - i];
        const Dim& fd = full[3 - i];
        auto mc = md.constant(), fc = fd.constant();
        if (mc && *mc != 1 && fc && *mc != *fc)
          ctx.fail(describe_input(ctx, 3), " does not broadcast to [B, H, Sq, Sk] = [", full[0], ", ", full[1],
                   ", ", full[2], ", ", full[3], "]");
      }
    }
  }
  DimVector out = *q;
  out[2] = (*v)[2];
  ctx.set_output(0, ctx.input_dtype(0), out);
}

void infer_attention(InferContext& ctx) {
  if (ctx.num_inputs() < 3 || ctx.num_inputs() > 4) ctx.fail("takes Q, K, V and an optional mask");
  infer_attention_core(ctx);
}

// octet.QAttention's quantization parameters: inputs 4..11 are (scale, zero point) for
// Q, K, V and P, each a float32 scale and a uint8 or int8 zero point holding one element
// (a scalar or shape [1]; a symbolic dim is trusted until the kernel sees the tensor).
// P's zero point may also be int16 holding 0: probabilities quantized to more than 255
// levels (octet quantize writes exp(s - rowmax) with 4095), which the kernels' int16
// products take as they are.
void require_one_element(InferContext& ctx, size_t i) {
  const auto& dims = ctx.input_dims(i);
  if (!dims) return;
  bool ok = dims->size() <= 1;
  if (ok && dims->size() == 1)
    if (auto c = (*dims)[0].constant()) ok = *c == 1;
  if (!ok) ctx.fail(math::describe_input(ctx, i), " must be a scalar (per-tensor quantization)");
}

void infer_qattention(InferContext& ctx) {
  if (ctx.num_inputs() != 12)
    ctx.fail("takes Q, K, V, an optional mask and (scale, zero point) for Q, K, V and P: 12 inputs, got ",
             ctx.num_inputs());
  for (size_t i = 4; i < 12; ++i)
    if (!ctx.has_input(i)) ctx.fail(math::describe_input(ctx, i), ": all eight scales and zero points are required");
  math::require_dtype(ctx, 0, DType::Float32);
  for (size_t i = 4; i < 12; i += 2) {
    math::require_dtype(ctx, i, DType::Float32);
    const DType zp = ctx.input_dtype(i + 1);
    const bool p_int16 = i == 10 && zp == DType::Int16;  // P may have 16-bit levels (zero point 0)
    if (zp != DType::UInt8 && zp != DType::Int8 && !p_int16)
      ctx.fail(math::describe_input(ctx, i + 1), " has element type ", dtype_name(zp),
               "; QAttention zero points must be uint8 or int8 (int16 for P's)");
    require_one_element(ctx, i);
    require_one_element(ctx, i + 1);
  }
  infer_attention_core(ctx);
}

}  // namespace

void register_octet_attention_op(OpRegistry& r) {
  r.add({"octet", "Attention", infer_attention});
  r.add({"octet", "QAttention", infer_qattention});
}

}  // namespace octet
