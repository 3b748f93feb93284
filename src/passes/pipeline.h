// The optimizer: ordered passes run to a fixed point, and the library entry optimize().
//
//   level 0  nothing
//   level 1  cleanup: dead nodes and unused initializers, Identity / inference Dropout /
//            same-type Cast removal, constant folding, shape-value folding
//   level 2  level 1 + fusions: Erf- and tanh-GeLU -> octet.Gelu, decomposed LayerNorm ->
//            LayerNormalization, decomposed RMSNorm -> RMSNormalization (octet domain
//            below opset 23), rotate_half rotary embeddings -> octet.ApplyRotary,
//            MatMul + constant bias -> octet.MatMulBias, multi-head
//            attention blocks -> octet.Attention (reading a packed QKV projection in
//            place; three Q/K/V projections of one input merged into one), and last, once those have converged, sibling
//            products of one input merged, SiLU(gate) * up -> octet.SwiGLU, Transposes that only move
//            size-1 axes -> Reshape (a view, no copy)
//
// The result computes what the input graph computes (fp32 within float rounding; the
// fused ops round once where the unfused chains rounded at every step), keeps every
// graph input and output name, and may use octet-domain ops (imported as octet v1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "passes/pass.h"

namespace octet {

struct OptimizeOptions {
  int level = 2;
  // Constant folding skips any result larger than this: folding must not turn a small
  // model with a large ConstantOfShape/Expand/Tile into a large file.
  size_t fold_max_bytes = size_t{1} << 20;
  // Folding DequantizeLinear of a constant weight would replace int8 weights by float
  // ones and undo quantization, so it is off unless asked for.
  bool fold_dequantize = false;
  // Rounds over the whole pass list; the pipeline stops earlier once a round changes
  // nothing.
  int max_iterations = 8;
  // Run verify_graph after every pass and treat a rejected patch as an error (tests).
  bool verify = false;
  std::set<std::string> disabled_passes;  // by Pass::name
};

struct OptimizeReport {
  int64_t nodes_before = 0, nodes_after = 0;
  int64_t initializers_before = 0, initializers_after = 0;
  int iterations = 0;  // rounds, over both stages
  bool converged = false;  // false when max_iterations ended it
  std::vector<PassStats> passes;  // in pipeline order
  std::vector<std::string> warnings;

  const PassStats* find(const std::string& pass) const;
  // Sum of `details[what]` over the passes ("octet.Gelu(none)" -> 2).
  int64_t detail(const std::string& what) const;
  // One line per pass that changed something: "fuse_gelu_erf: 2 rewrites, -8 nodes (octet.Gelu(none) 2)".
  std::string to_text() const;
  nlohmann::json to_json() const;
};

// An ordered list of passes run to a fixed point, then the finishing passes to theirs:
// rewrites that would take away what the first list's patterns match (a Transpose turned
// into a Reshape) wait until no pattern can match any more.
class Pipeline {
 public:
  explicit Pipeline(std::vector<Pass> passes, std::vector<Pass> finishing = {})
      : passes_(std::move(passes)), finishing_(std::move(finishing)) {}
  // The standard passes for options.level, in order.
  static Pipeline standard(const OptimizeOptions& options);

  OptimizeReport run(Graph& graph, const OptimizeOptions& options) const;
  const std::vector<Pass>& passes() const { return passes_; }
  const std::vector<Pass>& finishing() const { return finishing_; }

 private:
  // Runs `passes` in rounds until one changes nothing (true) or max_iterations rounds
  // pass (false); their statistics go to report.passes[first_stat...].
  static bool run_stage(Graph& graph, const OptimizeOptions& options, const std::vector<Pass>& passes,
                        size_t first_stat, OptimizeReport& report);

  std::vector<Pass> passes_;
  std::vector<Pass> finishing_;
};

// Optimizes `graph` in place with the standard pipeline; returns what each pass did.
OptimizeReport optimize(Graph& graph, const OptimizeOptions& options = {});

// Runs one pass once with options.verify on (tests and tools): the report holds its
// statistics (passes[0]) and warnings.
OptimizeReport run_pass(Graph& graph, const Pass& pass, const OptimizeOptions& options = {});

}  // namespace octet
