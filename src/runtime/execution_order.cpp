#include "runtime/execution_order.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>
#include <utility>

namespace octet {

std::vector<const Node*> execution_order(const Graph& graph) {
  const std::vector<Node*> nodes = graph.nodes();  // topological
  const size_t n = nodes.size();
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < n; ++i) position[nodes[i]] = i;

  // Producers (within the graph) of every input, explicit and implicit (subgraph reads).
  std::vector<std::vector<size_t>> producers(n), readers(n);
  for (size_t i = 0; i < n; ++i) {
    auto add = [&](const Value* v) {
      if (!v || !v->producer()) return;
      const size_t p = position.at(v->producer());
      if (std::find(producers[i].begin(), producers[i].end(), p) == producers[i].end()) {
        producers[i].push_back(p);
        readers[p].push_back(i);
      }
    };
    for (const Value* v : nodes[i]->inputs()) add(v);
    for (const Value* v : nodes[i]->implicit_inputs()) add(v);
  }
  // Constant-only: every input is absent, an initializer (not overridable) or the output of
  // a constant-only node. In topological order, producers come first.
  std::vector<char> constant_only(n, 0);
  for (size_t i = 0; i < n; ++i) {
    bool c = true;
    auto check = [&](const Value* v) {
      if (!v) return;
      if (v->producer()) c = c && constant_only[position.at(v->producer())];
      else c = c && v->is_initializer() && !v->is_graph_input();
    };
    for (const Value* v : nodes[i]->inputs()) check(v);
    for (const Value* v : nodes[i]->implicit_inputs()) check(v);
    constant_only[i] = c;
  }
  // A constant-only node ranks with its earliest reader (transitively); the rest keep
  // their position. Readers come later in topological order: walk backwards.
  std::vector<size_t> rank(n);
  for (size_t i = n; i-- > 0;) {
    rank[i] = i;
    if (!constant_only[i]) continue;
    size_t r = std::numeric_limits<size_t>::max();
    for (size_t reader : readers[i]) r = std::min(r, rank[reader]);
    if (r != std::numeric_limits<size_t>::max()) rank[i] = r;
  }
  // Kahn's algorithm taking the ready node of lowest (rank, position): a graph without
  // constant-only nodes keeps its order exactly.
  std::vector<size_t> pending(n);
  std::set<std::pair<size_t, size_t>> ready;
  for (size_t i = 0; i < n; ++i) {
    pending[i] = producers[i].size();
    if (pending[i] == 0) ready.emplace(rank[i], i);
  }
  std::vector<const Node*> order;
  order.reserve(n);
  while (!ready.empty()) {
    const size_t i = ready.begin()->second;
    ready.erase(ready.begin());
    order.push_back(nodes[i]);
    for (size_t r : readers[i])
      if (--pending[r] == 0) ready.emplace(rank[r], r);
  }
  return order;  // complete: the graph is acyclic (kept so by every patch)
}

}  // namespace octet
