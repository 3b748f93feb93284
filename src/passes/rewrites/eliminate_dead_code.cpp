// Dead node and unused initializer removal.
//
// A node is live when a graph output depends on it, through node inputs or through the
// outer values a live node's subgraph reads (implicit inputs): an If branch that reads a
// value keeps its producer alive. Everything else computes nothing anyone can observe
// (ONNX ops have no side effects) and goes. An initializer goes when no live node reads
// it, unless it is a graph input (an overridable default, part of the interface) or a
// graph output.
#include <unordered_set>

#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

bool run(Graph& g, PassContext& ctx) {
  std::unordered_set<const Node*> live;
  std::vector<const Node*> work;
  auto mark = [&](const Value* v) {
    if (v && v->producer() && live.insert(v->producer()).second) work.push_back(v->producer());
  };
  for (const Value* v : g.outputs()) mark(v);
  while (!work.empty()) {
    const Node* n = work.back();
    work.pop_back();
    for (const Value* v : n->inputs()) mark(v);
    for (const Value* v : n->implicit_inputs()) mark(v);
  }

  GraphPatch patch(g);
  bool changed = false;
  for (Node* n : g.nodes())
    if (!live.count(n)) {
      patch.remove_node(n);
      ctx.count("dead node");
      changed = true;
    }
  for (Value* v : g.initializers()) {
    if (v->is_graph_input() || v->is_graph_output()) continue;
    bool read = false;
    for (const Use& u : v->uses()) read |= live.count(u.node) > 0;
    if (read) continue;
    patch.remove_initializer(v);
    ctx.count("unused initializer");
    changed = true;
  }
  return changed && ctx.apply(patch);
}

}  // namespace

Pass eliminate_dead_code() { return {"eliminate_dead_code", run}; }

}  // namespace octet::passes
