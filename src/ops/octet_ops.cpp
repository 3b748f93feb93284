// Ops in the `octet` domain: the fused forms the optimizer writes (src/passes/rewrites).
//
//   octet.Gelu(X) approximate="none"|"tanh"
//       ONNX Gelu (opset 20) under a domain any model opset accepts: exporters still
//       write opset 17, where ai.onnx has no Gelu.
//   octet.MatMulBias(A, B, bias)
//       MatMul(A, B) + bias with numpy MatMul semantics; B has rank >= 2 and bias is
//       1-D [N], N = B's last dim, added along the output's last axis. One op for every
//       rank, so a Linear layer is one node whether it runs on [M,K] or [batch,seq,K].
//   octet.RMSNormalization(X, scale) axis, epsilon, stash_type
//       ONNX RMSNormalization (opset 23), for models whose opset predates it.
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

void infer_matmul_bias(InferContext& ctx) {
  using namespace math;
  require_type(ctx, 0, is_float_type, kFloatTypes);
  infer_like(ctx, "MatMul");
  const auto& b = ctx.input_dims(1);
  if (b && b->size() < 2)
    ctx.fail(describe_input(ctx, 1), " must have rank >= 2 (the bias runs along its last axis)");
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

}  // namespace

void register_octet_ops(OpRegistry& r) {
  r.add({"octet", "Gelu", infer_gelu});
  r.add({"octet", "MatMulBias", infer_matmul_bias});
  r.add({"octet", "RMSNormalization", infer_rms_norm});
  register_octet_attention_op(r);
}

}  // namespace octet
