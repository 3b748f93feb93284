// The op table: for each (domain, op_type) octet knows, its type and shape inference
// (and, from the runtime issue on, its reference kernel). One file per op family in
// src/ops/ registers its ops; registry.cpp lists the families.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace octet {

// What an op's inference rule sees: the node, its inputs' types, constant contents and
// known symbolic values; what it produces: output types and, for small integer tensors,
// their symbolic values.
class InferContext {
 public:
  InferContext(Node& node, std::vector<std::string>* warnings) : node_(node), warnings_(warnings) {}

  Node& node() const { return node_; }
  int64_t opset() const { return node_.opset(); }
  size_t num_inputs() const { return node_.inputs().size(); }
  size_t num_outputs() const { return node_.outputs().size(); }
  bool has_input(size_t i) const { return node_.input(i) != nullptr; }

  // The input's type; an error naming the node if a required input is absent.
  const TensorType& input_type(size_t i) const;
  DType input_dtype(size_t i) const { return input_type(i).dtype; }
  // The input's dims, or nullopt when its rank is unknown.
  const std::optional<DimVector>& input_dims(size_t i) const { return input_type(i).dims; }
  // Initializer contents, or nullptr.
  const Tensor* input_constant(size_t i) const;
  // Symbolic contents of a small integer input (rank 0/1): from known_values or constants.
  std::optional<DimVector> input_values(size_t i) const;
  // Same, when every element is a known integer.
  std::optional<std::vector<int64_t>> input_ints(size_t i) const;

  void set_output(size_t i, TensorType type);
  void set_output(size_t i, DType dtype, std::optional<DimVector> dims) {
    set_output(i, TensorType(dtype, std::move(dims)));
  }
  void set_output_values(size_t i, DimVector values);

  // Error naming the node: ctx.fail("axis ", a, " out of range for rank ", r).
  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    ::octet::fail(node_.describe(), ": ", parts...);
  }
  void warn(const std::string& message) const;

 private:
  Node& node_;
  std::vector<std::string>* warnings_;
};

using InferFn = void (*)(InferContext&);

struct OpDef {
  std::string domain;   // "" for ai.onnx, "com.microsoft", "octet"
  std::string op_type;
  InferFn infer = nullptr;
};

class OpRegistry {
 public:
  // The table with every op family registered.
  static const OpRegistry& global();

  void add(OpDef def);
  const OpDef* find(const std::string& domain, const std::string& op_type) const;
  std::vector<const OpDef*> all() const;

 private:
  std::map<std::pair<std::string, std::string>, OpDef> ops_;
};

// The newest ai.onnx opset octet implements; assumed for graphs that import none
// (hand-built graphs), so they get current behaviour.
inline constexpr int64_t kNewestOnnxOpset = 23;
// The node's ai.onnx opset, kNewestOnnxOpset when the graph does not say.
int64_t onnx_opset(const InferContext& ctx);

// Normalizes a possibly negative axis against `rank`; an error naming the node if out of range.
int64_t normalize_axis(const InferContext& ctx, int64_t axis, int64_t rank);
// Normalizes a list of axes; a repeated axis is an error naming the node.
std::vector<int64_t> normalize_axes(const InferContext& ctx, const std::vector<int64_t>& axes, int64_t rank);

}  // namespace octet
