#include "ir/graph.h"

#include <algorithm>
#include <deque>
#include <set>

namespace octet {

// ---------------------------------------------------------------- Attribute

Attribute Attribute::make_int(std::string name, int64_t v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::Int;
  a.i = v;
  return a;
}
Attribute Attribute::make_float(std::string name, float v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::Float;
  a.f = v;
  return a;
}
Attribute Attribute::make_string(std::string name, std::string v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::String;
  a.s = std::move(v);
  return a;
}
Attribute Attribute::make_ints(std::string name, std::vector<int64_t> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::Ints;
  a.ints = std::move(v);
  return a;
}
Attribute Attribute::make_floats(std::string name, std::vector<float> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::Floats;
  a.floats = std::move(v);
  return a;
}
Attribute Attribute::make_tensor(std::string name, Tensor v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = Kind::Tensor;
  a.t = std::make_shared<const Tensor>(std::move(v));
  return a;
}

const char* attribute_kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::Float: return "float";
    case Attribute::Kind::Int: return "int";
    case Attribute::Kind::String: return "string";
    case Attribute::Kind::Tensor: return "tensor";
    case Attribute::Kind::Graph: return "graph";
    case Attribute::Kind::Floats: return "floats";
    case Attribute::Kind::Ints: return "ints";
    case Attribute::Kind::Strings: return "strings";
    case Attribute::Kind::Tensors: return "tensors";
    case Attribute::Kind::Graphs: return "graphs";
    case Attribute::Kind::SparseTensor: return "sparse_tensor";
    case Attribute::Kind::SparseTensors: return "sparse_tensors";
    case Attribute::Kind::TypeProto: return "type_proto";
    case Attribute::Kind::TypeProtos: return "type_protos";
    default: return "undefined";
  }
}

// ---------------------------------------------------------------- Node

const Attribute* Node::find_attr(const std::string& name) const {
  for (const auto& a : attributes_)
    if (a.name == name) return &a;
  return nullptr;
}

namespace {
const Attribute* typed_attr(const Node& n, const std::string& name, Attribute::Kind kind) {
  const Attribute* a = n.find_attr(name);
  if (a && a->kind != kind)
    fail(n.describe(), ": attribute '", name, "' is ", attribute_kind_name(a->kind),
         ", expected ", attribute_kind_name(kind));
  return a;
}
}  // namespace

int64_t Node::attr_int(const std::string& name, int64_t fallback) const {
  const Attribute* a = typed_attr(*this, name, Attribute::Kind::Int);
  return a ? a->i : fallback;
}
float Node::attr_float(const std::string& name, float fallback) const {
  const Attribute* a = typed_attr(*this, name, Attribute::Kind::Float);
  return a ? a->f : fallback;
}
std::string Node::attr_string(const std::string& name, const std::string& fallback) const {
  const Attribute* a = typed_attr(*this, name, Attribute::Kind::String);
  return a ? a->s : fallback;
}
std::vector<int64_t> Node::attr_ints(const std::string& name, std::vector<int64_t> fallback) const {
  const Attribute* a = typed_attr(*this, name, Attribute::Kind::Ints);
  return a ? a->ints : fallback;
}
std::vector<float> Node::attr_floats(const std::string& name, std::vector<float> fallback) const {
  const Attribute* a = typed_attr(*this, name, Attribute::Kind::Floats);
  return a ? a->floats : fallback;
}
const Tensor* Node::attr_tensor(const std::string& name) const {
  const Attribute* a = typed_attr(*this, name, Attribute::Kind::Tensor);
  return a ? a->t.get() : nullptr;
}

std::string Node::describe() const {
  std::string op = domain_.empty() ? op_type_ : domain_ + "." + op_type_;
  return "node '" + name_ + "' (" + op + ")";
}

int64_t Node::opset() const { return graph_ ? graph_->opset_version(domain_) : 0; }

// ---------------------------------------------------------------- Graph

int64_t Graph::opset_version(const std::string& domain) const {
  std::string d = domain == "ai.onnx" ? "" : domain;
  auto it = opset_imports.find(d);
  return it == opset_imports.end() ? 0 : it->second;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

std::vector<Value*> Graph::initializers() const {
  std::vector<Value*> out;
  for (const auto& v : values_)
    if (v->is_initializer_) out.push_back(v.get());
  return out;
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> out;
  for (const auto& v : values_) out.push_back(v.get());
  return out;
}

Value* Graph::find_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Value* Graph::value(const std::string& name) const {
  Value* v = find_value(name);
  if (!v) fail("graph has no value named '", name, "'");
  return v;
}

std::string Graph::unique_name(const std::string& base) const {
  if (!base.empty() && !find_value(base)) return base;
  for (int i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!find_value(candidate)) return candidate;
  }
}

std::unique_ptr<Graph> Graph::clone() const {
  auto g = std::make_unique<Graph>();
  g->name = name;
  g->doc_string = doc_string;
  g->opset_imports = opset_imports;
  std::unordered_map<const Value*, Value*> map;
  map.reserve(values_.size());
  for (const auto& v : values_) {
    Value* c = g->create_value(v->name_);
    c->type = v->type;
    c->known_values = v->known_values;
    c->constant_ = v->constant_;
    c->is_initializer_ = v->is_initializer_;
    c->is_graph_input_ = v->is_graph_input_;
    c->is_graph_output_ = v->is_graph_output_;
    c->data_released_ = v->data_released_;
    map.emplace(v.get(), c);
  }
  auto mapped = [&](const std::vector<Value*>& vs) {
    std::vector<Value*> out;
    out.reserve(vs.size());
    for (Value* v : vs) out.push_back(v ? map.at(v) : nullptr);
    return out;
  };
  std::unordered_map<const Node*, Node*> node_map;
  g->nodes_.reserve(nodes_.size());
  for (const auto& n : nodes_) {
    auto c = std::make_unique<Node>();
    c->name_ = n->name_;
    c->op_type_ = n->op_type_;
    c->domain_ = n->domain_;
    c->attributes_ = n->attributes_;
    c->doc_string = n->doc_string;
    c->graph_ = g.get();
    c->inputs_ = mapped(n->inputs_);
    c->outputs_ = mapped(n->outputs_);
    c->implicit_inputs_ = mapped(n->implicit_inputs_);
    for (size_t i = 0; i < c->outputs_.size(); ++i)
      if (Value* o = c->outputs_[i]) o->producer_ = c.get(), o->producer_output_ = static_cast<int>(i);
    node_map.emplace(n.get(), c.get());
    g->nodes_.push_back(std::move(c));
  }
  for (const auto& v : values_)  // uses in the same order as here
    for (const Use& u : v->uses_) map.at(v.get())->uses_.push_back({node_map.at(u.node), u.index, u.implicit});
  g->inputs_ = mapped(inputs_);
  g->outputs_ = mapped(outputs_);
  return g;
}

Value* Graph::create_value(const std::string& name) {
  if (name.empty()) fail("a graph value needs a name");
  if (find_value(name)) fail("value name '", name, "' is defined twice");
  auto v = std::make_unique<Value>();
  v->name_ = name;
  Value* raw = v.get();
  values_.push_back(std::move(v));
  by_name_[name] = raw;
  return raw;
}

Value* Graph::add_input(const std::string& name, TensorType type) {
  Value* v = create_value(name);
  v->type = std::move(type);
  v->is_graph_input_ = true;
  inputs_.push_back(v);
  return v;
}

Value* Graph::add_initializer(const std::string& name, std::shared_ptr<const Tensor> data) {
  Value* v = create_value(name);
  std::optional<DimVector> dims = DimVector(data->shape().begin(), data->shape().end());
  v->type = TensorType(data->dtype(), dims);
  v->constant_ = std::move(data);
  v->is_initializer_ = true;
  return v;
}

void Graph::make_initializer(Value* v, std::shared_ptr<const Tensor> data) {
  auto it = std::find(inputs_.begin(), inputs_.end(), v);
  if (!v || it == inputs_.end() || !data) fail("make_initializer: '", v ? v->name() : "", "' is not a graph input");
  const TensorType want(data->dtype(), DimVector(data->shape().begin(), data->shape().end()));
  if (v->type.dtype != want.dtype || v->type.dims != want.dims)
    fail("make_initializer: input '", v->name(), "' is ", v->type.to_string(), ", its data ", want.to_string());
  inputs_.erase(it);
  v->is_graph_input_ = false;
  v->is_initializer_ = true;
  v->constant_ = std::move(data);
}

Node* Graph::add_node(const std::string& op_type, const std::vector<std::string>& inputs,
                      const std::vector<std::string>& outputs, std::vector<Attribute> attrs,
                      const std::string& domain, const std::string& name) {
  auto node = std::make_unique<Node>();
  node->op_type_ = op_type;
  node->domain_ = domain == "ai.onnx" ? "" : domain;
  node->name_ = name.empty() ? unique_name(op_type) : name;
  node->attributes_ = std::move(attrs);
  node->graph_ = this;
  Node* raw = node.get();
  for (size_t i = 0; i < inputs.size(); ++i) {
    Value* v = nullptr;
    if (!inputs[i].empty()) {
      v = find_value(inputs[i]);
      if (!v) fail(raw->describe(), ": input ", i, " '", inputs[i], "' is not defined");
      v->uses_.push_back({raw, static_cast<int>(i), false});
    }
    node->inputs_.push_back(v);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    Value* v = nullptr;
    if (!outputs[i].empty()) {
      v = find_value(outputs[i]);
      if (v && (v->producer_ || v->is_graph_input_ || v->is_initializer_))
        fail(raw->describe(), ": output '", outputs[i], "' is already defined elsewhere");
      if (!v) v = create_value(outputs[i]);
      v->producer_ = raw;
      v->producer_output_ = static_cast<int>(i);
    }
    node->outputs_.push_back(v);
  }
  nodes_.push_back(std::move(node));
  return raw;
}

void Graph::add_implicit_input(Node* node, Value* v) {
  v->uses_.push_back({node, static_cast<int>(node->implicit_inputs_.size()), true});
  node->implicit_inputs_.push_back(v);
}

void Graph::mark_output(Value* v) {
  v->is_graph_output_ = true;
  outputs_.push_back(v);
}

size_t Graph::release_initializer_data(Value* v) {
  OCTET_ASSERT(v && find_value(v->name()) == v, "release_initializer_data: value is not in this graph");
  OCTET_ASSERT(v->is_initializer_, "release_initializer_data: '", v->name(), "' is not an initializer");
  const size_t bytes = v->constant_ ? v->constant_->bytes() : 0;
  v->constant_.reset();
  v->data_released_ = true;
  return bytes;
}

void Graph::sort_topologically() {
  // Kahn's algorithm, taking ready nodes in their current order so that a graph that is
  // already sorted (as exporters write it) keeps its order exactly.
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes_.size(); ++i) position[nodes_[i].get()] = i;
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<size_t>> consumers(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    std::set<size_t> deps;
    auto add_dep = [&](const Value* v) {
      if (v && v->producer_) deps.insert(position.at(v->producer_));
    };
    for (const Value* v : nodes_[i]->inputs_) add_dep(v);
    for (const Value* v : nodes_[i]->implicit_inputs_) add_dep(v);
    for (size_t d : deps) {
      if (d == i) fail(nodes_[i]->describe(), " consumes its own output");
      consumers[d].push_back(i);
    }
    pending[i] = static_cast<int>(deps.size());
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (size_t c : consumers[i])
      if (--pending[c] == 0) ready.insert(c);
  }
  if (order.size() != nodes_.size()) {
    for (size_t i = 0; i < nodes_.size(); ++i)
      if (pending[i] > 0) fail("the graph has a cycle through ", nodes_[i]->describe());
  }
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes_.size());
  for (size_t i : order) sorted.push_back(std::move(nodes_[i]));
  nodes_ = std::move(sorted);
}

void Graph::rebuild_uses() {
  for (auto& v : values_) v->uses_.clear();
  for (auto& n : nodes_) {
    for (size_t i = 0; i < n->inputs_.size(); ++i)
      if (n->inputs_[i]) n->inputs_[i]->uses_.push_back({n.get(), static_cast<int>(i), false});
    for (size_t i = 0; i < n->implicit_inputs_.size(); ++i)
      n->implicit_inputs_[i]->uses_.push_back({n.get(), static_cast<int>(i), true});
  }
}

// ---------------------------------------------------------------- verifier

std::vector<std::string> verify_graph(const Graph& g) {
  std::vector<std::string> problems;
  std::set<const Value*> values;
  for (const Value* v : g.values()) {
    values.insert(v);
    if (g.find_value(v->name()) != v) problems.push_back("value '" + v->name() + "' not indexed by name");
  }
  std::set<const Value*> defined;
  for (const Value* v : g.inputs()) defined.insert(v);
  for (const Value* v : g.initializers()) defined.insert(v);
  for (const Node* n : g.nodes()) {
    auto check_input = [&](const Value* v, size_t i, bool implicit) {
      if (!v) return;
      if (!values.count(v)) {
        problems.push_back(n->describe() + ": input " + std::to_string(i) + " is not in the graph");
        return;
      }
      if (!defined.count(v))
        problems.push_back(n->describe() + ": input '" + v->name() + "' is used before it is produced");
      bool found = false;
      for (const Use& u : v->uses())
        found |= u.node == n && u.index == static_cast<int>(i) && u.implicit == implicit;
      if (!found) problems.push_back("value '" + v->name() + "' does not list its use by " + n->describe());
    };
    for (size_t i = 0; i < n->inputs().size(); ++i) check_input(n->inputs()[i], i, false);
    for (size_t i = 0; i < n->implicit_inputs().size(); ++i) check_input(n->implicit_inputs()[i], i, true);
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      const Value* v = n->outputs()[i];
      if (!v) continue;
      if (v->producer() != n || v->producer_output() != static_cast<int>(i))
        problems.push_back("value '" + v->name() + "' does not name " + n->describe() + " as producer");
      defined.insert(v);
    }
  }
  for (const Value* v : g.values())
    for (const Use& u : v->uses()) {
      const auto& list = u.implicit ? u.node->implicit_inputs() : u.node->inputs();
      if (u.index < 0 || static_cast<size_t>(u.index) >= list.size() || list[u.index] != v)
        problems.push_back("value '" + v->name() + "' lists a stale use");
    }
  for (const Value* v : g.outputs())
    if (!defined.count(v)) problems.push_back("graph output '" + v->name() + "' is never produced");
  return problems;
}

}  // namespace octet
