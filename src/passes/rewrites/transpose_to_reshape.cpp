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
#include <numeric>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

// The Transpose's permutation (default: reversed axes), or empty when malformed.
std::vector<int64_t> permutation(const Node& n, int64_t rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  if (const Attribute* a = n.find_attr("perm"); a && a->kind == Attribute::Kind::Ints) {
    perm = a->ints;
  } else {
    std::iota(perm.rbegin(), perm.rend(), int64_t{0});
  }
  if (static_cast<int64_t>(perm.size()) != rank) return {};
  std::vector<char> seen(static_cast<size_t>(rank), 0);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) return {};
    seen[static_cast<size_t>(p)] = 1;
  }
  return perm;
}

// True when the axes of size other than 1 keep their order: the data is laid out the same.
bool moves_only_unit_axes(const DimVector& in, const std::vector<int64_t>& perm) {
  int64_t last = -1;
  for (int64_t p : perm) {
    const std::optional<int64_t> d = in[static_cast<size_t>(p)].constant();
    if (d == 1) continue;
    if (p < last) return false;
    last = p;
  }
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  bool changed = false;
  for (Node* n : g.nodes()) {
    if (!is_op(n, "Transpose")) continue;
    const Value* x = n->input(0);
    Value* y = n->output(0);
    if (!x || !y || !x->type.has_rank() || !y->type.is_static()) continue;
    const std::vector<int64_t> perm = permutation(*n, x->type.rank());
    if (perm.empty() || !moves_only_unit_axes(*x->type.dims, perm)) continue;
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
