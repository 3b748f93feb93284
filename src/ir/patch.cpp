#include "ir/patch.h"

#include <algorithm>
#include <unordered_map>

namespace octet {

GraphPatch::GraphPatch(Graph& graph, InferFn infer) : graph_(graph), infer_(std::move(infer)) {}
GraphPatch::~GraphPatch() = default;

std::string GraphPatch::reserve_name(const std::string& base) {
  std::string name = base.empty() ? "v" : base;
  for (int i = 1; graph_.find_value(name) || reserved_names_.count(name); ++i)
    name = base + "_" + std::to_string(i);
  reserved_names_.insert(name);
  return name;
}

bool GraphPatch::is_known_value(const Value* v) const {
  if (graph_.find_value(v->name()) == v) return true;
  for (const auto& nv : new_values_)
    if (nv.get() == v) return true;
  return false;
}

Value* GraphPatch::add_initializer(const std::string& name_hint, Tensor data) {
  auto v = std::make_unique<Value>();
  v->name_ = reserve_name(name_hint);
  v->type = TensorType(data.dtype(), DimVector(data.shape().begin(), data.shape().end()));
  v->constant_ = std::make_shared<const Tensor>(std::move(data));
  v->is_initializer_ = true;
  new_values_.push_back(std::move(v));
  return new_values_.back().get();
}

Node* GraphPatch::add_node(const std::string& op_type, const std::vector<Value*>& inputs,
                           size_t num_outputs, std::vector<Attribute> attrs,
                           const std::string& domain, const std::string& name_hint) {
  if (applied_) fail("internal error: GraphPatch used after apply()");
  auto node = std::make_unique<Node>();
  node->op_type_ = op_type;
  node->domain_ = domain == "ai.onnx" ? "" : domain;
  // Node names share the value namespace here only to keep them unique and readable.
  node->name_ = reserve_name(name_hint.empty() ? op_type : name_hint);
  node->attributes_ = std::move(attrs);
  node->graph_ = &graph_;
  for (Value* v : inputs) {
    if (v && !is_known_value(v))
      fail("internal error: patch node '", node->name_, "' reads a value from another graph");
    node->inputs_.push_back(v);
  }
  for (size_t i = 0; i < num_outputs; ++i) {
    auto v = std::make_unique<Value>();
    v->name_ = reserve_name(node->name_ + (num_outputs == 1 ? "_out" : "_out" + std::to_string(i)));
    v->producer_ = node.get();
    v->producer_output_ = static_cast<int>(i);
    node->outputs_.push_back(v.get());
    new_values_.push_back(std::move(v));
  }
  Node* raw = node.get();
  new_nodes_.push_back(std::move(node));
  if (infer_) infer_(*raw);
  return raw;
}

void GraphPatch::replace_uses(Value* from, Value* to) {
  OCTET_ASSERT(from && to && from != to, "replace_uses needs two different values");
  if (from->type.known() && to->type.known() && from->type.dtype != to->type.dtype)
    fail("cannot replace '", from->name(), "' (", from->type.to_string(), ") by '", to->name(),
         "' (", to->type.to_string(), "): element types differ");
  if (from->type.has_rank() && to->type.has_rank() && from->type.rank() != to->type.rank())
    fail("cannot replace '", from->name(), "' (", from->type.to_string(), ") by '", to->name(),
         "' (", to->type.to_string(), "): ranks differ");
  edits_.push_back({Edit::Kind::ReplaceUses, from, to, nullptr, 0});
}

void GraphPatch::set_input(Node* node, size_t index, Value* value) {
  edits_.push_back({Edit::Kind::SetInput, nullptr, value, node, index});
}

void GraphPatch::remove_node(Node* node) { removed_.insert(node); }

void GraphPatch::remove_initializer(Value* value) {
  OCTET_ASSERT(value && value->is_initializer_ && graph_.find_value(value->name()) == value,
               "remove_initializer needs an initializer of this graph");
  removed_initializers_.insert(value);
}

GraphPatch::Counts GraphPatch::counts() const {
  Counts c;
  for (const auto& n : new_nodes_)
    if (!removed_.count(n.get())) ++c.nodes_added;
  for (Node* n : removed_)
    if (n->graph_ == &graph_ && std::none_of(new_nodes_.begin(), new_nodes_.end(),
                                             [&](const std::unique_ptr<Node>& m) { return m.get() == n; }))
      ++c.nodes_removed;
  for (const auto& v : new_values_)
    if (v->is_initializer_) ++c.initializers_added;
  c.initializers_removed = removed_initializers_.size();
  return c;
}

void GraphPatch::apply() {
  if (applied_) fail("internal error: GraphPatch applied twice");

  // 1. Simulate the edits on copies of every surviving node's inputs and the outputs list.
  std::vector<Node*> survivors;
  for (Node* n : graph_.nodes())
    if (!removed_.count(n)) survivors.push_back(n);
  for (auto& n : new_nodes_)
    if (!removed_.count(n.get())) survivors.push_back(n.get());
  std::unordered_map<Node*, std::vector<Value*>> post_inputs, post_implicit;
  for (Node* n : survivors) {
    post_inputs[n] = n->inputs_;
    post_implicit[n] = n->implicit_inputs_;
  }
  std::vector<Value*> post_outputs = graph_.outputs();
  // Graph outputs keep their names: value -> interface name it must carry after apply.
  std::map<Value*, std::string> output_renames;
  for (const Edit& e : edits_) {
    if (e.kind == Edit::Kind::SetInput) {
      auto it = post_inputs.find(e.node);
      if (it == post_inputs.end()) fail("patch sets an input of a removed or unknown node");
      if (e.index >= it->second.size()) it->second.resize(e.index + 1, nullptr);
      it->second[e.index] = e.to;
      continue;
    }
    for (auto& [n, ins] : post_inputs)
      std::replace(ins.begin(), ins.end(), e.from, e.to);
    for (auto& [n, ins] : post_implicit)
      std::replace(ins.begin(), ins.end(), e.from, e.to);
    for (Value*& out : post_outputs)
      if (out == e.from) {
        out = e.to;
        output_renames[e.to] = output_renames.count(e.from) ? output_renames[e.from] : e.from->name();
      }
  }

  // 2. Validate: every value read must still exist after removals.
  auto alive = [&](const Value* v) {
    if (!is_known_value(v) || removed_initializers_.count(const_cast<Value*>(v))) return false;
    return !v->producer_ || !removed_.count(v->producer_);
  };
  for (Value* v : removed_initializers_) {
    if (v->is_graph_input_)
      fail("patch would remove initializer '", v->name(), "', which is also a graph input");
    if (std::find(post_outputs.begin(), post_outputs.end(), v) != post_outputs.end())
      fail("patch would remove initializer '", v->name(), "', which is a graph output");
  }
  for (Node* n : survivors) {
    for (Value* v : post_inputs[n])
      if (v && !alive(v))
        fail("patch would leave ", n->describe(), " reading '", v->name(), "', which it removes");
    for (Value* v : post_implicit[n])
      if (!alive(v))
        fail("patch would leave ", n->describe(), " reading '", v->name(), "', which it removes");
  }
  for (Value* v : post_outputs)
    if (!alive(v)) fail("patch removes the producer of graph output '", v->name(), "'");
  for (const auto& [v, name] : output_renames)
    if (v->is_graph_input_ || v->is_initializer_ || v->is_graph_output_)
      fail("patch would make '", v->name(), "' also graph output '", name,
           "'; insert an Identity node to keep both names");

  // 3. No cycles: Kahn over the post-edit dependencies.
  std::unordered_map<Node*, int> pending;
  std::unordered_map<Node*, std::vector<Node*>> consumers;
  for (Node* n : survivors) {
    std::set<Node*> deps;
    for (Value* v : post_inputs[n])
      if (v && v->producer_) deps.insert(v->producer_);
    for (Value* v : post_implicit[n])
      if (v->producer_) deps.insert(v->producer_);
    pending[n] = static_cast<int>(deps.size());
    for (Node* d : deps) consumers[d].push_back(n);
  }
  std::vector<Node*> ready;
  for (Node* n : survivors)
    if (pending[n] == 0) ready.push_back(n);
  size_t visited = 0;
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    ++visited;
    for (Node* c : consumers[n])
      if (--pending[c] == 0) ready.push_back(c);
  }
  if (visited != survivors.size()) fail("patch would create a cycle in the graph");

  // 4. Commit. Nothing below can fail on user input.
  applied_ = true;
  for (Node* n : survivors) {
    n->inputs_ = post_inputs[n];
    n->implicit_inputs_ = post_implicit[n];
  }
  std::set<Value*> dead_values(removed_initializers_.begin(), removed_initializers_.end());
  for (Node* n : removed_)
    for (Value* v : n->outputs_)
      if (v) dead_values.insert(v);
  auto& nodes = graph_.nodes_;
  nodes.erase(std::remove_if(nodes.begin(), nodes.end(),
                             [&](const std::unique_ptr<Node>& n) { return removed_.count(n.get()) > 0; }),
              nodes.end());
  for (auto& n : new_nodes_)
    if (!removed_.count(n.get())) nodes.push_back(std::move(n));
  new_nodes_.clear();

  for (Value* v : graph_.outputs_) v->is_graph_output_ = false;
  graph_.outputs_ = post_outputs;
  for (Value* v : graph_.outputs_) v->is_graph_output_ = true;

  auto& values = graph_.values_;
  for (auto& v : new_values_)
    if (!(v->producer_ && removed_.count(v->producer_))) values.push_back(std::move(v));
  new_values_.clear();
  // An output value that the patch displaced gives its interface name to its replacement.
  for (const auto& [v, name] : output_renames) {
    if (Value* old = graph_.find_value(name); old && old != v) {
      std::string old_new_name = graph_.unique_name(name + "_replaced");
      graph_.by_name_.erase(name);
      old->name_ = old_new_name;
      graph_.by_name_[old_new_name] = old;
    }
    graph_.by_name_.erase(v->name_);
    v->name_ = name;
  }
  values.erase(std::remove_if(values.begin(), values.end(),
                              [&](const std::unique_ptr<Value>& v) { return dead_values.count(v.get()) > 0; }),
               values.end());
  graph_.by_name_.clear();
  for (auto& v : values) graph_.by_name_[v->name_] = v.get();
  graph_.rebuild_uses();
  graph_.sort_topologically();
}

}  // namespace octet
