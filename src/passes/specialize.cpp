#include "passes/specialize.h"

#include "ops/infer.h"

namespace octet {

void bind_symbols(Graph& graph, const Bindings& bindings) {
  for (Value* v : graph.inputs()) {
    if (!v->type.dims) continue;
    for (Dim& d : *v->type.dims) {
      if (d.is_constant()) continue;
      for (const std::string& s : d.symbols())
        if (bindings.count(s) && bindings.at(s) < 0)
          fail("cannot bind '", s, "' to ", bindings.at(s), ": a dimension is never negative");
      d = d.substitute(bindings);
    }
  }
  // Types only, no structural edit: every rule runs again from the now-fixed inputs.
  infer_graph(graph);
}

}  // namespace octet
