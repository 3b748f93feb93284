// octet.QMatMul    -> Mul(., lambda) -> octet.QMatMul with output_scale = lambda
// octet.MatMulBias -> Mul(., lambda) -> octet.MatMulBias with B's columns and bias * lambda
//
// Why: ViTs with LayerScale (DINOv2, CaiT, EVA) multiply every block's attention and MLP
// output projection by a learned per-channel vector before the residual Add. As a Mul node
// that is one more pass over the [tokens, hidden] tensor, and it sits between the matmul
// and the Add, so fuse_matmul_epilogue cannot fold the residual into the product either:
// two extra elementwise passes per projection (issue 20's profile of DINOv2: 49 of its 141
// nodes were these Muls and Adds).
//
// QMatMul takes lambda as its output_scale input, applied in the epilogue after the bias
// (and activation) and before the residual -- a oneDNN binary-mul post-op -- so the values
// are the ones the separate Mul computed: an int8 graph is sensitive to last-bit changes
// (they flip quantized values downstream), and this keeps its accuracy exactly. MatMulBias
// folds lambda into its float weights, A (B diag(lambda)) + lambda bias: only float
// rounding changes.
//
// Matched: a QMatMul or MatMulBias without a residual (nor, for QMatMul, an output_scale),
// whose output only this Mul reads. A QMatMul may carry an activation: output_scale is applied
// after it, so GeLU(...) * lambda is what the Mul computed (SmoothQuant's 1/s on a GeLU output
// that a per-token QMatMul reads: a pass over [tokens, 4 hidden] per layer on MiniLM, 5% of its
// time); MatMulBias may not (lambda does not commute with GeLU for the float fold); the other Mul input a constant float32
// holding one value or one per output column (dims all 1 but a last one of N, no more dims
// than the output), so the Mul does not broadcast the output. QMatMul's B must be a
// constant 2-D int8; MatMulBias's B a constant 2-D float32 and its bias a constant [N].
// New tensors are new initializers; the originals are left to dead-code elimination (or
// whoever else reads them). Runs before fuse_matmul_epilogue so the Add after the Mul
// becomes the product's residual.
#include <algorithm>
#include <cstring>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

const Value* input_or_null(const Node* n, size_t i) { return i < n->inputs().size() ? n->input(i) : nullptr; }

// lambda as N values (a single value repeated), or empty when `v` is not such a constant.
std::vector<float> column_factors(const Value* v, const Value* y, int64_t n) {
  const Tensor* t = constant_value(v);
  if (!t || t->dtype() != DType::Float32 || !y->type.dims || t->rank() > static_cast<int64_t>(y->type.dims->size()))
    return {};
  for (int64_t i = 0; i + 1 < t->rank(); ++i)
    if (t->shape()[static_cast<size_t>(i)] != 1) return {};
  if (t->numel() != 1 && (t->rank() == 0 || t->shape().back() != n)) return {};
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = t->data<float>()[t->numel() == 1 ? 0 : i];
  return out;
}

// The number of output columns of a foldable matmul, or 0.
int64_t foldable_columns(const Node* mm) {
  if (!mm || mm->domain() != "octet") return 0;
  const bool q = mm->op_type() == "QMatMul";
  if (!q && mm->op_type() != "MatMulBias") return 0;
  if (!q && !mm->attr_string("activation", "").empty()) return 0;
  if (input_or_null(mm, q ? 7 : 3)) return 0;  // a residual is added after the product
  if (q && input_or_null(mm, 9)) return 0;      // an output_scale already
  if (mm->outputs().size() != 1) return 0;      // more outputs (a per-row Y, a LayerNorm epilogue) read Y
  const Tensor* b = constant_value(input_or_null(mm, q ? 3 : 1));
  if (!b || b->rank() != 2 || b->dtype() != (q ? DType::Int8 : DType::Float32)) return 0;
  const int64_t n = b->shape()[1];
  if (!q && input_or_null(mm, 2)) {  // the bias the float fold scales
    const Tensor* t = constant_value(input_or_null(mm, 2));
    if (!t || t->dtype() != DType::Float32 || t->rank() != 1 || t->numel() != n) return 0;
  }
  return n;
}

// A fresh copy (the graph's constant may be shared by other nodes).
Tensor copy_of(const Tensor& t) {
  Tensor out(t.dtype(), t.shape());
  if (t.bytes() > 0) std::memcpy(out.mutable_raw(), t.raw(), t.bytes());
  return out;
}

bool fold(Graph& g, PassContext& ctx, Node* mm, Node* mul, const std::vector<float>& lambda) {
  const bool q = mm->op_type() == "QMatMul";
  const int64_t n = static_cast<int64_t>(lambda.size());
  GraphPatch patch = make_patch(g);
  std::vector<Value*> inputs = mm->inputs();
  if (q) {
    Tensor scale(DType::Float32, {n});
    std::copy(lambda.begin(), lambda.end(), scale.mutable_data<float>());
    inputs.resize(10, nullptr);
    inputs[9] = patch.add_initializer(mm->name() + "_output_scale", std::move(scale));
  } else {
    Tensor w = copy_of(*constant_value(inputs[1]));
    float* pw = w.mutable_data<float>();
    for (int64_t r = 0; r < w.shape()[0]; ++r)
      for (int64_t c = 0; c < n; ++c) pw[r * n + c] *= lambda[static_cast<size_t>(c)];
    inputs[1] = patch.add_initializer(mm->name() + "_scaled_weight", std::move(w));
    if (input_or_null(mm, 2)) {
      Tensor bias = copy_of(*constant_value(inputs[2]));
      for (int64_t i = 0; i < n; ++i) bias.mutable_data<float>()[i] *= lambda[static_cast<size_t>(i)];
      inputs[2] = patch.add_initializer(mm->name() + "_scaled_bias", std::move(bias));
    }
  }
  Node* fused = patch.add_node(mm->op_type(), inputs, 1, mm->attributes(), "octet", mm->name() + "_scaled");
  patch.replace_uses(mul->output(0), fused->output(0));
  patch.remove_node(mm);
  patch.remove_node(mul);
  const std::string what = "octet." + mm->op_type() + " *= per-column factor";  // the patch frees mm
  if (!ctx.apply(patch)) return false;
  ctx.count(what);
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  RemovedNodes removed;
  for (Node* mm : g.nodes()) {
    if (removed.contains(mm)) continue;
    const int64_t n = foldable_columns(mm);
    if (n == 0) continue;
    Value* y = mm->output(0);
    Node* mul = sole_consumer(y);
    if (!mul || removed.contains(mul) || !is_op(mul, "Mul") || mul->inputs().size() != 2) continue;
    const Value* other = other_input(mul, y);
    if (!other || other == y || !can_replace(mul->output(0), y)) continue;
    const std::vector<float> lambda = column_factors(other, y, n);
    if (lambda.empty()) continue;
    if (fold(g, ctx, mm, mul, lambda)) removed.add({mm, mul});
  }
  return removed.any();
}

}  // namespace

Pass fold_matmul_output_scale() { return {"fold_matmul_output_scale", run}; }

}  // namespace octet::passes
