// Graph-level type and shape inference.
//
// Runs every node's rule in topological order. Types stored in the model (value_info,
// graph outputs) are only hints: where inference derives a type it wins, and a stored
// type that disagrees is a warning naming the node, never an error. Anonymous stored dims
// (unk__N, empty, DynamicDimension.N) never disagree with anything. Ops octet does not
// know keep their stored types.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/patch.h"

namespace octet {

// Types as the model file declared them, by value name.
using DeclaredTypes = std::map<std::string, TensorType>;

struct InferResult {
  std::vector<std::string> warnings;
  std::vector<const Node*> unknown_ops;  // nodes with no registered op: types kept as stored
};

// Infers every node. A node whose inputs make its op impossible (mismatched matmul
// dims, bad axis) is an error naming the node.
InferResult infer_graph(Graph& graph, const DeclaredTypes& declared = {});

// Infers one node from its inputs' current types (used for nodes built by a patch).
void infer_node(Node& node, std::vector<std::string>* warnings = nullptr);

// A patch whose new nodes are typed as soon as they are added.
inline GraphPatch make_patch(Graph& graph) {
  return GraphPatch(graph, [](Node& n) { infer_node(n); });
}

// True when `declared` and `inferred` contradict each other: different element types,
// different ranks, or a dim both sides know that differs (anonymous stored dims never do).
// `input_symbols` are the graph inputs' named dims: only those, and known sizes, can
// contradict; any other stored symbol is a name some tool gave an unknown.
bool types_conflict(const TensorType& declared, const TensorType& inferred,
                    const std::set<std::string>& input_symbols);

}  // namespace octet
