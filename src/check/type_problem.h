// One type problem `octet check` reports: the node, its op, its inputs with their
// element types, the rule broken and a suggested fix. One line of text or one JSON object.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "ir/graph.h"

namespace octet::check {

struct TypeProblem {
  std::string node;    // node name ("" only for a graph output declared with another type)
  std::string op;      // "Add", "com.microsoft.MatMulNBits"
  std::vector<std::pair<std::string, DType>> inputs;  // DType::Undefined where unknown
  std::string rule;    // what is broken, citing its source ("Add-14: ...", "onnxruntime CPU: ...")
  std::string fix;     // what to do about it
  std::string source;  // "onnx" (the spec), "edge", "inference", "ort", "tensorrt"

  std::string to_text() const;
  nlohmann::json to_json() const;
};

// The node-naming part every problem starts from.
TypeProblem problem_at(const Node& node, std::string source);

}  // namespace octet::check
