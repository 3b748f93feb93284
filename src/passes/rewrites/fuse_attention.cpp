// Multi-head attention as exporters write it -> octet.Attention(Q, K, V [, mask]).
// Quantized (Q/DQ pairs right before both inputs of Q.K^T and of P.V, as octet quantize
// and onnxruntime's quantizer write them) -> octet.QAttention with those pairs' scales
// and zero points (docs/quantization.md §2).
//
// Patterns (anchored at the Softmax, or at the Exp of the softmax octet quantize writes out
// for its default --attention int8; the matcher is fuse_attention_match.cpp):
//   batch-first, per-head 4-D (HF BERT, GPT-2):
//     Q/K/V [B,S,E] -Reshape-> [B,S,H,D] -Transpose(0,2,1,3)->   (K: Transpose(0,2,3,1))
//     MatMul(Q, K^T) [-> Div|Mul scale] [-> Add mask] [-> Where causal] -> Softmax(-1)
//     -> MatMul(., V) -> Transpose(0,2,1,3) -> Reshape [B,S,H*D]
//   seq-first, batch*heads 3-D (nn.MultiheadAttention, seq_first=1):
//     Q/K/V [S,B,E] -Reshape-> [S,B*H,D] -Transpose(1,0,2)->     (K: Transpose(1,2,0))
//     [Q scaled by Div|Mul before the product] MatMul -> [scale] [Add mask of rank <= 2]
//     -> Softmax -> MatMul(., V) -> Transpose(1,0,2) -> Reshape (to [S,B,E], or kept when
//     it flattens to [S*B, E]: it then reads Y, which holds the same elements in order)
// GPT-2's Split of the fused c_attn output is matched through: the Split outputs are Q, K
// and V. The causal Where must be Where(Not(Trilu_lower(all-true [Sq,Sk], k=Sk-Sq)),
// lowest, s) or Where(Trilu_lower(...), s, lowest); a mask built any other way (the older
// HF sliced lower-triangular buffer, a Where after the mask Add) is not matched.
//
// Swallowed values: every result inside the chain is read by the chain alone, except by
// shape computations (Shape -> Gather -> Concat ... the exporter's view() arithmetic, the
// causal matrix's size) whose every result flows only into the chain: those die with it
// and are removed in the same patch, since a patch may not leave a reader of a removed
// value. Anything else reading inside the chain, a graph output or a subgraph read, and
// the block is left alone. The projections and the mask survive as the fused node's inputs.
#include <set>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/attention_chain.h"
#include "passes/rewrites/fuse_attention_match.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

// The shape computations that read results inside the chain; false when one of them
// (or what it feeds) reaches anything that outlives the chain.
bool dying_readers(const attention::Match& m, std::vector<Node*>& dying) {
  constexpr size_t kMaxDying = 64;  // the exporters' shape arithmetic is a dozen nodes
  const std::set<const Node*> chain(m.nodes.begin(), m.nodes.end());
  std::set<const Node*> seen;
  std::vector<Node*> work;
  for (const Node* n : m.nodes) {
    for (const Value* out : n->outputs()) {
      if (!out) continue;
      const bool replaced = n == m.final_reshape && !m.keep_final_reshape;
      if (replaced) continue;  // its readers move to Y
      if (out->is_graph_output() || read_by_subgraph(out)) return false;
      for (const Use& u : out->uses()) {
        const bool rewired = u.node == m.final_reshape && u.index == 0;  // a kept final Reshape reads Y
        if (!chain.count(u.node) && !rewired) work.push_back(u.node);
      }
    }
  }
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    if (chain.count(n) || !seen.insert(n).second) continue;
    if (n == m.final_reshape || !n->implicit_inputs().empty() || seen.size() > kMaxDying) return false;
    dying.push_back(n);
    for (const Value* out : n->outputs()) {
      if (!out) continue;
      if (out->is_graph_output() || read_by_subgraph(out)) return false;
      for (const Use& u : out->uses()) work.push_back(u.node);
    }
  }
  // The fused node's inputs must outlive the patch.
  for (const Value* in : {m.q, m.k, m.v, m.mask})
    if (in && in->producer() && seen.count(in->producer())) return false;
  return true;
}

// octet.QAttention's eight scale / zero-point inputs, in its order (q, k, v, p). An absent
// zero point is ONNX's default, uint8 0, made explicit. Q's scale is divided by the
// scaling the match moved into the `scale` attribute (q_prescale), since the fused op
// quantizes Q before that scaling: round(c*q / s) and round(q / (s/c)) agree up to float
// rounding, and the product keeps scale * (s/c) * q_int = s * q_int.
void append_quant_params(GraphPatch& patch, const attention::Match& m, std::vector<Value*>& inputs) {
  for (const FakeQuant* f : {&m.q_quant, &m.k_quant, &m.v_quant, &m.p_quant}) {
    Value* scale = f->scale;
    if (f == &m.q_quant && m.q_prescale != 1.0) {
      const float s = constant_value(scale)->data<float>()[0];
      scale = patch.add_initializer(scale->name() + "_unscaled", Tensor::scalar<float>(static_cast<float>(s / m.q_prescale)));
    }
    Value* zp = f->zero_point ? f->zero_point : patch.add_initializer("attention_zero_point", Tensor::scalar<uint8_t>(0));
    inputs.push_back(scale);
    inputs.push_back(zp);
  }
}

}  // namespace

bool attention::apply(Graph& g, PassContext& ctx, const attention::Match& m, std::vector<Node*>& removed) {
  std::vector<Node*> dying;
  if (!dying_readers(m, dying)) return false;
  if (!m.keep_final_reshape && read_by_subgraph(m.final_reshape->output(0))) return false;

  GraphPatch patch = make_patch(g);
  std::vector<Value*> inputs = {m.q, m.k, m.v, m.mask};
  if (m.quantized) append_quant_params(patch, m, inputs);
  else if (!m.mask) inputs.pop_back();
  std::vector<Attribute> attrs = {Attribute::make_int("num_heads", m.heads),
                                  Attribute::make_float("scale", static_cast<float>(m.scale)),
                                  Attribute::make_int("causal", m.causal ? 1 : 0)};
  if (m.seq_first) attrs.push_back(Attribute::make_int("seq_first", 1));
  if (m.row_probabilities) attrs.push_back(Attribute::make_int("row_probabilities", 1));
  Node* fused = patch.add_node(m.quantized ? "QAttention" : "Attention", inputs, 1, std::move(attrs), "octet",
                               m.softmax->name() + "_attention");
  if (m.keep_final_reshape) {
    patch.set_input(m.final_reshape, 0, fused->output(0));
  } else {
    if (!can_replace(m.final_reshape->output(0), fused->output(0))) return false;
    patch.replace_uses(m.final_reshape->output(0), fused->output(0));
  }
  if (!finish_fusion(g, ctx, patch, m.nodes, dying, removed)) return false;
  ctx.count(std::string(m.quantized ? "octet.QAttention(" : "octet.Attention(") +
            (m.causal ? "causal" : m.mask ? "mask" : "none") + ")");
  return true;
}

namespace {

bool run(Graph& g, PassContext& ctx) {
  return fuse_chains<attention::Match>(
      g, [](Node* n, attention::Match& m) { return (is_op(n, "Softmax") || is_op(n, "Exp")) && attention::match(n, m); },
      [&](const attention::Match& m, std::vector<Node*>& gone) { return attention::apply(g, ctx, m, gone); });
}

}  // namespace

Pass fuse_attention() { return {"fuse_attention", run}; }

}  // namespace octet::passes
