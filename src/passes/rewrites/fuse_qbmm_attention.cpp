// Static int8 attention in the BART-family per-head 3-D ("bmm") layout (Marian, Whisper
// encoders, as `octet quantize --calib` writes them) -> octet.QAttention on the [B,S,E]
// projections.
//
// The float chain is fuse_bmm_attention's (see there for the layout and the shape proofs);
// the quantizer adds per-tensor fake quantizations (Q/DQ pairs read by the chain alone) on
// both inputs of each product:
//   Q3 = Q/DQ(Reshape [B*H,S,D](Q4)), K^T = Q/DQ(Transpose(0,2,1)(Reshape(K4))),
//   MatMul [-> scale] [-> Reshape -> Add mask -> Reshape]
//   -> either Softmax -> Q/DQ(P) -> MatMul(., Q/DQ(Reshape(V4)))
//      or its default --attention int8 written out per row (row_probabilities = 1):
//      E = Exp(S - ReduceMax(S)), MatMul(Q/DQ(E), Q/DQ(V3)) / ReduceSum(E)
//   -> Reshape [B,H,S,Dv] -> Transpose(0,2,1,3) -> Reshape [B,S,H*Dv]
// A per-tensor quantization does not see the layout: quantizing Q3 is quantizing the
// projection Q, K^T is K, V3 is V. So the scales and zero points move unchanged onto
// octet.QAttention(q, k, v, mask?, scales and zero points) with the chain's num_heads and
// scale (fuse_attention's contract, whose apply step this pass shares).
//
// The encoder's self-attention, where Q4, K4 and V4 are the chain's own head splits of
// 3-D projections, becomes octet.QAttention. Decoder attention reads 4-D caches (past
// Concat, cross-attention inputs): it becomes octet.GroupedAttention(Q4, K4, V4 [, mask])
// with the four fake quantizations as inputs (the op rounds Q, K, V and P exactly as the
// Q/DQ pairs do, row_probabilities as the chain has it), so the in-place decoder runners
// can turn it into CachedAttention like a float one.
#include <optional>
#include <tuple>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/attention_chain.h"
#include "passes/rewrites/bmm_attention_chain.h"
#include "passes/rewrites/fuse_attention_match.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

using namespace bmm;

// P's fake quantization: after the Softmax (its sole reader) or on the row form's E (whose
// second reader is its ReduceSum). The dequantized probabilities, or nullptr.
Value* quantized_probabilities(Node* sm, const std::optional<attention::RowSoftmax>& rows, FakeQuant& fq) {
  Node* q = rows ? rows->quantize : sole_consumer(sm->output(0));
  if (!is_op(q, "QuantizeLinear") || q->input(0) != sm->output(0)) return nullptr;
  Node* dq = sole_consumer(q->output(0));
  if (!dq || !dq->output(0)) return nullptr;
  Value* probs = dq->output(0);
  if (rows) {
    auto f = fake_quant_of(probs, /*allow_int16=*/true);
    if (!f || f->quantize != q || !single_use(q->output(0))) return nullptr;
    fq = *f;
  } else if (attention::through_fake_quant(probs, fq, /*allow_int16=*/true) != sm->output(0)) {
    return nullptr;
  }
  return probs;
}

// The match, and whether it is the grouped (decoder) form on Q4/K4/V4.
struct QMatch : attention::Match {
  bool grouped = false;
};

bool match_int8_bmm(Node* sm, QMatch& qm) {
  qm.grouped = false;
  attention::Match& m = qm;
  m = attention::Match{};
  std::optional<attention::RowSoftmax> rows;
  if (is_op(sm, "Exp")) {
    if (!(rows = attention::row_softmax(sm))) return false;
  } else if (!is_op(sm, "Softmax") || !sm->output(0)) {
    return false;
  }
  Value* s = rows ? rows->scores : sm->input(0);
  const DimVector* sd = dims_of(s);
  if (!sd || sd->size() != 3 || s->type.dtype != DType::Float32) return false;
  if (!rows) {
    const int64_t axis = sm->attr_int("axis", sm->opset() >= 13 ? -1 : 1);
    if ((axis != -1 && axis != 2) || !single_use(s)) return false;
  }
  m.softmax = sm;
  m.quantized = true;
  m.row_probabilities = rows.has_value();
  if (rows) m.nodes.insert(m.nodes.end(), {rows->max, rows->sub, rows->sum});
  m.nodes.push_back(sm);

  Value* scores4 = nullptr;
  Node* qk = scores_product(s, m.nodes, m.mask, scores4, m.scale);
  if (!qk) return false;
  Value* q3 = attention::through_fake_quant(qk->input(0), m.q_quant);
  Value* kt3 = attention::through_fake_quant(qk->input(1), m.k_quant);
  if (!q3 || !kt3) return false;
  Node* kt = producer(kt3, "Transpose");
  if (!kt || !has_perm(kt, {0, 2, 1}) || !single_use(kt3)) return false;
  m.nodes.push_back(kt);
  Value* q4 = unmerged(q3, m.nodes);
  Value* k4 = unmerged(kt->input(0), m.nodes);
  Value* probs = quantized_probabilities(sm, rows, m.p_quant);
  Node* pv = probs ? sole_consumer(probs) : nullptr;
  if (!q4 || !k4 || !is_op(pv, "MatMul") || pv->input(0) != probs) return false;
  Value* v3 = attention::through_fake_quant(pv->input(1), m.v_quant);
  Value* v4 = v3 ? unmerged(v3, m.nodes) : nullptr;
  if (!v4) return false;
  for (const FakeQuant* f : {&m.q_quant, &m.k_quant, &m.p_quant, &m.v_quant})
    m.nodes.insert(m.nodes.end(), {f->quantize, f->dequantize});
  m.nodes.push_back(pv);

  Value* mixed = attention::divided_by_row_sums(pv->output(0), rows, m.nodes);
  if (!mixed) return false;
  Node* split = nullptr;
  std::tie(split, m.final_reshape) = heads_merged(mixed, m.nodes);
  if (!split) return false;

  const auto h = chain_heads(q4, k4, v4, qk->output(0), sm->output(0), scores4, split->output(0),
                             m.final_reshape->output(0));
  if (!h) return false;
  m.heads = *h;
  // Encoder self-attention: all three head splits are the chain's own.
  std::vector<Node*> splits;
  m.q = projection_of(q4, *h, splits);
  m.k = m.q ? projection_of(k4, *h, splits) : nullptr;
  m.v = m.k ? projection_of(v4, *h, splits) : nullptr;
  if (m.v && dims_of(m.k) && dims_of(m.v) && (*dims_of(m.k))[1] == (*dims_of(m.v))[1]) {
    m.nodes.insert(m.nodes.end(), splits.begin(), splits.end());
    return true;
  }
  // Anything else (a decoder's caches): the grouped form on the 4-D tensors.
  qm.grouped = true;
  m.q = q4, m.k = k4, m.v = v4;
  return true;
}

// octet.GroupedAttention with the fake quantization inputs (see the header comment).
bool apply_grouped(Graph& g, PassContext& ctx, const attention::Match& m, std::vector<Node*>& removed) {
  std::vector<Node*> dying;
  std::vector<const Value*> outside = {m.q, m.k, m.v, m.mask};
  for (const FakeQuant* f : {&m.q_quant, &m.k_quant, &m.v_quant, &m.p_quant})
    outside.insert(outside.end(), {f->scale, f->zero_point});
  if (!chain_dying_readers(m.nodes, m.final_reshape, outside, dying) || read_by_subgraph(m.final_reshape->output(0)))
    return false;
  GraphPatch patch = make_patch(g);
  std::vector<Value*> inputs = {m.q, m.k, m.v, m.mask, nullptr};
  for (const FakeQuant* f : {&m.q_quant, &m.k_quant, &m.v_quant, &m.p_quant})
    inputs.insert(inputs.end(), {f->scale, f->zero_point});
  while (!inputs.back()) inputs.pop_back();
  std::vector<Attribute> attrs = {Attribute::make_float("scale", static_cast<float>(m.scale)),
                                  Attribute::make_int("row_probabilities", m.row_probabilities ? 1 : 0)};
  Node* fused = patch.add_node("GroupedAttention", inputs, 1, std::move(attrs), "octet",
                               m.softmax->name() + "_qbmm_attention");
  if (!can_replace(m.final_reshape->output(0), fused->output(0))) return false;
  patch.replace_uses(m.final_reshape->output(0), fused->output(0));
  if (!finish_fusion(g, ctx, patch, m.nodes, dying, removed)) return false;
  ctx.count(std::string("octet.GroupedAttention(int8 bmm") + (m.mask ? ", mask" : "") + ")");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  return fuse_chains<QMatch>(
      g, [](Node* n, QMatch& m) { return (is_op(n, "Softmax") || is_op(n, "Exp")) && match_int8_bmm(n, m); },
      [&](const QMatch& m, std::vector<Node*>& gone) {
        return m.grouped ? apply_grouped(g, ctx, m, gone) : attention::apply(g, ctx, m, gone);
      });
}

}  // namespace

Pass fuse_qbmm_attention() { return {"fuse_qbmm_attention", run}; }

}  // namespace octet::passes
