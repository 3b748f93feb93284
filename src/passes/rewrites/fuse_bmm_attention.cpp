// Attention in the per-head 3-D ("bmm") layout that transformers' BART family (Marian,
// BART, mBART, Pegasus, Whisper) exports -> octet.Attention or octet.GroupedAttention.
//
// Pattern (anchored at the rank-3 Softmax), H heads, the 4-D tensors [B,H,.,D]:
//   Q4 [B,H,S,D] -Reshape-> [B*H,S,D]
//   K4 [B,H,T,D] -Reshape-> [B*H,T,D] -Transpose(0,2,1)->
//   MatMul [B*H,S,T] [-> Div|Mul by a scalar constant]
//     [-> Reshape [B,H,S,T] -> Add(., mask) -> Reshape [B*H,S,T]]   (padding / causal mask)
//   -> Softmax(-1) -> MatMul(., V4 [B,H,T,Dv] -Reshape-> [B*H,T,Dv])
//   -> Reshape [B,H,S,Dv] -> Transpose(0,2,1,3) -> Reshape [B,S,H*Dv]
// The model scales Q (q_proj * 1/sqrt(D)) before the head split; that Mul stays (it folds
// into q_proj's weights, fold_matmul_output_scale), so the op's scale is 1 unless the
// scores themselves are scaled.
//
// K4 and V4 are what the model has at hand: in a decoder with past, present.N.decoder.*
// = Concat(past, new) (graph outputs, kept: the in-place runner looks for exactly that
// Concat) and the cross-attention's past_key_values.N.encoder.* inputs; in the first-step
// decoder, the projections' head splits (present.N.encoder.*, graph outputs too). Those
// become octet.GroupedAttention(Q4, K4, V4 [, mask]), which reads the 4-D tensors in place.
// When Q4, K4 and V4 are all Transpose(0,2,1,3) of head-split Reshapes [B,S,H,D] of 3-D
// projections read by this chain alone (an encoder's self-attention), the whole head split
// goes too: octet.Attention(q, k, v [, mask]) on the projections, whose kernel packs K for
// long sequences and whose Q/K/V the packing passes can merge.
//
// Every shape is proved from inference (B, S, T symbolic; H, D constants): the Reshapes to
// [B*H,.,.] only merge B and H, the ones back only split them. The mask must be float32 of
// rank <= 4; the fused op checks at run time that it broadcasts to [B,H,S,T] (where it
// does not, the original Reshape after the Add fails too).
#include <cmath>
#include <optional>
#include <tuple>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/attention_chain.h"
#include "passes/rewrites/bmm_attention_chain.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

using namespace bmm;

struct Match {
  Value *q = nullptr, *k = nullptr, *v = nullptr, *mask = nullptr;  // the fused node's inputs
  int64_t heads = 0;
  double scale = 1;
  bool projections = false;  // octet.Attention on the 3-D projections, else GroupedAttention on Q4/K4/V4
  Node* softmax = nullptr;
  Node* final_reshape = nullptr;  // its output is replaced by the fused node's
  std::vector<Node*> nodes;
};

bool match(Node* softmax, Match& m) {
  m.softmax = softmax;
  Value* s = softmax->input(0);
  const DimVector* sd = dims_of(s);
  const int64_t axis = softmax->attr_int("axis", softmax->opset() >= 13 ? -1 : 1);
  if (!sd || sd->size() != 3 || (axis != -1 && axis != 2) || !single_use(s) || s->type.dtype != DType::Float32)
    return false;
  m.nodes.push_back(softmax);
  // [Reshape [B,H,S,T] -> Add(., mask) -> Reshape [B*H,S,T]]
  Value* scores4 = nullptr;
  Node* qk = scores_product(s, m.nodes, m.mask, scores4, m.scale);
  if (!qk) return false;
  Node* kt = producer(qk->input(1), "Transpose");
  if (!kt || !has_perm(kt, {0, 2, 1}) || !single_use(qk->input(1))) return false;
  m.nodes.push_back(kt);
  Value* q4 = unmerged(qk->input(0), m.nodes);
  Value* k4 = unmerged(kt->input(0), m.nodes);
  Node* pv = sole_consumer(softmax->output(0));
  if (!q4 || !k4 || !is_op(pv, "MatMul") || pv->input(0) != softmax->output(0)) return false;
  m.nodes.push_back(pv);
  Value* v4 = unmerged(pv->input(1), m.nodes);
  if (!v4) return false;
  Node* split = nullptr;
  std::tie(split, m.final_reshape) = heads_merged(pv->output(0), m.nodes);
  if (!split) return false;

  const auto h = chain_heads(q4, k4, v4, qk->output(0), softmax->output(0), scores4, split->output(0),
                             m.final_reshape->output(0));
  if (!h) return false;
  m.heads = *h;
  // Encoder self-attention: all three head splits are the chain's own.
  std::vector<Node*> splits;
  Value* xq = projection_of(q4, *h, splits);
  Value* xk = xq ? projection_of(k4, *h, splits) : nullptr;
  Value* xv = xk ? projection_of(v4, *h, splits) : nullptr;
  if (xv && dims_of(xk) && dims_of(xv) && (*dims_of(xk))[1] == (*dims_of(xv))[1]) {
    m.projections = true;
    m.nodes.insert(m.nodes.end(), splits.begin(), splits.end());
    m.q = xq, m.k = xk, m.v = xv;
  } else {
    m.q = q4, m.k = k4, m.v = v4;
  }
  return true;
}

bool apply(Graph& g, PassContext& ctx, const Match& m, std::vector<Node*>& removed) {
  std::vector<Node*> dying;
  if (!chain_dying_readers(m.nodes, m.final_reshape, {m.q, m.k, m.v, m.mask}, dying) ||
      read_by_subgraph(m.final_reshape->output(0)))
    return false;
  GraphPatch patch = make_patch(g);
  std::vector<Value*> inputs = {m.q, m.k, m.v};
  if (m.mask) inputs.push_back(m.mask);
  std::vector<Attribute> attrs = {Attribute::make_float("scale", static_cast<float>(m.scale))};
  if (m.projections) {
    attrs.push_back(Attribute::make_int("num_heads", m.heads));
    attrs.push_back(Attribute::make_int("causal", 0));
  }
  const char* op = m.projections ? "Attention" : "GroupedAttention";
  Node* fused = patch.add_node(op, inputs, 1, std::move(attrs), "octet", m.softmax->name() + "_bmm_attention");
  if (!can_replace(m.final_reshape->output(0), fused->output(0))) return false;
  patch.replace_uses(m.final_reshape->output(0), fused->output(0));
  if (!finish_fusion(g, ctx, patch, m.nodes, dying, removed)) return false;
  ctx.count(std::string("octet.") + op + "(bmm" + (m.mask ? ", mask" : "") + ")");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  return fuse_chains<Match>(
      g, [](Node* n, Match& m) { return is_op(n, "Softmax") && match(n, m); },
      [&](const Match& m, std::vector<Node*>& gone) { return apply(g, ctx, m, gone); });
}

}  // namespace

Pass fuse_bmm_attention() { return {"fuse_bmm_attention", run}; }

}  // namespace octet::passes
