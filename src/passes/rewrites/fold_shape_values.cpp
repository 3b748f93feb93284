// Shape-value folding: an integer value whose symbolic contents (Value::known_values,
// set by inference) are all plain numbers is replaced by an initializer holding them.
//
// This is what folds exporters' shape subgraphs that constant folding cannot: in
// Shape(x) -> Gather(2) -> Unsqueeze -> Concat, Shape(x) reads a runtime tensor, yet
// x's dim 2 is a known 64, so the Gather's result is the constant [64] even while
// batch and seq stay symbolic. The nodes left without readers go in dead-code removal.
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

// The contents as a tensor of `type`, when every element is a known number and the
// type is a rank-0/1 integer or bool tensor of matching size.
std::optional<Tensor> known_tensor(const Value& v) {
  if (!v.known_values || !v.type.dims || v.type.dims->size() > 1) return std::nullopt;
  const DType t = v.type.dtype;
  const bool integer = t == DType::Bool || (dtype_is_integer(t) && dtype_bits(t) >= 8);
  if (!integer) return std::nullopt;
  std::vector<int64_t> values;
  for (const Dim& d : *v.known_values) {
    auto c = d.constant();
    if (!c) return std::nullopt;
    values.push_back(*c);
  }
  std::vector<int64_t> shape;
  if (v.type.dims->size() == 1) {
    auto n = (*v.type.dims)[0].constant();
    if (!n || *n != static_cast<int64_t>(values.size())) return std::nullopt;
    shape.push_back(*n);
  } else if (values.size() != 1) {
    return std::nullopt;
  }
  Tensor out(t, shape);
  uint8_t* p = out.mutable_raw();
  const size_t width = static_cast<size_t>(dtype_bits(t) / 8);
  for (size_t i = 0; i < values.size(); ++i) {
    // Little-endian truncation: the value's low bytes are its bits in the narrower type.
    uint64_t bits = t == DType::Bool ? (values[i] != 0) : static_cast<uint64_t>(values[i]);
    for (size_t b = 0; b < width; ++b) p[i * width + b] = static_cast<uint8_t>(bits >> (8 * b));
  }
  return out;
}

bool run(Graph& g, PassContext& ctx) {
  GraphPatch patch(g);
  bool any = false;
  for (Node* n : g.nodes()) {
    for (Value* v : n->outputs()) {
      if (!v || v->uses().empty() || v->is_graph_output() || read_by_subgraph(v)) continue;
      std::optional<Tensor> t = known_tensor(*v);
      if (!t) continue;
      Value* init = patch.add_initializer(v->name(), std::move(*t));
      patch.replace_uses(v, init);
      ctx.count(n->op_type());
      any = true;
    }
  }
  return any && ctx.apply(patch);
}

}  // namespace

Pass fold_shape_values() { return {"fold_shape_values", run}; }

}  // namespace octet::passes
