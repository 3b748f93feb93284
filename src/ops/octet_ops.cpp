// Ops in the `octet` domain: the fused forms the optimizer writes (src/passes/rewrites).
//
//   octet.Gelu(X) approximate="none"|"tanh"
//       ONNX Gelu (opset 20) under a domain any model opset accepts: exporters still
//       write opset 17, where ai.onnx has no Gelu.
//   octet.MatMulBias(A, B[, bias][, residual]) activation=""|"gelu"|"gelu_tanh"
//       Y = MatMul(A, B) + bias with numpy MatMul semantics; B has rank >= 2 and bias is
//       1-D [N], N = B's last dim, added along the output's last axis. One op for every
//       rank, so a Linear layer is one node whether it runs on [M,K] or [batch,seq,K].
//       The bias may be absent (empty input 2): a bias-free Linear layer with a residual
//       (a Llama decoder's o_proj and down_proj, fuse_matmul_epilogue).
//       The epilogue, in this order (each rounds to the output type, as the ops it
//       replaces do): `activation` "gelu" is ONNX Gelu approximate="none" (erf),
//       "gelu_tanh" is Gelu approximate="tanh", "" (default) is none; then the optional
//       `residual` (A's type) is added as ONNX Add, broadcasting into Y's shape without
//       changing it (fuse_matmul_epilogue writes only residuals of Y's exact shape).
//       `split` (ints, summing to N; no residual then): one output per part, Y's columns
//       in order, as ONNX Split of the last axis would give them: a merged q/k/v
//       projection writing q, k and v itself (fuse_nbits_split).
//   octet.RMSNormalization(X, scale) axis, epsilon, stash_type
//       ONNX RMSNormalization (opset 23), for models whose opset predates it.
//   octet.ApplyRotary(X, cos, sin)
//       Y = X * cos + rotate_half(X) * sin: rotary position embedding as Llama-family
//       exports write it, rotate_half(X) = Concat(-X[..., D/2:], X[..., :D/2]) on the last
//       axis (D even). cos and sin have X's type and broadcast into X without growing it.
//       Each product and the sum round to X's type, as the Mul, Mul, Add it replaces do.
//       (Not ai.onnx RotaryEmbedding of opset 23, which gathers half-width caches itself.)
//   octet.MatMulNBits(A, B, scales[, zero_points, g_idx, bias][, residual]) [split]
//       com.microsoft.MatMulNBits (inputs 0-5 and attributes as there) and one of:
//       - `residual` (input 6, A's type, exactly Y's shape) added as ONNX Add: the
//         decoder's skip connection after its output and down projections, added while Y
//         is in cache (fuse_matmul_epilogue);
//       - `split` (ints, summing to N): one output per part, Y's columns in order, as
//         ONNX Split of the last axis would give them: a merged q/k/v projection writing
//         q, k and v itself (fuse_nbits_split).
//   octet.SwiGLU(X) or octet.SwiGLU(G, U)
//       Y = (G * Sigmoid(G)) * U, the gated activation of Llama-family MLPs (SiLU(gate) *
//       up). With one input, G and U are the first and second halves of X's last axis
//       (even; Y has half of it), as a merged gate/up projection writes them; with two,
//       G and U have the same shape, which Y has. Each product rounds to X's type, as the
//       Sigmoid, Mul, Mul it replaces do.
//   octet.QMatMul: the int8 Linear layer, in octet_quant_ops.cpp (docs/quantization.md).
//
// Each rule reuses the ai.onnx rule it extends, so the fused op can never disagree with
// the ops it replaces about shapes.
#include "ops/math_helpers.h"
#include "ops/op_families.h"

namespace octet {
namespace {

void infer_like(InferContext& ctx, const char* onnx_op) {
  const OpDef* def = OpRegistry::global().find("", onnx_op);
  OCTET_ASSERT(def && def->infer, "ai.onnx ", onnx_op, " has no inference rule");
  def->infer(ctx);
}

void infer_gelu(InferContext& ctx) { infer_like(ctx, "Gelu"); }

void infer_rms_norm(InferContext& ctx) { infer_like(ctx, "RMSNormalization"); }

// The residual (input `slot`) may broadcast into the output but never grow it: fails on a
// higher rank or on two known sizes that cannot meet; symbolic dims are checked at run time.
void check_residual(InferContext& ctx, const std::optional<DimVector>& out, size_t slot = 3) {
  using namespace math;
  require_same_type(ctx, 0, slot);
  const auto& r = ctx.input_dims(slot);
  if (!r || !out) return;
  if (r->size() > out->size())
    ctx.fail(describe_input(ctx, slot), " (the residual) has more dims than the output ", dims_to_string(*out));
  const size_t lead = out->size() - r->size();
  for (size_t i = 0; i < r->size(); ++i) {
    auto rc = (*r)[i].constant(), oc = (*out)[lead + i].constant();
    if (rc && oc && *rc != *oc && *rc != 1)
      ctx.fail(describe_input(ctx, slot), " (the residual) does not broadcast into the output ", dims_to_string(*out));
  }
}

// `split`: output 0's type, already inferred as the whole Y, cut along its last axis into
// these parts, one output each. The parts are positive, as many as the outputs, and sum to
// N where it is known.
void infer_split_outputs(InferContext& ctx, const std::vector<int64_t>& split, std::optional<int64_t> n) {
  int64_t total = 0;
  for (int64_t part : split) {
    if (part <= 0) ctx.fail("split parts must be positive, got ", part);
    total += part;
  }
  if (n && total != *n) ctx.fail("split parts sum to ", total, ", not N = ", *n);
  if (split.size() != ctx.num_outputs())
    ctx.fail("split has ", split.size(), " parts but the node has ", ctx.num_outputs(), " outputs");
  const TensorType y = ctx.node().output(0)->type;
  for (size_t i = 0; i < split.size(); ++i) {
    std::optional<DimVector> dims = y.dims;
    if (dims && !dims->empty()) dims->back() = split[i];
    ctx.set_output(i, y.dtype, dims);
  }
}

void infer_matmul_bias(InferContext& ctx) {
  using namespace math;
  require_type(ctx, 0, is_float_type, kFloatTypes);
  const std::string act = ctx.node().attr_string("activation", "");
  if (act != "" && act != "gelu" && act != "gelu_tanh")
    ctx.fail("activation must be \"\", \"gelu\" or \"gelu_tanh\", got \"", act, "\"");
  if (ctx.num_inputs() > 4) ctx.fail("takes at most 4 inputs (A, B, bias, residual), got ", ctx.num_inputs());
  const std::vector<int64_t> split = ctx.node().attr_ints("split", {});
  if (!split.empty() && ctx.has_input(3)) ctx.fail("takes a residual (input 3) or a split attribute, not both");
  if (split.empty() && ctx.num_outputs() != 1) ctx.fail("has ", ctx.num_outputs(), " outputs but no split attribute");
  infer_like(ctx, "MatMul");
  if (!split.empty()) {
    const std::optional<DimVector>& y = ctx.node().output(0)->type.dims;
    infer_split_outputs(ctx, split, y && !y->empty() ? y->back().constant() : std::nullopt);
  }
  if (ctx.has_input(3)) check_residual(ctx, ctx.node().output(0)->type.dims);
  const auto& b = ctx.input_dims(1);
  if (b && b->size() < 2)
    ctx.fail(describe_input(ctx, 1), " must have rank >= 2 (the bias runs along its last axis)");
  if (!ctx.has_input(2)) return;  // no bias
  require_same_type(ctx, 0, 2);
  const auto& bias = ctx.input_dims(2);
  if (!bias) return;
  if (bias->size() != 1) ctx.fail(describe_input(ctx, 2), " must be 1-D");
  if (!b) return;
  const Dim& n = b->back();
  auto bn = (*bias)[0].constant(), nn = n.constant();
  if (bn && nn && *bn != *nn)
    ctx.fail(describe_input(ctx, 2), " has ", *bn, " elements but B ", ctx.input_type(1).to_string(),
             " has N = ", *nn);
}

void infer_apply_rotary(InferContext& ctx) {
  using namespace math;
  if (ctx.num_inputs() != 3) ctx.fail("takes 3 inputs (X, cos, sin), got ", ctx.num_inputs());
  require_type(ctx, 0, is_float_type, kFloatTypes);
  require_same_type(ctx, 0, 1);
  require_same_type(ctx, 0, 2);
  const auto& x = ctx.input_dims(0);
  if (x) {
    if (x->empty()) ctx.fail(describe_input(ctx, 0), " must have rank >= 1 (it rotates along its last axis)");
    if (auto d = x->back().constant(); d && *d % 2 != 0)
      ctx.fail(describe_input(ctx, 0), " has an odd last dim ", *d, "; rotate_half splits it in two halves");
  }
  for (size_t i : {size_t{1}, size_t{2}}) {
    const auto& c = ctx.input_dims(i);
    if (!x || !c) continue;
    if (c->size() > x->size()) ctx.fail(describe_input(ctx, i), " has more dims than X ", dims_to_string(*x));
    const size_t lead = x->size() - c->size();
    for (size_t k = 0; k < c->size(); ++k) {
      auto ck = (*c)[k].constant(), xk = (*x)[lead + k].constant();
      if (ck && xk && *ck != *xk && *ck != 1)
        ctx.fail(describe_input(ctx, i), " does not broadcast into X ", dims_to_string(*x));
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), x);
}

void infer_matmul_nbits_octet(InferContext& ctx) {
  const Node& n = ctx.node();
  const bool residual = ctx.num_inputs() == 7 && ctx.has_input(6);
  const std::vector<int64_t> split = n.attr_ints("split", {});
  if (ctx.num_inputs() > 7) ctx.fail("takes at most 7 inputs (A, B, scales, zero_points, g_idx, bias, residual)");
  if (residual == !split.empty())
    ctx.fail("needs either a residual (input 6) or a split attribute, and not both");
  const OpDef* def = OpRegistry::global().find("com.microsoft", "MatMulNBits");
  OCTET_ASSERT(def && def->infer, "com.microsoft MatMulNBits has no inference rule");
  def->infer(ctx);
  if (residual) return check_residual(ctx, n.output(0)->type.dims, 6);
  infer_split_outputs(ctx, split, n.attr_int("N", 0));
}

void infer_swiglu(InferContext& ctx) {
  using namespace math;
  if (ctx.num_inputs() < 1 || ctx.num_inputs() > 2) ctx.fail("takes 1 input (X) or 2 (G, U), got ", ctx.num_inputs());
  require_type(ctx, 0, is_float_type, kFloatTypes);
  std::optional<DimVector> y = ctx.input_dims(0);
  if (ctx.num_inputs() == 2) {
    require_same_type(ctx, 0, 1);
    const auto& u = ctx.input_dims(1);
    if (y && u) {
      if (y->size() != u->size()) ctx.fail(describe_input(ctx, 0), " and ", describe_input(ctx, 1), " differ in rank");
      for (size_t k = 0; k < y->size(); ++k) {
        auto a = (*y)[k].constant(), b = (*u)[k].constant();
        if (a && b && *a != *b) ctx.fail(describe_input(ctx, 0), " and ", describe_input(ctx, 1), " differ in shape");
      }
    }
    if (!y) y = u;
  } else if (y) {
    if (y->empty()) ctx.fail(describe_input(ctx, 0), " must have rank >= 1 (gate and up halve its last axis)");
    if (auto d = y->back().constant(); d && *d % 2 != 0)
      ctx.fail(describe_input(ctx, 0), " has an odd last dim ", *d, "; gate and up are its two halves");
    y->back() = Dim::floor_div(y->back(), Dim(2));
  }
  ctx.set_output(0, ctx.input_dtype(0), y);
}

}  // namespace

void register_octet_ops(OpRegistry& r) {
  r.add({"octet", "ApplyRotary", infer_apply_rotary});
  r.add({"octet", "Gelu", infer_gelu});
  r.add({"octet", "MatMulBias", infer_matmul_bias});
  r.add({"octet", "MatMulNBits", infer_matmul_nbits_octet});
  r.add({"octet", "RMSNormalization", infer_rms_norm});
  r.add({"octet", "SwiGLU", infer_swiglu});
  register_octet_attention_op(r);
  register_octet_grouped_attention_op(r);
  register_octet_quant_ops(r);
}

}  // namespace octet
