// The pieces of the BART-family per-head 3-D ("bmm") attention layout that both its float
// fusion (fuse_bmm_attention.cpp) and its static int8 fusion (fuse_qbmm_attention.cpp)
// recognize: the [B,H,L,D] <-> [B*H,L,D] head merges, the encoder's own head splits, the
// score scaling and the padding mask Add between two Reshapes. See fuse_bmm_attention.cpp
// for the whole pattern.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace octet::passes::bmm {

const DimVector* dims_of(const Value* v);
bool dims_are(const Value* v, const DimVector& want);
bool has_perm(const Node* n, const std::vector<int64_t>& perm);

// The 4-D input of a Reshape producing `merged` = [B*H, L, D] from [B, H, L, D]; nullptr
// when `merged` is not that. The Reshape is appended to `nodes`. (Its other readers, the
// exporter's key_states.size(1), must die with the chain: chain_dying_readers.)
Value* unmerged(Value* merged, std::vector<Node*>& nodes);

// x [B,S,E] when `split4` = Transpose(0,2,1,3)(Reshape [B,S,H,D](x)), both read only by
// the chain (whose next node is the merging Reshape); the two nodes are appended.
Value* projection_of(Value* split4, int64_t heads, std::vector<Node*>& nodes);

// Div|Mul of the scores by a one-element constant: the factor, and the scores before it.
std::optional<std::pair<double, Value*>> scaling(Node* n);

// The padding mask around the scores `s` [B*H,S,T]:
//   s = Reshape [B*H,S,T](Add(Reshape [B,H,S,T](x), mask))   (either side of the Add)
// with x the product Q.K^T, maybe scaled. When `s` is such a chain, sets `mask` (float32,
// rank <= 4) and `scores4` (the [B,H,S,T] view, whose shape the caller proves), appends the
// three nodes and returns x; when `s` is no Reshape, returns `s` itself; nullptr when it is
// a Reshape of anything else.
Value* unmasked(Value* s, std::vector<Node*>& nodes, Value*& mask, Value*& scores4);

// From the scores `s` [B*H,S,T] down to the Q.K^T MatMul: through the padding mask
// (unmasked) and a scale by a constant (scaling, which sets `scale`), appending the nodes
// passed and the MatMul. nullptr when the chain is not of that form.
Node* scores_product(Value* s, std::vector<Node*>& nodes, Value*& mask, Value*& scores4, double& scale);

// The heads merged back after P.V: `mixed` [B*H,S,Dv] -> Reshape [B,H,S,Dv] -> Transpose
// (0,2,1,3) -> the one Reshape reading it (to [B,S,H*Dv]), none of them a graph output;
// appends the three nodes and returns {the split Reshape, the final Reshape}, or nullptrs.
std::pair<Node*, Node*> heads_merged(Value* mixed, std::vector<Node*>& nodes);

// Proves the chain's shapes: Q4 [B,H,S,D], K4 [B,H,T,D], V4 [B,H,T,Dv] (float32, H, D and
// Dv constants); the product and the probabilities [B*H,S,T] (and the masked view
// [B,H,S,T], when there is one); P.V split back to [B,H,S,Dv]; Y [B,S,H*Dv]. Returns H.
std::optional<int64_t> chain_heads(const Value* q4, const Value* k4, const Value* v4, const Value* product,
                                   const Value* probs, const Value* scores4, const Value* split4, const Value* y);

}  // namespace octet::passes::bmm
