// Transpose that only moves axes of size 1 -> Reshape to its output shape.
//
// Such a Transpose keeps every element where it is in memory: dropping the size-1 axes,
// the permutation is the identity. A Reshape says so, and the runtime runs it as a view
// of its input (no copy), where a Transpose copies the tensor. Batch-1 models are full of
// them once specialized: PyTorch's nn.MultiheadAttention (ViT, seq-first) turns [1, S, E]
// into [S, 1, E] and back around every attention block.
//
// Matched: an ai.onnx Transpose whose input dims are known wherever the permutation
// moves them, and whose output shape is static and non-empty (the Reshape's shape is a
// new int64 initializer of exactly those dims, so no 0/-1 is ever interpreted).
//
// Runs after the fusions in the pipeline: fuse_attention matches the head-split
// Transposes, which a model with one head or one token would otherwise lose to this
// rewrite in the same round.
#include <algorithm>

#include "ops/infer.h"
#include "ops/transpose_layout.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

bool run(Graph& g, PassContext& ctx) {
  bool changed = false;
  for (Node* n : g.nodes()) {
    if (!is_op(n, "Transpose")) continue;
    const Value* x = n->input(0);
    Value* y = n->output(0);
    if (!x || !y || !x->type.has_rank() || !y->type.is_static()) continue;
    const std::optional<std::vector<int64_t>> perm = transpose_permutation(*n, x->type.rank());
    std::vector<int64_t> in;  // a symbolic dim as -1: not 1
    for (const Dim& d : *x->type.dims) in.push_back(d.constant().value_or(-1));
    if (!perm || !moves_only_unit_axes(in, *perm)) continue;
    const std::vector<int64_t> shape = y->type.static_shape();
    if (std::find(shape.begin(), shape.end(), 0) != shape.end()) continue;  // empty: nothing to gain
    if (read_by_subgraph(y)) continue;  // the body names y: it must keep its producer
    GraphPatch patch = make_patch(g);
    Value* target = patch.add_initializer(n->name() + "_shape", int64s(shape));
    Node* reshape = patch.add_node("Reshape", {n->input(0), target}, 1, {}, "", n->name() + "_as_reshape");
    patch.replace_uses(y, reshape->output(0));
    patch.remove_node(n);
    if (ctx.apply(patch)) {
      ctx.count("Transpose of unit axes");
      changed = true;
    }
  }
  return changed;
}

}  // namespace

Pass transpose_to_reshape() { return {"transpose_to_reshape", run}; }

}  // namespace octet::passes
