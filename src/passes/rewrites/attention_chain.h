// What the attention fusions that replace a whole chain with one node share: the shape
// computations reading results inside the chain must die with it.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "ir/patch.h"
#include "passes/pass.h"
#include "passes/pattern.h"

namespace octet::passes {

// Collects into `dying` the nodes outside `chain` that read a result inside it (the
// exporter's Shape -> Gather -> Concat view() arithmetic) and everything they feed.
// False when one of them, or a chain result, is a graph output or read by a subgraph, when
// they feed anything that outlives the chain, or when a fused node's input (`inputs`,
// nullptr entries skipped) would be removed. `replaced` is the chain's last node, whose
// readers move to the fused node's output, so they are not followed.
bool chain_dying_readers(const std::vector<Node*>& chain, const Node* replaced, const std::vector<const Value*>& inputs,
                         std::vector<Node*>& dying);

// The end every attention fusion shares: removes the chain and its dying readers in
// `patch`, applies it and imports the octet domain. On success `removed` lists the nodes
// taken out (the sweep skips later matches that include one); false when the patch was
// rejected.
bool finish_fusion(Graph& g, PassContext& ctx, GraphPatch& patch, const std::vector<Node*>& chain,
                   const std::vector<Node*>& dying, std::vector<Node*>& removed);

// The sweep the attention fusions share, over a snapshot of g.nodes(): every node that
// `match(node, m)` accepts (m.nodes: the chain) is fused by `apply(m, gone)` unless an
// earlier fusion of this sweep removed one of the chain's nodes; `gone` is what apply
// removed. True when anything was fused.
template <typename Match, typename MatchFn, typename ApplyFn>
bool fuse_chains(Graph& g, MatchFn&& match, ApplyFn&& apply) {
  RemovedNodes removed;
  for (Node* n : g.nodes()) {
    if (removed.contains(n)) continue;
    Match m;
    if (!match(n, m)) continue;
    bool stale = false;
    for (const Node* p : m.nodes) stale |= removed.contains(p);
    std::vector<Node*> gone;
    if (!stale && apply(m, gone)) removed.add(gone);
  }
  return removed.any();
}

}  // namespace octet::passes
