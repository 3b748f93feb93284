// What the attention fusions that replace a whole chain with one node share: the shape
// computations reading results inside the chain must die with it.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace octet::passes {

// Collects into `dying` the nodes outside `chain` that read a result inside it (the
// exporter's Shape -> Gather -> Concat view() arithmetic) and everything they feed.
// False when one of them, or a chain result, is a graph output or read by a subgraph, when
// they feed anything that outlives the chain, or when a fused node's input (`inputs`,
// nullptr entries skipped) would be removed. `replaced` is the chain's last node, whose
// readers move to the fused node's output, so they are not followed.
bool chain_dying_readers(const std::vector<Node*>& chain, const Node* replaced, const std::vector<const Value*>& inputs,
                         std::vector<Node*>& dying);

}  // namespace octet::passes
