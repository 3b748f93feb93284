// `octet run`'s report. It is built as JSON (what --json prints) and the text report is
// rendered from that JSON, so the two never disagree.
//
//   {"model": path, "nodes": n, "warnings": [...], "timing_ms": {"load", "session", "runs"},
//    "runs": [{"name", "dir"?, "bindings": {sym: n}, "time_ms",
//              "inputs":  [{"name", "dtype", "shape", "source", "stats"}],
//              "outputs": [{"name", "dtype", "shape",
//                           "stats": {"min", "max", "mean", "nan", "inf", "count"},
//                           "file"?,       // written by --out
//                           "reference"?   // --test-data with an expected output:
//                             {"file", "ok", "problem"?, "count", "mismatched",
//                              "max_abs_error", "max_rel_error",
//                              "worst": {"index", "actual", "expected"}?}}]}],
//    "comparison"?: {"rtol", "atol", "sets", "outputs_compared", "outputs_mismatched", "ok"}}
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor.h"
#include "runtime/tensor_check.h"

namespace octet::cli {

nlohmann::json tensor_json(const std::string& name, const Tensor& t);
nlohmann::json stats_json(const TensorStats& s);
nlohmann::json comparison_json(const Comparison& c, const std::string& file);

std::string render_run_text(const nlohmann::json& report);

}  // namespace octet::cli
