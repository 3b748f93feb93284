// What a node can get wrong besides types, and a model besides its nodes: the mistakes
// every command must point out instead of silently accepting (issue 19).
//
// - an op type octet has no rule for (a typo like "Erff", an op of an unknown domain);
// - an attribute given twice, or one the op does not define (checked against the ONNX
//   schema registry; nodes of opsets newer than the registry and non-ONNX domains are
//   not judged, since their attribute lists are unknown here);
// - more inputs or outputs than the op has (the extra outputs would never be written);
// - an ai.onnx opset or IR version newer than octet knows.
//
// load_model() adds every issue to Model::warnings, so each command that loads a model
// reports them; `octet check` reports the node issues as problems.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace octet::check {

// The newest IR version octet reads knowingly: that of the onnx release the tests pin
// (tests/requirements.txt). Newer files may carry fields octet passes through unread.
inline constexpr int64_t kNewestKnownIrVersion = 14;

// The newest ai.onnx opset whose additions octet reads: opset 25's int2/uint2 and
// float8e8m0 import and run (kNewestOnnxOpset, 23, is the newest whose ops octet
// implements in full). A model importing a newer one gets a warning.
inline constexpr int64_t kNewestKnownOnnxOpset = 25;

struct NodeIssue {
  const Node* node;
  std::string rule;  // what is wrong, without the node's name
  std::string fix;
  std::string text() const { return node->describe() + ": " + rule; }
};

std::vector<NodeIssue> check_node_structure(const Graph& graph);

// The model-level issues (opset and IR version), one line each.
std::vector<std::string> check_model_versions(int64_t ir_version, const std::map<std::string, int64_t>& opsets);

}  // namespace octet::check
