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
    const Tensor* w[3] = {constant_value(p[0]->input(1)), constant_value(p[1]->input(1)),
                          constant_value(p[2]->input(1))};
    const int64_t k = w[0]->shape()[0];
    if (w[1]->shape()[0] != k || w[2]->shape()[0] != k) continue;

    // W = [Wq | Wk | Wv] along N, b = [bq, bk, bv].
    std::array<int64_t, 4> offset = {0, 0, 0, 0};
    for (int i = 0; i < 3; ++i) offset[i + 1] = offset[i] + w[i]->shape()[1];
    const int64_t n_all = offset[3];
    Tensor weight(DType::Float32, {k, n_all}), bias(DType::Float32, {n_all});
    float* pw = weight.mutable_data<float>();
    float* pb = bias.mutable_data<float>();
    for (int i = 0; i < 3; ++i) {
      const int64_t ni = w[i]->shape()[1];
      const float* src = w[i]->data<float>();
      for (int64_t r = 0; r < k; ++r) std::copy(src + r * ni, src + (r + 1) * ni, pw + r * n_all + offset[i]);
      const float* bi = constant_value(p[i]->input(2))->data<float>();
      std::copy(bi, bi + ni, pb + offset[i]);
    }

    GraphPatch patch = make_patch(g);
    Value* wv = patch.add_initializer(p[0]->name() + "_qkv_weight", std::move(weight));
    Value* bv = patch.add_initializer(p[0]->name() + "_qkv_bias", std::move(bias));
    Node* packed = patch.add_node("MatMulBias", {a, wv, bv}, 1, {}, "octet", p[0]->name() + "_qkv");
    Value* qkv = packed->output(0);
    read_qkv_through_ranges(patch, n, {qkv, qkv, qkv},
                            {offset[0], offset[1], offset[1], offset[2], offset[2], offset[3]});
    for (Node* q : p) patch.remove_node(q);
    if (ctx.apply(patch)) {
      removed.add({n, p[0], p[1], p[2]});
      ctx.count("Q/K/V projections merged");
      changed = true;
    }
  }
  return changed;
}

}  // namespace

Pass fuse_attention_qkv() { return {"fuse_attention_qkv", run}; }

}  // namespace octet::passes
