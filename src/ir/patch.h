// GraphPatch: the one way to edit a built graph.
//
// A patch stages new nodes and initializers, rewires uses and removes nodes, then
// apply() checks the result as a whole (every input defined, no use of a removed value,
// compatible types where uses move, no cycle) before it touches the graph. Either the
// whole patch lands or, on an error, the graph is exactly as before. A patch that is
// never applied changes nothing.
//
// New nodes get their output types at once (eager inference) when the patch is built
// with an inference function (see ops/infer.h: make_patch).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace octet {

class GraphPatch {
 public:
  using InferFn = std::function<void(Node&)>;
  explicit GraphPatch(Graph& graph, InferFn infer = {});
  GraphPatch(const GraphPatch&) = delete;
  GraphPatch& operator=(const GraphPatch&) = delete;
  ~GraphPatch();

  Graph& graph() const { return graph_; }

  // A new constant. The name is made unique from `name_hint`.
  Value* add_initializer(const std::string& name_hint, Tensor data);
  // A new node reading `inputs` (graph values or values this patch created; nullptr for an
  // omitted optional input). Outputs are named from the node name and typed at once.
  Node* add_node(const std::string& op_type, const std::vector<Value*>& inputs,
                 size_t num_outputs, std::vector<Attribute> attrs = {},
                 const std::string& domain = "", const std::string& name_hint = "");
  // Every consumer of `from` (and its role as a graph output, keeping the output's name)
  // reads `to` instead.
  void replace_uses(Value* from, Value* to);
  void set_input(Node* node, size_t index, Value* value);
  void remove_node(Node* node);
  // Drops an initializer of the graph. apply() refuses when anything still reads it after
  // the patch, or when it is a graph input (an overridable default) or output.
  void remove_initializer(Value* value);

  // What apply() will change, for pass statistics; valid until apply().
  struct Counts {
    size_t nodes_added = 0, nodes_removed = 0, initializers_added = 0, initializers_removed = 0;
  };
  Counts counts() const;

  // Validates and commits; throws octet::Error (graph unchanged) when the result would be
  // invalid. A patch applies once.
  void apply();

 private:
  struct Edit {
    enum class Kind { ReplaceUses, SetInput } kind;
    Value* from = nullptr;
    Value* to = nullptr;
    Node* node = nullptr;
    size_t index = 0;
  };
  std::string reserve_name(const std::string& base);
  bool is_known_value(const Value* v) const;

  Graph& graph_;
  InferFn infer_;
  std::vector<std::unique_ptr<Node>> new_nodes_;
  std::vector<std::unique_ptr<Value>> new_values_;
  std::set<std::string> reserved_names_;
  std::vector<Edit> edits_;
  std::set<Node*> removed_;
  std::set<Value*> removed_initializers_;
  bool applied_ = false;
};

}  // namespace octet
