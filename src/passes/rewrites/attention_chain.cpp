#include "passes/rewrites/attention_chain.h"

#include <set>

#include "passes/pattern.h"

namespace octet::passes {

bool chain_dying_readers(const std::vector<Node*>& chain_nodes, const Node* replaced,
                         const std::vector<const Value*>& inputs, std::vector<Node*>& dying) {
  constexpr size_t kMaxDying = 64;  // the exporters' shape arithmetic is a few dozen nodes
  const std::set<const Node*> chain(chain_nodes.begin(), chain_nodes.end());
  std::set<const Node*> seen;
  std::vector<Node*> work;
  for (const Node* n : chain_nodes) {
    if (n == replaced) continue;  // its readers move to the fused output
    for (const Value* out : n->outputs()) {
      if (!out) continue;
      if (out->is_graph_output() || read_by_subgraph(out)) return false;
      for (const Use& u : out->uses())
        if (!chain.count(u.node)) work.push_back(u.node);
    }
  }
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    if (chain.count(n) || !seen.insert(n).second) continue;
    if (!n->implicit_inputs().empty() || seen.size() > kMaxDying) return false;
    dying.push_back(n);
    for (const Value* out : n->outputs()) {
      if (!out) continue;
      if (out->is_graph_output() || read_by_subgraph(out)) return false;
      for (const Use& u : out->uses()) work.push_back(u.node);
    }
  }
  for (const Value* in : inputs)
    if (in && in->producer() && (seen.count(in->producer()) || chain.count(in->producer()))) return false;
  return true;
}

bool finish_fusion(Graph& g, PassContext& ctx, GraphPatch& patch, const std::vector<Node*>& chain,
                   const std::vector<Node*>& dying, std::vector<Node*>& removed) {
  for (Node* n : chain) patch.remove_node(n);
  for (Node* n : dying) patch.remove_node(n);
  if (!ctx.apply(patch)) return false;
  import_octet_domain(g);
  removed = chain;
  removed.insert(removed.end(), dying.begin(), dying.end());
  return true;
}

}  // namespace octet::passes
