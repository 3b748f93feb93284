// The IR graph: Values (typed edges), Nodes (ops), and the Graph that owns both.
//
// Ownership and invariants:
// - The Graph owns every Node and Value; pointers stay valid until a patch removes them.
// - Value names are unique in the graph; every node input is a value of the graph
//   (nullptr stands for an omitted optional input or output).
// - Every Value knows its uses (consumer node + input slot), so a rewrite can ask
//   "is this initializer shared?" with value->uses().size().
// - nodes() is always in topological order.
//
// Construction (importers, tests) uses the add_* methods below; once a graph is built,
// edits go through GraphPatch (ir/patch.h), which validates before it changes anything.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/tensor.h"
#include "ir/types.h"

namespace octet {

class Node;
class Graph;

struct Attribute {
  enum class Kind { Undefined, Float, Int, String, Tensor, Graph, Floats, Ints, Strings, Tensors,
                    Graphs, SparseTensor, SparseTensors, TypeProto, TypeProtos };
  std::string name;
  Kind kind = Kind::Undefined;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::shared_ptr<const Tensor> t;
  std::vector<std::shared_ptr<const Tensor>> tensors;
  // Kinds octet does not interpret (subgraphs, sparse tensors, type protos, attribute
  // references) are kept as the serialized AttributeProto and written back verbatim.
  std::string opaque_proto;

  static Attribute make_int(std::string name, int64_t v);
  static Attribute make_float(std::string name, float v);
  static Attribute make_string(std::string name, std::string v);
  static Attribute make_ints(std::string name, std::vector<int64_t> v);
  static Attribute make_floats(std::string name, std::vector<float> v);
  static Attribute make_tensor(std::string name, Tensor v);
};

const char* attribute_kind_name(Attribute::Kind k);

struct Use {
  Node* node;
  int index;      // input slot; for implicit (subgraph) uses, the slot in implicit_inputs
  bool implicit;  // the node's subgraph reads the value from the enclosing scope
};

class Value {
 public:
  const std::string& name() const { return name_; }
  TensorType type;

  Node* producer() const { return producer_; }
  int producer_output() const { return producer_output_; }
  const std::vector<Use>& uses() const { return uses_; }

  // Constant contents: set for initializers (and, later, folded constants). Null for an
  // initializer whose data a Session released (data_released()).
  const std::shared_ptr<const Tensor>& constant() const { return constant_; }
  bool is_initializer() const { return is_initializer_; }
  // True when the initializer's data was dropped (Graph::release_initializer_data): the
  // Value keeps its name, type and initializer status, but constant() is null.
  bool data_released() const { return data_released_; }
  bool is_graph_input() const { return is_graph_input_; }
  bool is_graph_output() const { return is_graph_output_; }

  // Symbolic contents of a small integer tensor (rank 0 or 1), e.g. the output of
  // Shape(x) is [batch, seq, 768]. Set by type inference; drives shape math.
  std::optional<DimVector> known_values;

 private:
  friend class Graph;
  friend class GraphPatch;
  std::string name_;
  Node* producer_ = nullptr;
  int producer_output_ = -1;
  std::vector<Use> uses_;
  std::shared_ptr<const Tensor> constant_;
  bool is_initializer_ = false;
  bool is_graph_input_ = false;
  bool is_graph_output_ = false;
  bool data_released_ = false;
};

class Node {
 public:
  const std::string& name() const { return name_; }
  const std::string& op_type() const { return op_type_; }
  const std::string& domain() const { return domain_; }  // "" for ai.onnx
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  // Outer-scope values read by this node's subgraph attributes (If/Loop/Scan bodies).
  const std::vector<Value*>& implicit_inputs() const { return implicit_inputs_; }
  const std::vector<Attribute>& attributes() const { return attributes_; }
  Graph* graph() const { return graph_; }
  std::string doc_string;

  // The input, or nullptr when the slot is absent or omitted.
  Value* input(size_t i) const { return i < inputs_.size() ? inputs_[i] : nullptr; }
  Value* output(size_t i) const { return i < outputs_.size() ? outputs_[i] : nullptr; }

  const Attribute* find_attr(const std::string& name) const;
  bool has_attr(const std::string& name) const { return find_attr(name) != nullptr; }
  // Typed getters; a present attribute of the wrong kind is an error naming the node.
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  float attr_float(const std::string& name, float fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<float> attr_floats(const std::string& name, std::vector<float> fallback = {}) const;
  const Tensor* attr_tensor(const std::string& name) const;

  // "node 'Attention_3' (MatMul)": the prefix of every error about this node.
  std::string describe() const;
  // The opset version of this node's domain in the owning graph.
  int64_t opset() const;

 private:
  friend class Graph;
  friend class GraphPatch;
  std::string name_, op_type_, domain_;
  std::vector<Value*> inputs_, outputs_, implicit_inputs_;
  std::vector<Attribute> attributes_;
  Graph* graph_ = nullptr;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  std::string name;
  std::string doc_string;
  // Domain -> opset version; "" is ai.onnx.
  std::map<std::string, int64_t> opset_imports;
  int64_t opset_version(const std::string& domain) const;

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  std::vector<Node*> nodes() const;
  size_t node_count() const { return nodes_.size(); }
  std::vector<Value*> initializers() const;
  std::vector<Value*> values() const;

  Value* find_value(const std::string& name) const;
  Value* value(const std::string& name) const;  // throws when missing
  // A name not yet used in this graph, derived from `base`.
  std::string unique_name(const std::string& base) const;

  // A copy of the graph (values, types, nodes, attributes, order, inputs and outputs) whose
  // initializers share this graph's constant tensors: they are immutable here, and a
  // rewrite of the copy replaces an initializer rather than editing it, so the copy costs
  // the structure, not the weights. Released initializer data stays released.
  std::unique_ptr<Graph> clone() const;

  // ---- construction API (importers and tests) ----
  Value* add_input(const std::string& name, TensorType type);
  Value* add_initializer(const std::string& name, std::shared_ptr<const Tensor> data);
  // Turns graph input `v` into an initializer holding `data` (same dtype and shape as its
  // type): load_subgraph shares an outer graph's large constants this way instead of
  // copying them through a proto. Throws when `v` is not an input or the data does not fit.
  void make_initializer(Value* v, std::shared_ptr<const Tensor> data);
  // Inputs are looked up by name ("" = omitted); outputs are created ("" = omitted).
  Node* add_node(const std::string& op_type, const std::vector<std::string>& inputs,
                 const std::vector<std::string>& outputs, std::vector<Attribute> attrs = {},
                 const std::string& domain = "", const std::string& name = "");
  void add_implicit_input(Node* node, Value* v);
  void mark_output(Value* v);

  // Drops the data of initializer `v` (constant() becomes null, data_released() true),
  // keeping the Value, its type and uses. Only for a Session that owns this graph and
  // holds what its kernels need of the weight (packed copies): export then fails and
  // folding skips the value. Returns the bytes the graph no longer references.
  size_t release_initializer_data(Value* v);
  // Reorders nodes topologically (stable: keeps the file's order where it is valid).
  // Throws naming a node on a cycle or an input that nothing produces.
  void sort_topologically();

 private:
  friend class GraphPatch;
  Value* create_value(const std::string& name);
  void rebuild_uses();

  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::unordered_map<std::string, Value*> by_name_;
  std::vector<Value*> inputs_, outputs_;
};

// Structural checks: unique names, uses consistent, topological order, outputs exist.
// Returns the problems found (empty when valid).
std::vector<std::string> verify_graph(const Graph& g);

}  // namespace octet
