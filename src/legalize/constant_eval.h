// Evaluates a value computed only from constants (a weight unpacked in the graph) with
// octet's reference kernels, without changing the graph, and lists the initializers it
// was computed from.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace octet::legalize {

struct ConstantExpression {
  std::shared_ptr<const Tensor> value;
  std::vector<Value*> leaves;  // initializers it reads, each once
  std::vector<Node*> nodes;    // the nodes that compute it
};

// nullopt when `v` depends on a graph input, an op without a reference kernel, or a node
// whose kernel fails; or when more than `max_nodes` nodes compute it.
std::optional<ConstantExpression> evaluate_constant(Value* v, size_t max_nodes = 256);

}  // namespace octet::legalize
