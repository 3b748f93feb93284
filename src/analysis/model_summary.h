// The facts `octet inspect` reports about a model, as JSON (the one source of truth;
// the text table is rendered from it): opsets, inputs/outputs with symbolic shapes,
// op histogram, parameters by dtype, MACs per op type under the user's dim bindings,
// and which ops octet supports.
#pragma once

#include <nlohmann/json.hpp>

#include "ir/dim.h"
#include "onnx/model_io.h"

namespace octet {

nlohmann::json summarize_model(const Model& model, const Bindings& bindings);

// Human-readable rendering of summarize_model's JSON.
std::string render_summary_text(const nlohmann::json& summary);

}  // namespace octet
