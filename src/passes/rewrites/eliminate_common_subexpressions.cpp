// Common subexpressions: a node computing what an earlier node already computes (same op,
// attributes and inputs) is dropped; its readers read the earlier node's outputs.
//
// Why: exporters repeat per layer what every layer shares. A Llama-family decoder slices
// its rotary cos/sin tables by the position ids once per layer (Slice, Gather, Unsqueeze,
// 30 times over for SmolLM2), and a decode step runs every copy. With one copy left, a
// step runs six nodes where it ran 180.
//
// Inputs count as the same when they are the same value, or when they are equal by
// content though written twice:
//   - small constant initializers (each layer's own [0] starts, [1] steps) with equal
//     dtype, shape and bytes;
//   - integer shape values whose contents inference knows symbolically (Value::
//     known_values), with equal dtype, dims and contents: every layer's
//     Unsqueeze(Shape(past_key_values.N.key)[2] + seq) is [past_sequence + sequence].
//     Dims compare structurally (ir/dim.h: the representation is canonical), and a fresh
//     symbol equals only itself, so unknown contents never match.
//
// Never merged: nodes without inputs (Constant, the Random* generators: two draws differ),
// random ops with inputs (RandomNormalLike, Bernoulli, ...), training-mode Dropout, nodes
// with subgraphs (their bodies read outer values by name), octet.CachedAttention (it
// writes its cache), and nodes with a graph output (its name is part of the interface).
//
// Runs in the finishing stage, after the fusions: a fusion matching one layer's pattern
// may want its own single-reader copy of a shared value.
#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

// Initializers up to this many bytes are compared by content (per-layer index constants).
constexpr size_t kSmallConstantBytes = 256;

bool never_merged(const Node& n) {
  if (n.inputs().empty() || !n.implicit_inputs().empty()) return true;
  for (const Attribute& a : n.attributes())
    if (a.kind == Attribute::Kind::Graph || a.kind == Attribute::Kind::Graphs) return true;
  const std::string& op = n.op_type();
  if (n.domain().empty() || n.domain() == "ai.onnx") {
    if (op.rfind("Random", 0) == 0 || op == "Bernoulli" || op == "Multinomial") return true;
    // Dropout in training mode draws a mask; eliminate_noops removes the inference ones.
    if (op == "Dropout") return true;
  }
  if (n.domain() == "octet" && op == "CachedAttention") return true;
  for (const Value* out : n.outputs())
    if (out && out->is_graph_output()) return true;
  return false;
}

bool less_dims(const DimVector& a, const DimVector& b) {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
}

// The content of a value that may equal another value's: (dtype, dims, symbolic contents).
struct Known {
  int dtype;
  DimVector dims, values;
  bool operator<(const Known& o) const {
    if (dtype != o.dtype) return dtype < o.dtype;
    if (dims != o.dims) return less_dims(dims, o.dims);
    return less_dims(values, o.values);
  }
};

class ValueIds {
 public:
  // Equal ids: the values hold equal contents at every run.
  int64_t id(const Value* v) {
    if (!v) return 0;
    auto it = ids_.find(v);
    if (it != ids_.end()) return it->second;
    const int64_t fresh = next_++;
    int64_t id = fresh;
    if (const Tensor* t = small_constant(v)) {
      auto key = std::make_tuple(static_cast<int>(t->dtype()), t->shape(),
                                 std::string(reinterpret_cast<const char*>(t->raw()), dtype_storage_bytes(t->dtype(), t->numel())));
      id = constants_.emplace(std::move(key), fresh).first->second;
    } else if (v->known_values && v->type.known() && v->type.dims && fully_known(*v)) {
      Known key{static_cast<int>(v->type.dtype), *v->type.dims, *v->known_values};
      id = known_.emplace(std::move(key), fresh).first->second;
    }
    ids_.emplace(v, id);
    return id;
  }

 private:
  static const Tensor* small_constant(const Value* v) {
    if (!v->is_initializer() || v->is_graph_input() || !v->constant()) return nullptr;
    const Tensor* t = v->constant().get();
    return dtype_storage_bytes(t->dtype(), t->numel()) <= kSmallConstantBytes && t->dtype() != DType::String ? t : nullptr;
  }
  // Contents for every element: no anonymous dims (those are fresh symbols, equal only to
  // themselves, but a value whose contents are partly unknown is left alone anyway).
  static bool fully_known(const Value& v) {
    for (const Dim& d : *v.known_values)
      for (const std::string& s : d.symbols())
        if (Dim::is_anonymous_name(s)) return false;
    return !v.is_graph_input();
  }

  std::unordered_map<const Value*, int64_t> ids_;
  std::map<std::tuple<int, std::vector<int64_t>, std::string>, int64_t> constants_;
  std::map<Known, int64_t> known_;
  int64_t next_ = 1;
};

void append_attribute(std::string& key, const Attribute& a) {
  key += a.name;
  key += ':';
  key += std::to_string(static_cast<int>(a.kind));
  key += '=';
  auto bytes = [&](const void* p, size_t n) { key.append(static_cast<const char*>(p), n); };
  switch (a.kind) {
    case Attribute::Kind::Float: bytes(&a.f, sizeof a.f); break;
    case Attribute::Kind::Int: bytes(&a.i, sizeof a.i); break;
    case Attribute::Kind::String: key += std::to_string(a.s.size()) + ":" + a.s; break;
    case Attribute::Kind::Floats: key += std::to_string(a.floats.size()) + ":"; bytes(a.floats.data(), a.floats.size() * sizeof(float)); break;
    case Attribute::Kind::Ints: key += std::to_string(a.ints.size()) + ":"; bytes(a.ints.data(), a.ints.size() * sizeof(int64_t)); break;
    case Attribute::Kind::Strings:
      for (const std::string& s : a.strings) key += std::to_string(s.size()) + ":" + s;
      break;
    case Attribute::Kind::Tensor:
      if (a.t) {
        key += std::to_string(static_cast<int>(a.t->dtype())) + shape_to_string(a.t->shape());
        bytes(a.t->raw(), dtype_storage_bytes(a.t->dtype(), a.t->numel()));
      }
      break;
    default: key += std::to_string(a.opaque_proto.size()) + ":" + a.opaque_proto; break;
  }
  key += ';';
}

// The node's identity: op, attributes (in name order: their order in the model is not
// meaningful), the ids of its inputs and how many outputs it has.
std::string node_key(const Node& n, ValueIds& ids) {
  std::string key = n.domain() + "::" + n.op_type() + "#" + std::to_string(n.outputs().size()) + "(";
  for (const Value* in : n.inputs()) key += std::to_string(ids.id(in)) + ",";
  key += ")";
  std::vector<const Attribute*> attrs;
  for (const Attribute& a : n.attributes()) attrs.push_back(&a);
  std::sort(attrs.begin(), attrs.end(), [](const Attribute* a, const Attribute* b) { return a->name < b->name; });
  for (const Attribute* a : attrs) append_attribute(key, *a);
  return key;
}

bool same_outputs_wanted(const Node& keep, const Node& drop) {
  for (size_t i = 0; i < drop.outputs().size(); ++i)
    if (drop.output(i) && !drop.output(i)->uses().empty() && !keep.output(i)) return false;
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  bool changed = false;
  ValueIds ids;
  std::unordered_map<std::string, Node*> seen;
  for (Node* n : g.nodes()) {  // topological: a node's inputs are final when it is keyed
    if (never_merged(*n)) continue;
    const std::string key = node_key(*n, ids);
    auto [it, fresh] = seen.emplace(key, n);
    if (fresh) continue;
    Node* keep = it->second;
    if (!same_outputs_wanted(*keep, *n)) continue;
    bool replaceable = true;
    for (size_t i = 0; i < n->outputs().size() && replaceable; ++i)
      if (n->output(i)) replaceable = can_replace(n->output(i), keep->output(i));
    if (!replaceable) continue;
    const std::string label = n->domain().empty() ? n->op_type() : n->domain() + "." + n->op_type();
    GraphPatch patch = make_patch(g);
    for (size_t i = 0; i < n->outputs().size(); ++i)
      if (n->output(i)) patch.replace_uses(n->output(i), keep->output(i));
    patch.remove_node(n);
    if (ctx.apply(patch)) {
      ctx.count(label);
      changed = true;
    }
  }
  return changed;
}

}  // namespace

Pass eliminate_common_subexpressions() { return {"eliminate_common_subexpressions", run}; }

}  // namespace octet::passes
