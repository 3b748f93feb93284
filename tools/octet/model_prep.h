// What optimize, bench and inspect --optimized share: load a model, optionally fix its
// --dim symbols (specialize), run the standard optimizer, and build a Session with the
// CLI's one-line error for unsupported ops.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "onnx/model_io.h"
#include "passes/pipeline.h"
#include "run_inputs.h"
#include "runtime/session.h"

namespace octet::cli {

// Checks an --level value (one line naming the option otherwise).
void check_level(int level);

struct PreparedModel {
  Model model;
  DimRequests dims;        // --dim split into named symbols and INPUT:AXIS requests
  Bindings specialized;    // the symbols bound into the graph before optimizing
  OptimizeReport report;   // empty (level 0 run) when optimizing was not asked for
  double load_ms = 0, optimize_ms = 0;
};

struct PrepareOptions {
  std::vector<std::string> dims;  // --dim items
  int level = 2;
  // Bind the named --dim symbols into the graph before optimizing, so folding can use
  // them (GPT-2's causal mask). The result then accepts only inputs of those sizes.
  bool specialize = true;
  // Skip --dim items that name no input symbol instead of failing (inspect's --dim also
  // binds symbols inside the graph for its MAC estimate).
  bool skip_unknown_dims = false;
};

PreparedModel prepare_model(const std::string& path, const PrepareOptions& options);

// The Session for `graph`; the error listing unsupported ops (one per line from the
// library) becomes one line starting with `model_path`. Move the graph in (keep no other
// shared_ptr to it) so the session may drop the weights its kernels keep packed; read
// the graph through Session::graph() afterwards.
std::unique_ptr<Session> make_session(std::shared_ptr<Graph> graph, const SessionOptions& options,
                                      const std::string& model_path);

}  // namespace octet::cli
