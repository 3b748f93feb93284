// Attention over a KV cache as transformers' decoders with past export it
// -> octet.GroupedAttention(Q, K, V [, mask] [, keep]) (src/ops/octet_grouped_attention.cpp).
//
// Pattern (anchored at the Softmax), on the heads-split 4-D tensors:
//   K [B,G,T,D] (present.N.key: Concat(past, new) stays, the model's output)
//     [-> repeat_kv: Unsqueeze(axes [2]) -> Expand [B,G,n,T,D] -> Reshape [B,G*n,T,D]]
//     -> Transpose(0,1,3,2)
//     (or, T5 without past: Transpose(0,2,3,1) of the head split [B,T,H,D] whose
//      Transpose(0,2,1,3) is K, present.N.key)
//   MatMul(Q [B,H,S,D], K^T) [-> Div|Mul by a scalar constant]   (T5: none, scale 1)
//     [-> Where(keep, s, fill constant)]   (GPT-2's causal Where)
//     [-> Add(., mask)]                    (Llama's [B,1,S,T] causal+padding mask; GPT-2's padding)
//   -> Softmax(-1) -> MatMul(., V [repeat_kv'd as K]) -> Transpose(0,2,1,3) -> Reshape [B,S,H*Dv]
// Llama (GQA, G = 3 of H = 9 for SmolLM2), GPT-2 (MHA, G = H) and T5's decoders (MHA, the
// relative position bias + mask as the mask) write it. RoPE and
// the mask construction stay in the graph; fuse_attention runs first and keeps the
// attention blocks it fuses (prompt-only exports), so this pass only takes what it leaves.
//
// repeat_kv is accepted only when inference proved its shapes: the Expand's result is
// [B,G,n,T,D] with the Unsqueeze's input dims around a constant n, and the Reshape merges
// G and n into H = G*n, so query head h reads key/value head h / n, as the op defines.
// Static int8 (octet quantize --calib, T5's decoders): per-tensor Q/DQ pairs on Q, on K^T,
// on V and on the probabilities, the softmax a Softmax or written out per row
// (E = Exp(S - ReduceMax(S)), Q/DQ(E) . V, then Div by ReduceSum(E)). All four or none;
// they become the op's fake quantization inputs (row_probabilities as written), so the
// fused op rounds exactly where the graph did.
//
// The shape arithmetic feeding the swallowed nodes dies with them (dead code removal);
// results inside the chain read by anything else (but shape computations feeding only the
// chain) leave the block alone.
#include <cmath>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/attention_chain.h"
#include "passes/rewrites/fuse_attention_match.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

struct Match {
  Value *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr, *keep = nullptr;
  double scale = 1, fill = 0;
  Node* softmax = nullptr;
  Node* reshape = nullptr;  // the final Reshape, whose output Y replaces
  std::vector<Node*> nodes;
  // static int8: the four fake quantizations, and the per-row softmax form
  bool quantized = false, row_probabilities = false;
  FakeQuant q_quant, k_quant, v_quant, p_quant;
};

// `x` past a Q/DQ pair (DequantizeLinear(QuantizeLinear(y))): y; else x. For recognizing
// the scores' operands only; the match itself takes the pairs with through_fake_quant.
const Value* past_fake_quant(const Value* x) {
  const auto f = fake_quant_of(x);
  return f ? f->x : x;
}

const std::optional<DimVector>& dims(const Value* v) { return v->type.dims; }

std::optional<int64_t> dim_at(const Value* v, size_t axis) {
  const auto& d = dims(v);
  if (!d || d->size() <= axis) return std::nullopt;
  return (*d)[axis].constant();
}

bool rank_is(const Value* v, size_t rank) { return dims(v) && dims(v)->size() == rank; }

bool perm_is(const Node* t, std::vector<int64_t> perm) { return t->attr_ints("perm") == perm; }

bool ints_constant_is(const Value* v, std::vector<int64_t> want) {
  const Tensor* t = constant_value(v);
  if (!t || t->dtype() != DType::Int64 || t->numel() != static_cast<int64_t>(want.size())) return false;
  for (size_t i = 0; i < want.size(); ++i)
    if (t->data<int64_t>()[i] != want[i]) return false;
  return true;
}

// `x` when it is a plain [B,G,T,D] key/value tensor, or the input of a repeat_kv chain that
// makes it [B,G*n,T,D]; nodes of the chain are appended. nullptr when neither.
Value* through_repeat_kv(Value* x, std::vector<Node*>& nodes) {
  if (!rank_is(x, 4)) return nullptr;
  Node* reshape = producer(x, "Reshape");
  if (!reshape) return x;
  Node* expand = producer(reshape->input(0), "Expand");
  Node* unsq = expand ? producer(expand->input(0), "Unsqueeze") : nullptr;
  if (!unsq || !single_use(reshape->input(0)) || !single_use(expand->input(0))) return nullptr;
  Value* kv = unsq->input(0);
  const bool axes_ok = unsq->inputs().size() == 2 ? ints_constant_is(unsq->input(1), {2})
                                                  : unsq->attr_ints("axes") == std::vector<int64_t>{2};
  if (!axes_ok || !rank_is(kv, 4) || !rank_is(expand->output(0), 5)) return nullptr;
  const DimVector &in = *dims(kv), &ex = *dims(expand->output(0)), &out = *dims(x);
  const auto n = ex[2].constant(), g = in[1].constant(), h = out[1].constant();
  if (!n || !g || !h || *h != *g * *n) return nullptr;
  if (!(ex[0] == in[0] && ex[1] == in[1] && ex[3] == in[2] && ex[4] == in[3])) return nullptr;
  if (!(out[0] == in[0] && out[2] == in[2] && out[3] == in[3])) return nullptr;
  nodes.insert(nodes.end(), {reshape, expand, unsq});
  return kv;
}

// K [B,H,T,D] when `split` [B,T,H,D] (a head-split Reshape's result) is also read by a
// Transpose(0,2,1,3): K^T = Transpose(0,2,3,1)(split) is that K's Transpose(0,1,3,2).
Value* present_key_of(Value* split) {
  if (!rank_is(split, 4) || !producer(split, "Reshape")) return nullptr;
  for (const Use& u : split->uses())
    if (is_op(u.node, "Transpose") && u.index == 0 && perm_is(u.node, {0, 2, 1, 3})) return u.node->output(0);
  return nullptr;
}

bool match(Node* softmax, Match& m) {
  m.softmax = softmax;
  std::optional<attention::RowSoftmax> rows;
  if (is_op(softmax, "Exp")) {
    if (!(rows = attention::row_softmax(softmax))) return false;
    m.quantized = m.row_probabilities = true;
    m.nodes.insert(m.nodes.end(), {rows->max, rows->sub, rows->sum});
  }
  const int64_t axis = rows ? -1 : softmax->attr_int("axis", -1);
  Value* s = rows ? rows->scores : softmax->input(0);
  if (!rank_is(s, 4) || (axis != -1 && axis != 3) || (!rows && !single_use(s))) return false;
  m.nodes.push_back(softmax);
  // [Add(., mask)]
  // The scores are the operand made by the scaling (or by a Where over it); the mask,
  // itself often a Where, is the other.
  if (Node* add = producer(s, "Add")) {
    auto scaled = [](const Value* x) {
      return producer(x, "Div") || producer(x, "Mul");
    };
    // T5 does not scale: its scores are the product itself, Q.K^T with K^T a Transpose.
    auto unscaled = [](const Value* x) {
      const Node* mm = producer(x, "MatMul");
      return mm && producer(past_fake_quant(mm->input(1)), "Transpose");
    };
    auto is_scores = [&](const Value* x) {
      if (!single_use(x)) return false;
      const Node* w = producer(x, "Where");
      return scaled(x) || unscaled(x) || (w && scaled(w->input(1)));
    };
    const int i = is_scores(add->input(0)) ? 0 : is_scores(add->input(1)) ? 1 : -1;
    if (i < 0 || !rank_is(add->output(0), 4)) return false;
    m.mask = add->input(1 - i);
    s = add->input(i);
    m.nodes.push_back(add);
  }
  // [Where(keep, s, fill)]
  if (Node* where = producer(s, "Where")) {
    const auto fill = scalar_constant(where->input(2));
    if (!fill || !single_use(where->input(1)) || where->input(0)->type.dtype != DType::Bool ||
        !rank_is(where->output(0), 4))
      return false;
    m.keep = where->input(0);
    m.fill = *fill;
    s = where->input(1);
    m.nodes.push_back(where);
  }
  // Div|Mul by a scalar constant, or none (T5: scale 1)
  Node* sc = producer(s, "Div");
  if (!sc) sc = producer(s, "Mul");
  if (!sc && !producer(s, "MatMul")) return false;
  Value* prod = sc ? nullptr : s;
  for (int i = 0; i < 2 && !prod; ++i) {
    const auto c = scalar_constant(sc->input(1 - i));
    if (!c || (is_op(sc, "Div") && i == 1)) continue;
    if (!is_scalar(sc->input(1 - i), *c, sc->input(i))) continue;
    prod = sc->input(i);
    m.scale = is_op(sc, "Div") ? 1.0 / *c : *c;
  }
  if (!prod || !single_use(prod) || !std::isfinite(m.scale) || m.scale == 0) return false;
  if (sc) m.nodes.push_back(sc);
  Node* qk = producer(prod, "MatMul");
  if (!qk) return false;
  m.nodes.push_back(qk);
  m.q = qk->input(0);
  Value* kt_out = qk->input(1);
  if (fake_quant_of(m.q) || m.quantized) {  // static int8: Q/DQ on both operands
    m.quantized = true;
    m.q = attention::through_fake_quant(qk->input(0), m.q_quant);
    kt_out = attention::through_fake_quant(qk->input(1), m.k_quant);
    if (!m.q || !kt_out) return false;
  }
  Node* kt = producer(kt_out, "Transpose");
  if (!kt || !single_use(kt_out) || !rank_is(m.q, 4)) return false;
  m.nodes.push_back(kt);
  if (perm_is(kt, {0, 2, 3, 1})) {
    // T5 without past: K^T is Transpose(0,2,3,1) of the head split [B,T,H,D], whose
    // Transpose(0,2,1,3) (present.N.key) is K.
    m.k = present_key_of(kt->input(0));
  } else {
    if (!perm_is(kt, {0, 1, 3, 2})) return false;
    if (kt->input(0)->producer() && is_op(kt->input(0)->producer(), "Reshape") && !single_use(kt->input(0)))
      return false;
    m.k = through_repeat_kv(kt->input(0), m.nodes);
  }
  // After the Softmax: MatMul(P, V) -> Transpose(0,2,1,3) -> Reshape [B,S,H*Dv]
  // (static int8: MatMul(Q/DQ(P), Q/DQ(V)) [-> Div by ReduceSum(E) in the per-row form])
  Value* probs = softmax->output(0);
  if (m.quantized) {
    Node* q = rows ? rows->quantize : sole_consumer(softmax->output(0));
    Node* dq = is_op(q, "QuantizeLinear") && q->input(0) == softmax->output(0) ? sole_consumer(q->output(0)) : nullptr;
    // P may have 16-bit levels (octet quantize's probabilities on the octet target).
    const auto f = dq && dq->output(0) ? fake_quant_of(dq->output(0), /*allow_int16=*/true) : std::nullopt;
    if (!f || f->quantize != q || !single_use(q->output(0)) || !single_use(dq->output(0))) return false;
    m.p_quant = *f;
    probs = dq->output(0);
  }
  Node* pv = sole_consumer(probs);
  if (!m.k || !pv || !is_op(pv, "MatMul") || pv->input(0) != probs) return false;
  m.nodes.push_back(pv);
  Value* vx = pv->input(1);
  if (m.quantized && !(vx = attention::through_fake_quant(vx, m.v_quant))) return false;
  if (vx->producer() && is_op(vx->producer(), "Reshape") && !single_use(vx)) return false;
  m.v = through_repeat_kv(vx, m.nodes);
  Value* mixed = attention::divided_by_row_sums(pv->output(0), rows, m.nodes);
  if (!mixed) return false;
  if (m.quantized)
    for (const FakeQuant* f : {&m.q_quant, &m.k_quant, &m.p_quant, &m.v_quant})
      m.nodes.insert(m.nodes.end(), {f->quantize, f->dequantize});
  Node* tr = sole_consumer(mixed);
  if (!m.v || !tr || !is_op(tr, "Transpose") || !perm_is(tr, {0, 2, 1, 3})) return false;
  m.nodes.push_back(tr);
  // The merge Reshape; other readers (GPT-2 takes the merged shape from Shape nodes) must
  // die with the chain (dying_readers).
  m.reshape = nullptr;
  if (tr->output(0)->is_graph_output()) return false;
  for (const Use& u : tr->output(0)->uses())
    if (is_op(u.node, "Reshape") && u.index == 0) {
      if (m.reshape) return false;
      m.reshape = u.node;
    }
  if (!m.reshape) return false;
  m.nodes.push_back(m.reshape);
  // Shapes: Q [B,H,S,D], K [B,G,T,D], V [B,G,T,Dv], Y [B,S,H*Dv], H a multiple of G.
  const auto h = dim_at(m.q, 1), g = dim_at(m.k, 1), d = dim_at(m.q, 3), dk = dim_at(m.k, 3), dv = dim_at(m.v, 3);
  if (!h || !g || !d || !dk || !dv || *d != *dk || *g < 1 || *h % *g != 0 || dim_at(m.v, 1) != g) return false;
  const Value* y = m.reshape->output(0);
  if (!rank_is(y, 3) || dim_at(y, 2) != std::optional<int64_t>(*h * *dv)) return false;
  // Y keeps Q's batch and H*Dv channels, so its middle dim is S: the Reshape merged only
  // the heads. (Its inferred middle dim may be written differently: GPT-2's causal slice
  // makes it max(min(256, past+S) - past, S).)
  if (!((*dims(y))[0] == (*dims(m.q))[0])) return false;
  if (m.q->type.dtype != DType::Float32 || m.k->type.dtype != DType::Float32 ||
      m.v->type.dtype != DType::Float32)
    return false;
  if (m.mask && (m.mask->type.dtype != DType::Float32 || !dims(m.mask) || dims(m.mask)->size() > 4)) return false;
  if (m.keep && (!dims(m.keep) || dims(m.keep)->size() > 4)) return false;
  return true;
}

bool apply(Graph& g, PassContext& ctx, const Match& m, std::vector<Node*>& removed) {
  std::vector<Node*> dying;
  std::vector<const Value*> outside = {m.q, m.k, m.v, m.mask, m.keep};
  std::vector<Value*> inputs = {m.q, m.k, m.v, m.mask, m.keep};
  if (m.quantized)
    for (const FakeQuant* f : {&m.q_quant, &m.k_quant, &m.v_quant, &m.p_quant}) {
      outside.insert(outside.end(), {f->scale, f->zero_point});
      inputs.insert(inputs.end(), {f->scale, f->zero_point});
    }
  if (!chain_dying_readers(m.nodes, m.reshape, outside, dying) || read_by_subgraph(m.reshape->output(0))) return false;
  GraphPatch patch = make_patch(g);
  while (!inputs.back()) inputs.pop_back();
  std::vector<Attribute> attrs = {Attribute::make_float("scale", static_cast<float>(m.scale))};
  if (m.keep) attrs.push_back(Attribute::make_float("fill", static_cast<float>(m.fill)));
  if (m.quantized) attrs.push_back(Attribute::make_int("row_probabilities", m.row_probabilities ? 1 : 0));
  Node* fused = patch.add_node("GroupedAttention", inputs, 1, std::move(attrs), "octet",
                               m.softmax->name() + "_grouped_attention");
  if (!can_replace(m.reshape->output(0), fused->output(0))) return false;
  patch.replace_uses(m.reshape->output(0), fused->output(0));
  const bool grouped = dim_at(m.q, 1) != dim_at(m.k, 1);
  if (!finish_fusion(g, ctx, patch, m.nodes, dying, removed)) return false;
  ctx.count(std::string("octet.GroupedAttention(") + (m.quantized ? "int8 " : "") + (grouped ? "gqa" : "mha") +
            (m.keep ? ", keep" : "") +
            (m.mask ? ", mask" : "") + ")");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  return fuse_chains<Match>(
      g, [](Node* n, Match& m) { return (is_op(n, "Softmax") || is_op(n, "Exp")) && match(n, m); },
      [&](const Match& m, std::vector<Node*>& gone) { return apply(g, ctx, m, gone); });
}

}  // namespace

Pass fuse_grouped_attention() { return {"fuse_grouped_attention", run}; }

}  // namespace octet::passes
