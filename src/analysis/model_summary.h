// The facts `octet inspect` reports about a model, as JSON (the one source of truth;
// the text table is rendered from it): opsets, inputs/outputs with symbolic shapes,
// op histogram, parameters by dtype, MACs per op type under the user's dim bindings,
// which ops octet supports (and which have optimized kernels), and the octet-domain ops
// the optimizer fused. `octet inspect --optimized` adds "optimizer": the OptimizeReport
// JSON (passes/pipeline.h) of the run that produced the graph.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "ir/dim.h"
#include "onnx/model_io.h"

namespace octet {

nlohmann::json summarize_model(const Model& model, const Bindings& bindings);

// Nodes in the `octet` domain (what the optimizer fused), by "octet.<op>".
std::map<std::string, int64_t> octet_op_counts(const Graph& graph);

// Human-readable rendering of summarize_model's JSON.
std::string render_summary_text(const nlohmann::json& summary);

}  // namespace octet
