// `octet check`: every node's element types against its op's ONNX type constraints for
// the model's opset, the target runtime's kernels, and dtype agreement along edges.
//
// The model is read without octet's own inference failing on the first bad node (a type
// error is what this checker exists to report): infer_tolerant() types node by node, and
// a node whose rule throws keeps its stored output types (value_info) or none, so one bad
// node does not hide the problems after it.
#pragma once

#include <string>
#include <vector>

#include "check/target_kernels.h"
#include "check/type_problem.h"
#include "ops/infer.h"

namespace octet::check {

struct InferFailure {
  Node* node;
  std::string message;
};

// Infers types node by node; failures are returned, not thrown.
std::vector<InferFailure> infer_tolerant(Graph& graph, const DeclaredTypes& declared);

// The ONNX-spec problems of one node (type outside its variable's allowed set, inputs of
// one type variable with different types, fixed-type slots of another type).
std::vector<TypeProblem> check_node_schema(const Node& node);

struct CheckReport {
  std::vector<TypeProblem> problems;
  std::vector<std::string> notes;  // e.g. newer opset checked against an older schema
  size_t nodes_checked = 0;
};

// Runs infer_tolerant (the graph's types are updated) and every check for `target`.
CheckReport check_model_types(Graph& graph, const DeclaredTypes& declared, Target target);

}  // namespace octet::check
