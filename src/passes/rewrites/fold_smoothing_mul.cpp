// Mul(x, c) read only by octet.QMatMuls with a float A -> their a_channel_scale = c.
//
// Why (issue 20): SmoothQuant divides a linear layer's input channels by its factors
// (docs/quantization.md §5). fuse_qdq_matmul folds that Mul into the QMatMul when Q/DQ
// nodes sit between them, and fold_matmul_output_scale into a producing matmul's columns;
// a QMatMul that octet's quantizer wrote itself (the per-token default) after an attention
// read the Mul as it was: a pass over the attention output of its own (DINOv2-S layers
// 0 and 6: 0.23 ms per run at batch 8). The QMatMul scales each row of A by
// a_channel_scale while quantizing it, in cache, with the same float32 products.
//
// Matched: an ai.onnx Mul of a non-constant float32 x by a float32 constant c of K values
// along the last axis (leading dims 1), in either order, whose output is no graph output
// and is read only as input 0 of octet.QMatMuls with a float32 A, no a_channel_scale and
// K rows of B (A not read again as another of their inputs). Each reader is rebuilt
// reading x with a_channel_scale = c (1-D); the Mul goes as dead code. Runs in the
// finishing stage, after fold_matmul_output_scale had its chance at a Mul behind a matmul
// (folded into the producer, the reader may still take a quantized A from it).
#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/quantized_readers.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

enum : size_t { kChannelScale = 8 };

// A QMatMul that can take the factor: float A read once, no a_channel_scale, B [k, N].
bool takes_channel_scale(const Node* q, const Value* a, int64_t k) {
  if (q->domain() != "octet" || q->op_type() != "QMatMul" || input_or_null(q, kChannelScale)) return false;
  if (a->type.dtype != DType::Float32) return false;
  for (size_t i = 1; i < q->inputs().size(); ++i)
    if (q->input(i) == a) return false;
  const Tensor* b = constant_value(input_or_null(q, 3));
  return b && b->rank() == 2 && b->shape()[0] == k;
}

// Folds `mul` into its readers; the nodes it removed (the readers and the Mul), or none.
std::vector<Node*> fold(Graph& g, PassContext& ctx, Node* mul) {
  auto operands = channel_factor_mul(mul);
  Value* y = mul->output(0);
  if (!operands || !y || y->is_graph_output() || read_by_subgraph(y) || y->uses().empty()) return {};
  Value* x = operands->x;
  // x must already have Mul's output shape: the factor broadcasts along the last axis only.
  if (!x->type.dims || !y->type.dims || *x->type.dims != *y->type.dims) return {};
  const int64_t k = constant_value(operands->c)->numel();
  for (const Use& u : y->uses())
    if (u.implicit || u.index != 0 || !takes_channel_scale(u.node, y, k)) return {};
  GraphPatch patch = make_patch(g);
  Value* scale = as_1d_vector(patch, operands->c);
  std::vector<Node*> readers;
  for (const Use& u : y->uses()) readers.push_back(u.node);
  for (Node* q : readers) {
    std::vector<Value*> inputs = q->inputs();
    if (inputs.size() <= kChannelScale) inputs.resize(kChannelScale + 1, nullptr);
    inputs[0] = x;
    inputs[kChannelScale] = scale;
    Node* folded = patch.add_node("QMatMul", inputs, q->outputs().size(), q->attributes(), "octet",
                                  q->name() + "_smoothed");
    for (size_t i = 0; i < q->outputs().size(); ++i)
      if (q->output(i)) patch.replace_uses(q->output(i), folded->output(i));
    patch.remove_node(q);
  }
  patch.remove_node(mul);
  if (!ctx.apply(patch)) return {};
  ctx.count("Mul -> QMatMul a_channel_scale");
  readers.push_back(mul);
  return readers;
}

bool run(Graph& g, PassContext& ctx) {
  return sweep_rewrites(g, "Mul", [&](Node* mul, const RemovedNodes&) { return fold(g, ctx, mul); });
}

}  // namespace

Pass fold_smoothing_mul() { return {"fold_smoothing_mul", run}; }

}  // namespace octet::passes
