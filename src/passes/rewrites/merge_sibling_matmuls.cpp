// Products of one input with several constant weights -> one product, N concatenated, + Split.
//
// Why: a decoder's decode step is a chain of GEMVs at batch 1, memory-bound and short
// (SmolLM2's q/k/v projections read 0.1-0.3 MB each in int8). Llama-style layers compute
// q, k and v from one normalized hidden state, and gate and up from another; each of those
// GEMVs pays its own call, its own pass over A (quantizing it, for MatMulNBits' integer
// path) and its own ramp-up of the weight stream, and each is too small to be worth
// sharing between threads. One GEMV over the concatenated columns pays these once and is
// big enough to share (matmul_nbits.cpp). A Split of the last axis hands each former
// reader its own columns back.
//
// Exactness: every output column is its own dot product over K with its own weights
// (MatMulNBits: its own blocks, scales and zero points), so the concatenated product's
// columns are the separate products' columns. MatMulNBits' kernels compute each column
// the same way whatever N is: bit for bit the same values. A float MatMul goes to oneDNN,
// whose blocking may depend on N: equal within float rounding.
//
// Matched, for one value A read by two or more such nodes:
//   - com.microsoft.MatMulNBits(A, B, scales[, zero_points]) with constant B, scales and
//     zero points (no g_idx, no bias), grouped by K, bits, block_size, accuracy_level and
//     whether zero points are present (their per-column byte rows then concatenate too);
//   - ai.onnx MatMul(A, W) with W a constant 2-D float32 [K, N_i] and A float32.
// Each group of two or more becomes one node and a Split. The merged weights are new
// initializers; the old ones go where nothing else reads them.
//
// Runs in the pipeline's finishing stage: after the fusions a merge would hide (a bias Add
// becoming MatMulBias, q/k/v feeding fused attention) have had their chance.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <tuple>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

bool is_nbits(const Node* n) { return n->domain() == "com.microsoft" && n->op_type() == "MatMulNBits"; }

// What must agree for two nodes to share one product (for a node columns() accepts).
using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, bool>;  // kind, K, bits, block, accuracy, zero points

// The number of output columns of a mergeable node, or 0.
int64_t columns(const Node* n) {
  if (n->outputs().size() != 1 || read_by_subgraph(n->output(0))) return 0;
  if (is_op(n, "MatMul")) {
    const Value* a = n->input(0);
    const Tensor* w = constant_value(n->input(1));
    if (!a || a->type.dtype != DType::Float32 || !w || w->dtype() != DType::Float32 || w->rank() != 2) return 0;
    return w->shape()[1];
  }
  if (!is_nbits(n) || n->inputs().size() > 4 || !n->input(0) || n->input(0)->type.dtype != DType::Float32) return 0;
  const int64_t K = n->attr_int("K", 0), N = n->attr_int("N", 0), bits = n->attr_int("bits", 4);
  const int64_t block = n->attr_int("block_size", 0);
  if (K <= 0 || N <= 0 || block <= 0 || (bits != 4 && bits != 8) || block * bits % 8) return 0;
  const int64_t k_blocks = (K + block - 1) / block;
  const Tensor* b = constant_value(n->input(1));
  const Tensor* s = constant_value(n->input(2));
  if (!b || !s || b->dtype() != DType::UInt8 || b->numel() != N * k_blocks * (block * bits / 8)) return 0;
  if (s->dtype() != DType::Float32 || s->numel() != N * k_blocks) return 0;
  if (n->input(3)) {
    const Tensor* z = constant_value(n->input(3));
    if (!z || z->dtype() != DType::UInt8 || z->numel() != N * ((k_blocks * bits + 7) / 8)) return 0;
  }
  return N;
}

Key key(const Node* n) {
  if (is_op(n, "MatMul")) return {0, constant_value(n->input(1))->shape()[0], 0, 0, 0, false};
  return {1, n->attr_int("K", 0), n->attr_int("bits", 4), n->attr_int("block_size", 0),
          n->attr_int("accuracy_level", 0), n->input(3) != nullptr};
}

// The tensors of `group` (input `slot` of each), each [N_i, ...] row-major, one after
// another: MatMulNBits' per-column rows. The shape keeps the first's rank, axis 0 summed
// (a 1-D tensor holds N_i * rows elements).
Tensor rows_concatenated(const std::vector<Node*>& group, size_t slot) {
  const Tensor* first = constant_value(group[0]->input(slot));
  std::vector<int64_t> shape = first->shape();
  int64_t total = 0;
  for (Node* n : group) total += constant_value(n->input(slot))->numel();
  const int64_t rows_each = first->rank() > 1 ? first->numel() / first->shape()[0] : 1;
  if (shape.empty()) shape.push_back(total);
  else shape[0] = total / rows_each;
  Tensor out(first->dtype(), shape);
  size_t at = 0;
  for (Node* n : group) {
    const Tensor* t = constant_value(n->input(slot));
    std::memcpy(out.mutable_raw() + at, t->raw(), t->bytes());
    at += t->bytes();
  }
  return out;
}

// Float weights [K, N_i] side by side: [K, sum N_i].
Tensor columns_concatenated(const std::vector<Node*>& group, int64_t total) {
  const Tensor* first = constant_value(group[0]->input(1));
  const int64_t k = first->shape()[0];
  Tensor out(DType::Float32, {k, total});
  float* o = out.mutable_data<float>();
  int64_t offset = 0;
  for (Node* n : group) {
    const Tensor* w = constant_value(n->input(1));
    const int64_t cols = w->shape()[1];
    for (int64_t r = 0; r < k; ++r) std::memcpy(o + r * total + offset, w->data<float>() + r * cols, cols * sizeof(float));
    offset += cols;
  }
  return out;
}

bool merge(Graph& g, PassContext& ctx, const std::vector<Node*>& group, RemovedNodes& removed) {
  std::vector<int64_t> sizes;
  int64_t total = 0;
  for (Node* n : group) sizes.push_back(columns(n)), total += sizes.back();
  const bool nbits = is_nbits(group[0]);
  const std::string name = group[0]->name() + "_merged";
  GraphPatch patch = make_patch(g);
  Node* product = nullptr;
  if (nbits) {
    std::vector<Value*> ins = {group[0]->input(0), patch.add_initializer(name + "_b", rows_concatenated(group, 1)),
                               patch.add_initializer(name + "_scales", rows_concatenated(group, 2))};
    if (group[0]->input(3)) ins.push_back(patch.add_initializer(name + "_zero_points", rows_concatenated(group, 3)));
    std::vector<Attribute> attrs;
    for (const Attribute& a : group[0]->attributes())
      if (a.name != "N") attrs.push_back(a);
    attrs.push_back(Attribute::make_int("N", total));
    product = patch.add_node("MatMulNBits", ins, 1, attrs, "com.microsoft", name);
  } else {
    Value* w = patch.add_initializer(name + "_weight", columns_concatenated(group, total));
    product = patch.add_node("MatMul", {group[0]->input(0), w}, 1, {}, "", name);
  }
  Node* split = nullptr;
  const std::vector<Attribute> axis = {Attribute::make_int("axis", -1)};
  if (onnx_opset_at_least(g, 13))
    split = patch.add_node("Split", {product->output(0), patch.add_initializer(name + "_split", int64s(sizes))},
                           group.size(), axis, "", name + "_split");
  else
    split = patch.add_node("Split", {product->output(0)}, group.size(),
                           {axis[0], Attribute::make_ints("split", sizes)}, "", name + "_split");
  for (size_t i = 0; i < group.size(); ++i) {
    patch.replace_uses(group[i]->output(0), split->output(i));
    patch.remove_node(group[i]);
  }
  // The old weights go unless something outside the group reads them (the finishing stage
  // runs no dead-code elimination after this pass).
  for (Node* n : group)
    for (size_t i = 1; i < n->inputs().size(); ++i) {
      Value* v = n->input(i);
      if (!v || !v->is_initializer() || v->is_graph_input() || v->is_graph_output()) continue;
      const bool only_group = std::all_of(v->uses().begin(), v->uses().end(), [&](const Use& u) {
        return !u.implicit && std::find(group.begin(), group.end(), u.node) != group.end();
      });
      bool seen = false;  // one weight read twice in the group is removed once
      for (Node* m : group) {
        if (m == n) break;
        for (size_t j = 1; j < m->inputs().size(); ++j) seen |= m->input(j) == v;
      }
      if (only_group && !seen) patch.remove_initializer(v);
    }
  if (!ctx.apply(patch)) return false;
  removed.add(group);
  ctx.count(nbits ? "MatMulNBits" : "MatMul", static_cast<int64_t>(group.size()));
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  bool changed = false;
  RemovedNodes removed;
  std::set<const Value*> done;  // inputs whose readers were grouped already
  for (Node* n : g.nodes()) {
    if (removed.contains(n) || !n->input(0) || done.count(n->input(0)) || columns(n) == 0) continue;
    const Value* a = n->input(0);
    done.insert(a);
    // The readers of A as its first input, grouped by what must agree.
    std::map<Key, std::vector<Node*>> groups;
    std::vector<Key> order;
    for (const Use& u : a->uses()) {
      Node* m = u.node;
      if (u.implicit || u.index != 0 || removed.contains(m) || columns(m) == 0) continue;
      const Key k = key(m);
      if (!groups.count(k)) order.push_back(k);
      auto& list = groups[k];
      if (std::find(list.begin(), list.end(), m) == list.end()) list.push_back(m);
    }
    for (const Key& k : order)
      if (groups[k].size() >= 2) changed |= merge(g, ctx, groups[k], removed);
  }
  return changed;
}

}  // namespace

Pass merge_sibling_matmuls() { return {"merge_sibling_matmuls", run}; }

}  // namespace octet::passes
