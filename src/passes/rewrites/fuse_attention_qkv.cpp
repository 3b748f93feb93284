// Three projections of one input feeding octet.Attention -> one projection, read in place.
//
// BERT-style exports compute Q, K and V as three Linear layers of the same hidden state:
// three MatMulBias nodes of [S, E] x [E, E]. One [S, E] x [E, 3E] product does the same
// work with one kernel call, one pass over A, and a wider N that oneDNN blocks and
// threads better; the attention then reads Q, K and V out of the packed result through
// channel_ranges (see fuse_attention_slices.cpp for the same layout reached from
// nn.MultiheadAttention's packed weights).
//
// Matched: a float32 octet.Attention without channel_ranges whose Q, K and V are the
// outputs of three distinct octet.MatMulBias nodes that read the same A, with no
// activation and no residual, each with a constant 2-D float32 weight [K, N_i] and a
// constant 1-D bias [N_i], each output read by this Attention alone. The concatenated
// weight and bias are new initializers; the originals are left to dead-code elimination
// (or to whoever else reads them).
#include <algorithm>
#include <array>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/attention_packing.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

bool is_matmul_bias(const Node* n) { return n && n->domain() == "octet" && n->op_type() == "MatMulBias"; }

// A projection this pass can merge: plain MatMulBias(A, W [K, N], b [N]) read by `attention` alone.
Node* projection(const Value* v, const Node* attention) {
  Node* p = v ? v->producer() : nullptr;
  if (!is_matmul_bias(p) || sole_consumer(v) != attention || p->inputs().size() != 3) return nullptr;
  if (!p->attr_string("activation", "").empty()) return nullptr;
  const Tensor* w = constant_value(p->input(1));
  const Tensor* b = constant_value(p->input(2));
  if (!w || !b || w->dtype() != DType::Float32 || b->dtype() != DType::Float32) return nullptr;
  if (w->rank() != 2 || b->rank() != 1 || b->shape()[0] != w->shape()[1]) return nullptr;
  return p;
}

bool run(Graph& g, PassContext& ctx) {
  bool changed = false;
  RemovedNodes removed;  // projections this sweep merged: their memory is gone
  for (Node* n : g.nodes()) {
    if (removed.contains(n) || n->domain() != "octet" || n->op_type() != "Attention" ||
        n->has_attr("channel_ranges"))
      continue;
    std::array<Node*, 3> p = {projection(n->input(0), n), projection(n->input(1), n), projection(n->input(2), n)};
    if (!p[0] || !p[1] || !p[2] || p[0] == p[1] || p[1] == p[2] || p[0] == p[2]) continue;
    Value* a = p[0]->input(0);
    if (p[1]->input(0) != a || p[2]->input(0) != a) continue;
    // W = [Wq | Wk | Wv] along N, b = [bq, bk, bv].
    std::array<int64_t, 4> offset{};
    std::optional<Tensor> weight = columns_side_by_side(
        {constant_value(p[0]->input(1)), constant_value(p[1]->input(1)), constant_value(p[2]->input(1))}, offset);
    if (!weight) continue;
    Tensor bias(DType::Float32, {offset[3]});
    float* pb = bias.mutable_data<float>();
    for (int i = 0; i < 3; ++i) {
      const float* bi = constant_value(p[i]->input(2))->data<float>();
      std::copy(bi, bi + (offset[i + 1] - offset[i]), pb + offset[i]);
    }

    GraphPatch patch = make_patch(g);
    Value* wv = patch.add_initializer(p[0]->name() + "_qkv_weight", std::move(*weight));
    Value* bv = patch.add_initializer(p[0]->name() + "_qkv_bias", std::move(bias));
    Node* packed = patch.add_node("MatMulBias", {a, wv, bv}, 1, {}, "octet", p[0]->name() + "_qkv");
    changed |= finish_qkv_merge(patch, ctx, n, p, packed->output(0), offset, "Q/K/V projections merged", removed);
  }
  return changed;
}

}  // namespace

Pass fuse_attention_qkv() { return {"fuse_attention_qkv", run}; }

}  // namespace octet::passes
