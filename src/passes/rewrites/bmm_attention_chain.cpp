#include "passes/rewrites/bmm_attention_chain.h"

#include <cmath>

#include "passes/pattern.h"

namespace octet::passes::bmm {

const DimVector* dims_of(const Value* v) { return v && v->type.dims ? &*v->type.dims : nullptr; }

bool dims_are(const Value* v, const DimVector& want) {
  const DimVector* d = dims_of(v);
  return d && *d == want;
}

bool has_perm(const Node* n, const std::vector<int64_t>& perm) {
  return is_op(n, "Transpose") && n->attr_ints("perm") == perm;
}

Value* unmerged(Value* merged, std::vector<Node*>& nodes) {
  Node* r = producer(merged, "Reshape");
  if (!r) return nullptr;
  Value* x = r->input(0);
  const DimVector* d = dims_of(x);
  if (!d || d->size() != 4 || !(*d)[1].constant()) return nullptr;
  if (!dims_are(merged, {(*d)[0] * (*d)[1], (*d)[2], (*d)[3]})) return nullptr;
  nodes.push_back(r);
  return x;
}

Value* projection_of(Value* split4, int64_t heads, std::vector<Node*>& nodes) {
  Node* t = split4->producer();
  if (!has_perm(t, {0, 2, 1, 3}) || !single_use(split4) || split4->is_graph_output()) return nullptr;
  Node* r = producer(t->input(0), "Reshape");
  if (!r || !single_use(t->input(0)) || t->input(0)->is_graph_output()) return nullptr;
  Value* x = r->input(0);
  const DimVector *in = dims_of(x), *out = dims_of(t->input(0));
  if (!in || !out || in->size() != 3 || out->size() != 4) return nullptr;
  if (!((*out)[0] == (*in)[0] && (*out)[1] == (*in)[1] && (*out)[2] == Dim(heads))) return nullptr;
  if (!((*in)[2] == Dim(heads) * (*out)[3])) return nullptr;
  nodes.insert(nodes.end(), {r, t});
  return x;
}

std::optional<std::pair<double, Value*>> scaling(Node* n) {
  if (!n || (!is_op(n, "Div") && !is_op(n, "Mul"))) return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    if (is_op(n, "Div") && i == 1) break;
    const auto c = scalar_constant(n->input(1 - i));
    if (!c || *c == 0 || !std::isfinite(*c) || !is_scalar(n->input(1 - i), *c, n->input(i))) continue;
    return std::make_pair(is_op(n, "Div") ? 1.0 / *c : *c, n->input(i));
  }
  return std::nullopt;
}

Value* unmasked(Value* s, std::vector<Node*>& nodes, Value*& mask, Value*& scores4) {
  Node* back = producer(s, "Reshape");
  if (!back) return s;
  Node* add = producer(back->input(0), "Add");
  if (!add || !single_use(back->input(0))) return nullptr;
  // The scores' side: a Reshape of the product (maybe scaled); the mask may be a Reshape too.
  scores4 = nullptr;
  for (int i = 0; i < 2 && !scores4; ++i) {
    const Node* r = producer(add->input(i), "Reshape");
    const Value* below = r ? r->input(0) : nullptr;
    if (below && scaling(below->producer())) below = scaling(below->producer())->second;
    if (r && single_use(add->input(i)) && producer(below, "MatMul")) scores4 = add->input(i);
  }
  if (!scores4) return nullptr;
  mask = other_input(add, scores4);
  const DimVector* md = dims_of(mask);
  if (!mask || mask == scores4 || mask->type.dtype != DType::Float32 || !md || md->size() > 4) return nullptr;
  Node* split = scores4->producer();
  nodes.insert(nodes.end(), {back, add, split});
  return single_use(split->input(0)) ? split->input(0) : nullptr;
}

std::optional<int64_t> chain_heads(const Value* q4, const Value* k4, const Value* v4, const Value* product,
                                   const Value* probs, const Value* scores4, const Value* split4, const Value* y) {
  for (const Value* x : {q4, k4, v4})
    if (!dims_of(x) || dims_of(x)->size() != 4 || x->type.dtype != DType::Float32) return std::nullopt;
  const DimVector &qd = *dims_of(q4), &kd = *dims_of(k4), &vd = *dims_of(v4);
  const auto h = qd[1].constant(), d = qd[3].constant(), dv = vd[3].constant();
  if (!h || !d || !dv || *h < 1 || !(kd[1] == qd[1]) || !(vd[1] == qd[1]) || !(kd[3] == qd[3])) return std::nullopt;
  if (!(kd[0] == qd[0]) || !(vd[0] == qd[0])) return std::nullopt;
  const Dim bh = qd[0] * qd[1];
  if (!dims_are(product, {bh, qd[2], kd[2]}) || !dims_are(probs, {bh, qd[2], kd[2]})) return std::nullopt;
  if (scores4 && !dims_are(scores4, {qd[0], qd[1], qd[2], kd[2]})) return std::nullopt;
  if (!dims_are(split4, {qd[0], qd[1], qd[2], vd[3]})) return std::nullopt;
  if (!dims_are(y, {qd[0], qd[2], Dim(*h * *dv)})) return std::nullopt;
  return *h;
}

Node* scores_product(Value* s, std::vector<Node*>& nodes, Value*& mask, Value*& scores4, double& scale) {
  if (!(s = unmasked(s, nodes, mask, scores4))) return nullptr;
  if (auto sc = scaling(s->producer())) {
    if (!single_use(sc->second)) return nullptr;
    nodes.push_back(s->producer());
    scale = sc->first;
    s = sc->second;
  }
  Node* qk = producer(s, "MatMul");
  if (qk) nodes.push_back(qk);
  return qk;
}

std::pair<Node*, Node*> heads_merged(Value* mixed, std::vector<Node*>& nodes) {
  Node* split = sole_consumer(mixed);
  if (!is_op(split, "Reshape") || split->input(0) != mixed) return {nullptr, nullptr};
  Node* merge = sole_consumer(split->output(0));
  if (!has_perm(merge, {0, 2, 1, 3}) || merge->output(0)->is_graph_output()) return {nullptr, nullptr};
  Node* final_reshape = nullptr;
  for (const Use& u : merge->output(0)->uses())
    if (is_op(u.node, "Reshape") && u.index == 0) final_reshape = final_reshape ? nullptr : u.node;
  if (!final_reshape || final_reshape->output(0)->is_graph_output()) return {nullptr, nullptr};
  nodes.insert(nodes.end(), {split, merge, final_reshape});
  return {split, final_reshape};
}

}  // namespace octet::passes::bmm
