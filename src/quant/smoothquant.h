// SmoothQuant (docs/quantization.md §5): for a quantized MatMul/Gemm whose input X has
// outlier channels, pick per-input-channel scales s_j = max|X_j|^a / max|W_j|^(1-a) from
// calibration statistics; X is divided by s (folded into its producer by smooth_fold.h)
// and the weight rows multiplied by s, so X.W is unchanged in exact arithmetic while X/s
// quantizes with far less error.
//
// All matmuls reading the same X form one group with one s (a LayerNorm feeding Q, K and
// V): max|W_j| is taken over every weight in the group, so one division of X serves all.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/calibrate.h"
#include "quant/channel_stats.h"
#include "quant/quantize_plan.h"

namespace octet::quant {

// The matmuls with constant weights that read one activation as their A input.
struct SmoothGroup {
  std::string activation;              // X, by name in the cleaned float graph
  std::vector<std::string> consumers;  // MatMul/Gemm node names, graph order
  int64_t channels = 0;                // K
  // Every consumer reads X quantized per token at run time (QuantizedNode::per_token): the
  // alpha search then models X / s quantized per row, not with one calibrated range.
  bool per_token = false;
};

// A group weight as [K, N] whatever its stored layout (Gemm transB=1 stores [N, K]); the
// data stays the graph's. Throws when `node_name` has no constant 2-D float weight.
struct WeightView {
  const float* data = nullptr;
  int64_t k = 0, n = 0;
  bool transposed = false;
  float at(int64_t row, int64_t col) const { return transposed ? data[col * k + row] : data[row * n + col]; }
};
WeightView weight_view(const Graph& graph, const std::string& node_name);

// Groups of the plan's MatMul/Gemm weight nodes (Conv is not smoothed), in graph order.
std::vector<SmoothGroup> find_smooth_groups(const Graph& graph, const QuantizePlan& plan);

// One pass of the float model over the samples, watching each group's X per channel
// (keeping up to `keep_rows` rows each for error estimates).
std::map<std::string, ChannelStatsObserver> observe_channels(std::shared_ptr<const Graph> graph,
                                                             const std::vector<SmoothGroup>& groups,
                                                             const CalibrationSource& source,
                                                             const std::vector<size_t>& samples, size_t keep_rows,
                                                             const ProgressFn& progress = {});
// The same on a graph handed over: the session may then drop the float weights it keeps
// packed (SessionOptions::release_packed_weights), so the pass costs one copy of them.
std::map<std::string, ChannelStatsObserver> observe_channels(std::shared_ptr<Graph> graph,
                                                             const std::vector<SmoothGroup>& groups,
                                                             const CalibrationSource& source,
                                                             const std::vector<size_t>& samples, size_t keep_rows,
                                                             const ProgressFn& progress = {});

// The same on a session the caller built.
std::map<std::string, ChannelStatsObserver> observe_channels(const Session& session,
                                                             const std::vector<SmoothGroup>& groups,
                                                             const CalibrationSource& source,
                                                             const std::vector<size_t>& samples, size_t keep_rows,
                                                             const ProgressFn& progress = {});

// How --smoothquant chooses.
struct SmoothingRequest {
  std::optional<double> alpha;  // a fixed alpha in [0, 1]; none: auto (per group, by error)
  double min_outlier_ratio = 4;  // smooth only groups whose X has at least this outlier ratio
};

// The request a user's setting asks for: "auto", "off", an alpha in [0, 1], or "" (auto in
// static mode, none in dynamic mode). Static mode smooths by default because auto only
// smooths an activation where that lowers its layers' quantized output error; on the real
// paraphrase-MiniLM-L3 it took held-out embedding cosine from 0.9968 to 0.9985. Throws
// octet::Error naming the option as the caller spells it (`--smoothquant`, `smoothquant`)
// and the bad value. One parser for the CLI and the public API.
std::optional<SmoothingRequest> parse_smoothing(const std::string& setting, Mode mode, double min_outlier_ratio,
                                                const std::string& option_name = "smoothquant");

// What was decided for one group, and the numbers --explain shows.
struct SmoothingDecision {
  SmoothGroup group;
  float act_min = 0, act_max = 0;  // X's range over the calibration samples
  double outlier_ratio = 0;
  bool smoothed = false;
  std::string reason;              // why not, or how alpha was chosen
  double alpha = 0;
  std::vector<float> scale;        // s_j (empty when not smoothed)
  // Squared error of the group's fake-quantized outputs on the kept rows (sum over the
  // group's weights), without and with the chosen s; none when no rows were kept.
  std::optional<double> error_plain, error_smoothed;
};

// s_j = max|X_j|^alpha / max|W_j|^(1-alpha), with s_j = 1 where either max is 0 and the
// result clamped to [1e-5, 1e5] so no channel is scaled into underflow.
std::vector<float> smoothing_scales(const std::vector<float>& act_abs_max, const std::vector<float>& weight_abs_max,
                                    double alpha);

// max|W_j| over the group's weights along K.
std::vector<float> weight_abs_max(const Graph& graph, const SmoothGroup& group);

// The error estimate behind `auto`: the group's outputs on the kept rows, with X / s
// quantized per tensor (range from the per-channel min/max, so over all samples; per row
// when the group reads X per token, SmoothGroup::per_token) and the
// weights s * W quantized per output channel (or per tensor) as the quantizer would,
// against the float product. Empty `scale` means no smoothing.
double smoothing_error(const Graph& graph, const SmoothGroup& group, const ChannelStatsObserver& stats,
                       const std::vector<float>& scale, const QuantizeOptions& options);

std::vector<SmoothingDecision> decide_smoothing(const Graph& graph, const std::vector<SmoothGroup>& groups,
                                                const std::map<std::string, ChannelStatsObserver>& stats,
                                                const SmoothingRequest& request, const QuantizeOptions& options);

}  // namespace octet::quant
