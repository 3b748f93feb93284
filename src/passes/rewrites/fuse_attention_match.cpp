// Matching one attention block for fuse_attention, from its Softmax outwards.
//
// Every structural fact octet.Attention assumes is proved from the graph, never guessed:
// the head split is a Reshape whose inferred output is [B, S, H, D] (or [S, B*H, D]) with
// the same symbolic B and S as its input and H*D its channels; the Transposes have the
// exact permutations; Q, K and V agree on B, H and the head sizes; the scale is a
// one-element constant that does not broadcast the scores; the mask does not grow them;
// the causal condition is the lower triangle of an all-true [Sq, Sk] matrix with the
// diagonal offset Sk - Sq. Any other detail and the block is left alone.
#include "passes/rewrites/fuse_attention_match.h"

#include <cmath>
#include <optional>

#include "kernels/ref/ref_attention.h"
#include "passes/pattern.h"

namespace octet::passes::attention {
namespace {

const DimVector* dims_of(const Value* v) { return v && v->type.dims ? &*v->type.dims : nullptr; }

bool same_dims(const Value* a, const DimVector& want) {
  const DimVector* d = dims_of(a);
  return d && *d == want;
}

bool has_perm(const Node* t, const std::vector<int64_t>& perm) {
  return is_op(t, "Transpose") && t->attr_ints("perm") == perm;
}

// x / c or x * c (c a one-element float constant of x's type, either side of a Mul) that
// leaves x's shape alone: the factor it multiplies by, and x.
struct Scaling {
  double factor = 1;
  Value* x = nullptr;
};
std::optional<Scaling> scaling(const Node* n) {
  if (!n || n->inputs().size() != 2 || !n->output(0)) return std::nullopt;
  const bool div = is_op(n, "Div"), mul = is_op(n, "Mul");
  if (!div && !mul) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    if (div && side == 1) break;  // c / x is no scaling
    Value* c = n->input(div ? 1 : 1 - side);
    Value* x = n->input(div ? 0 : side);
    auto f = scalar_constant(c);
    if (!f || c->type.dtype != x->type.dtype || !dims_of(x) || !same_dims(n->output(0), *dims_of(x))) continue;
    if (c->type.rank() > x->type.rank() || *f == 0 || !std::isfinite(*f)) continue;
    return Scaling{div ? 1.0 / *f : *f, x};
  }
  return std::nullopt;
}

// One of Q, K, V: Transpose(perm) of a head-split Reshape of `x`. Fills x, H and D.
struct Head {
  Value* x = nullptr;
  Node* reshape = nullptr;
  Node* transpose = nullptr;
  int64_t heads = 0, size = 0;
};
std::optional<Head> head_split(Value* transposed, const std::vector<int64_t>& perm, bool seq_first) {
  Node* t = transposed ? transposed->producer() : nullptr;
  if (!has_perm(t, perm)) return std::nullopt;
  Node* r = producer(t->input(0), "Reshape");
  if (!r) return std::nullopt;
  Value* x = r->input(0);
  const DimVector *in = dims_of(x), *out = dims_of(r->output(0));
  if (!in || !out || in->size() != 3 || out->size() != (seq_first ? 3u : 4u)) return std::nullopt;
  Head h{x, r, t, 0, 0};
  if (!seq_first) {  // [B, S, E] -> [B, S, H, D]
    auto heads = (*out)[2].constant(), size = (*out)[3].constant();
    if (!heads || !size || (*out)[0] != (*in)[0] || (*out)[1] != (*in)[1]) return std::nullopt;
    if ((*in)[2] != Dim(*heads * *size)) return std::nullopt;
    h.heads = *heads;
    h.size = *size;
  } else {  // [S, B, E] -> [S, B*H, D]
    auto e = (*in)[2].constant(), size = (*out)[2].constant();
    if (!e || !size || *size <= 0 || *e % *size != 0 || (*out)[0] != (*in)[0]) return std::nullopt;
    h.heads = *e / *size;
    h.size = *size;
    if ((*out)[1] != (*in)[1] * Dim(h.heads)) return std::nullopt;
  }
  if (h.heads < 1 || h.size < 1) return std::nullopt;
  return h;
}

// True when the constant `c` ([..., Sq, Sk], leading dims 1) holds, at every (i, j),
// `hidden_value` exactly where j > i + (Sk - Sq): a causal mask that folding (fixed
// lengths) or the exporter (a sliced lower-triangular buffer) made a constant.
bool is_causal_constant(const Value* c, int64_t sq, int64_t sk, bool hidden_value) {
  const Tensor* t = constant_value(c);
  if (!t || t->rank() < 2 || t->numel() != sq * sk || t->shape()[t->rank() - 2] != sq || t->shape().back() != sk)
    return false;
  const std::vector<float> v = t->to_float_vector();
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < sk; ++j)
      if ((v[i * sk + j] != 0) != (hidden_value == (j > i + (sk - sq)))) return false;
  return true;
}

// The causal Where, Where(cond, fill, s) or Where(cond, s, fill), fill a one-element
// constant, where cond, maybe through a Not, is either the lower triangle (Trilu upper=0,
// diagonal k = Sk - Sq) of an all-true [Sq, Sk] matrix or a constant holding exactly
// that pattern, and selects the fill on the keys above the diagonal. The fill must hide a
// key as the fused op does: the type's lowest value, or -inf where no row can be fully
// hidden (Sq == Sk). Returns the scores input.
Value* causal_where(const Node* where, const DimVector& scores) {
  if (!is_op(where, "Where") || where->inputs().size() != 3) return nullptr;
  if (!same_dims(where->output(0), scores)) return nullptr;
  Value *chain = nullptr, *fill = nullptr;
  bool true_hides = true;  // cond == true selects the fill
  if (scalar_constant(where->input(1))) {
    fill = where->input(1);
    chain = where->input(2);
  } else if (scalar_constant(where->input(2))) {
    fill = where->input(2);
    chain = where->input(1);
    true_hides = false;
  } else {
    return nullptr;
  }
  const Value* cond = where->input(0);
  if (const Node* n = producer(cond, "Not")) {
    cond = n->input(0);
    true_hides = !true_hides;
  }
  const Dim &sq = scores[scores.size() - 2], &sk = scores.back();
  if (const Node* lower = producer(cond, "Trilu")) {
    // The lower triangle is true where keys are visible.
    if (true_hides || lower->attr_int("upper", 1) != 0) return nullptr;
    int64_t k = 0;
    if (Value* kv = lower->input(1)) {
      const Tensor* t = constant_value(kv);
      if (!t || t->numel() != 1 || (t->dtype() != DType::Int64 && t->dtype() != DType::Int32)) return nullptr;
      k = t->to_int64_vector()[0];
    }
    if (Dim(k) != sk - sq) return nullptr;
    const Value* ones = lower->input(0);  // all true, [Sq, Sk]
    if (!same_dims(ones, {sq, sk})) return nullptr;
    if (const Node* cos = producer(ones, "ConstantOfShape")) {
      const Tensor* value = cos->attr_tensor("value");
      if (!value || value->numel() != 1 || value->to_float_vector()[0] == 0) return nullptr;
    } else {
      const Tensor* t = constant_value(ones);
      if (!t) return nullptr;
      for (float x : t->to_float_vector())
        if (x == 0) return nullptr;
    }
  } else {
    auto csq = sq.constant(), csk = sk.constant();
    if (!csq || !csk || !is_causal_constant(cond, *csq, *csk, true_hides)) return nullptr;
  }
  auto f = scalar_constant(fill);
  if (!f || fill->type.dtype != chain->type.dtype) return nullptr;
  const double lowest = attention_lowest(chain->type.dtype);
  const bool is_lowest = std::fabs(*f - lowest) <= constant_tolerance(fill->type.dtype, 1e-6) * std::fabs(lowest);
  const bool is_minus_inf = std::isinf(*f) && *f < 0 && sq == sk;
  return is_lowest || is_minus_inf ? chain : nullptr;
}

// True when `v` is Q.K^T, maybe scaled: the operand of the mask Add that carries the scores.
bool scores_product(const Value* v) {
  const Node* p = v ? v->producer() : nullptr;
  if (auto s = scaling(p)) p = s->x->producer();
  return is_op(p, "MatMul");
}

// A reduction over the last axis of a rank-`rank` tensor with keepdims: axes as the
// attribute (ReduceMax before opset 18) or a constant second input.
bool reduces_last_axis(const Node* n, int64_t rank) {
  if (!n || n->attr_int("keepdims", 1) != 1 || n->attr_int("noop_with_empty_axes", 0) != 0) return false;
  std::vector<int64_t> axes = n->attr_ints("axes");
  if (n->inputs().size() > 1 && n->input(1)) {
    const Tensor* t = constant_value(n->input(1));
    if (!t) return false;
    axes = t->to_int64_vector();
  }
  return axes.size() == 1 && (axes[0] == -1 || axes[0] == rank - 1);
}

}  // namespace

Value* divided_by_row_sums(Value* mixed, const std::optional<RowSoftmax>& rows, std::vector<Node*>& nodes) {
  if (!rows) return mixed;
  Node* div = sole_consumer(mixed);
  if (!is_op(div, "Div") || div->input(0) != mixed || div->input(1) != rows->sum->output(0)) return nullptr;
  nodes.push_back(div);
  return div->output(0);
}

Value* through_fake_quant(Value* v, FakeQuant& fq, bool allow_int16) {
  auto f = fake_quant_of(v, allow_int16);
  if (!f || !single_use(v) || !single_use(f->quantize->output(0))) return nullptr;
  fq = *f;
  return f->x;
}

std::optional<RowSoftmax> row_softmax(Node* exp) {
  if (!is_op(exp, "Exp") || !exp->output(0)) return std::nullopt;
  Node* sub = exp->input(0)->producer();
  if (!is_op(sub, "Sub") || !single_use(sub->output(0))) return std::nullopt;
  RowSoftmax r{sub->input(0), sub->input(1)->producer(), sub, nullptr, nullptr};
  const DimVector* sd = dims_of(r.scores);
  if (!sd || !is_op(r.max, "ReduceMax") || r.max->input(0) != r.scores || !single_use(r.max->output(0)) ||
      !reduces_last_axis(r.max, static_cast<int64_t>(sd->size())))
    return std::nullopt;
  const Value* e = exp->output(0);
  if (e->uses().size() != 2 || e->is_graph_output()) return std::nullopt;
  for (const Use& u : e->uses()) {
    if (is_op(u.node, "ReduceSum") && u.index == 0 && reduces_last_axis(u.node, static_cast<int64_t>(sd->size())))
      r.sum = u.node;
    else if (is_op(u.node, "QuantizeLinear") && u.index == 0)
      r.quantize = u.node;
  }
  if (!r.sum || !r.quantize || !single_use(r.sum->output(0))) return std::nullopt;
  return r;
}

bool match(Node* sm, Match& m) {
  m = Match{};
  std::optional<RowSoftmax> rows;
  if (is_op(sm, "Exp")) {
    if (!(rows = row_softmax(sm))) return false;
  } else if (!is_op(sm, "Softmax") || !sm->output(0)) {
    return false;
  }
  Value* x = rows ? rows->scores : sm->input(0);
  const DimVector* sd = dims_of(x);
  if (!sd || (sd->size() != 3 && sd->size() != 4) || !dtype_is_float(x->type.dtype)) return false;
  const int64_t rank = static_cast<int64_t>(sd->size());
  const int64_t axis = rows ? -1 : sm->attr_int("axis", sm->opset() >= 13 ? -1 : 1);
  if (axis != -1 && axis != rank - 1) return false;  // before opset 13 the last axis is also the 2-D coercion's
  if (rows) {
    m.row_probabilities = true;
    for (Node* n : {rows->max, rows->sub, rows->sum}) m.nodes.push_back(n);
  }
  const bool seq_first = rank == 3;
  const DimVector scores = *sd;
  m.softmax = sm;
  m.seq_first = seq_first;
  m.nodes.push_back(sm);

  // Backwards from the Softmax: [Where causal] <- [Add mask] <- [scale] <- MatMul.
  Node* n = x->producer();
  if (is_op(n, "Where")) {
    Value* chain = causal_where(n, scores);
    if (!chain) return false;
    m.causal = true;
    m.nodes.push_back(n);
    n = chain->producer();
  }
  if (is_op(n, "Add") && n->inputs().size() == 2) {
    Value* chain = nullptr;
    for (int side = 0; side < 2 && !chain; ++side)
      if (scores_product(n->input(side))) chain = n->input(side);
    Value* mask = chain ? other_input(n, chain) : nullptr;
    if (!mask || mask == chain || !same_dims(n->output(0), scores) || !same_dims(chain, scores)) return false;
    if (mask->type.dtype != x->type.dtype || !mask->type.has_rank() || mask->type.rank() > (seq_first ? 2 : 4))
      return false;
    m.mask = mask;
    m.nodes.push_back(n);
    n = chain->producer();
  }
  if (auto s = scaling(n)) {
    m.scale *= s->factor;
    m.nodes.push_back(n);
    n = s->x->producer();
  }
  Node* mm1 = n;
  if (!is_op(mm1, "MatMul") || !same_dims(mm1->output(0), scores)) return false;
  m.nodes.push_back(mm1);

  // Quantized attention: fake quantizations right before both products.
  Value* qh = mm1->input(0);
  Value* kh = mm1->input(1);
  Node* p_consumer = rows ? rows->quantize : sole_consumer(sm->output(0));
  Value* probs = sm->output(0);
  if (rows && !(fake_quant_of(qh) && fake_quant_of(kh))) return false;  // written out only when quantized
  if (fake_quant_of(qh) || fake_quant_of(kh) || is_op(p_consumer, "QuantizeLinear")) {
    m.quantized = true;
    qh = through_fake_quant(qh, m.q_quant);
    kh = through_fake_quant(kh, m.k_quant);
    Value* dq_probs = nullptr;  // Softmax -> QuantizeLinear -> DequantizeLinear -> P.V
    if (is_op(p_consumer, "QuantizeLinear"))
      if (Node* dq = sole_consumer(p_consumer->output(0))) dq_probs = dq->output(0);
    if (rows && dq_probs) {  // E has its ReduceSum as a second reader: check the pair by hand
      auto f = fake_quant_of(dq_probs, /*allow_int16=*/true);
      if (!f || f->quantize != p_consumer || !single_use(p_consumer->output(0))) return false;
      m.p_quant = *f;
    } else if (!qh || !kh || !dq_probs || through_fake_quant(dq_probs, m.p_quant, /*allow_int16=*/true) != probs) {
      return false;
    }
    if (!qh || !kh) return false;
    probs = dq_probs;
    for (const FakeQuant* f : {&m.q_quant, &m.k_quant, &m.p_quant}) {
      m.nodes.push_back(f->quantize);
      m.nodes.push_back(f->dequantize);
    }
  }
  // Q: maybe scaled before the product (nn.MultiheadAttention), then the head split.
  if (auto s = scaling(qh->producer())) {
    m.scale *= s->factor;
    m.q_prescale = s->factor;
    m.nodes.push_back(qh->producer());
    qh = s->x;
  }
  const std::vector<int64_t> qv_perm = seq_first ? std::vector<int64_t>{1, 0, 2} : std::vector<int64_t>{0, 2, 1, 3};
  const std::vector<int64_t> k_perm = seq_first ? std::vector<int64_t>{1, 2, 0} : std::vector<int64_t>{0, 2, 3, 1};
  auto q = head_split(qh, qv_perm, seq_first);
  auto k = head_split(kh, k_perm, seq_first);

  // Forwards: Softmax [-> Q/DQ] -> MatMul(., V) -> Transpose -> Reshape.
  Node* mm2 = sole_consumer(probs);
  if (!is_op(mm2, "MatMul") || mm2->input(0) != probs) return false;
  Value* vh = mm2->input(1);
  if (m.quantized) {
    if (!(vh = through_fake_quant(vh, m.v_quant))) return false;
    m.nodes.push_back(m.v_quant.quantize);
    m.nodes.push_back(m.v_quant.dequantize);
  }
  auto v = head_split(vh, qv_perm, seq_first);
  if (!q || !k || !v) return false;
  if (q->reshape == k->reshape || q->reshape == v->reshape || k->reshape == v->reshape) return false;
  if (q->heads != k->heads || q->heads != v->heads || q->size != k->size) return false;
  // Batch and lengths agree across Q, K, V (symbolically).
  const DimVector &qd = *dims_of(q->x), &kd = *dims_of(k->x), &vd = *dims_of(v->x);
  const size_t bi = seq_first ? 1 : 0, si = seq_first ? 0 : 1;
  if (qd[bi] != kd[bi] || qd[bi] != vd[bi] || kd[si] != vd[si]) return false;
  if (q->x->type.dtype != x->type.dtype || k->x->type.dtype != x->type.dtype || v->x->type.dtype != x->type.dtype)
    return false;
  for (const Head* h : {&*q, &*k, &*v}) {
    m.nodes.push_back(h->reshape);
    m.nodes.push_back(h->transpose);
  }
  m.nodes.push_back(mm2);

  Value* mixed = divided_by_row_sums(mm2->output(0), rows, m.nodes);
  if (!mixed) return false;
  Node* merge = sole_consumer(mixed);
  if (!has_perm(merge, qv_perm)) return false;
  m.nodes.push_back(merge);
  Node* fin = nullptr;
  for (const Use& u : merge->output(0)->uses())
    if (is_op(u.node, "Reshape") && u.index == 0) fin = fin ? nullptr : u.node;  // exactly one Reshape
  if (!fin || !fin->output(0)) return false;
  const Dim channels = Dim(q->heads * v->size);
  const DimVector y = {qd[0], qd[1], channels};  // Q's leading axes, in either layout
  m.final_reshape = fin;
  if (same_dims(fin->output(0), y)) {
    m.nodes.push_back(fin);
  } else {
    // Kept, reading Y: same elements in the same order, so only a 0 ("copy this dim")
    // in its target could see the different input shape.
    if (!seq_first || !dims_of(fin->output(0))) return false;
    if (fin->attr_int("allowzero", 0) == 0) {
      const Value* target = fin->input(1);
      std::optional<DimVector> values = target->known_values;
      if (const Tensor* t = constant_value(target)) {
        values = DimVector{};
        for (int64_t e : t->to_int64_vector()) values->push_back(Dim(e));
      }
      if (!values) return false;
      for (const Dim& d : *values)
        if (d.constant() && *d.constant() == 0) return false;
    }
    m.keep_final_reshape = true;
  }
  m.q = q->x;
  m.k = k->x;
  m.v = v->x;
  m.heads = q->heads;
  return true;
}

}  // namespace octet::passes::attention
