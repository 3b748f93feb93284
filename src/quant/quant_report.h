// What `octet quantize` tells the user (--report FILE.json, and a table on stdout):
// sizes before and after, the share of multiply-accumulates that run in int8, each
// quantized layer's SQNR against float on calibration data, and end-output fidelity
// (cosine, max abs error, top-1 agreement) on held-out samples.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ir/graph.h"
#include "quant/quantize_options.h"

namespace octet::quant {

// The input activation of a weight layer, per channel (--explain, --smoothquant).
struct LayerInputStats {
  float min = 0, max = 0;     // over the calibration samples
  double outlier_ratio = 0;   // largest channel abs-max over the median one
  std::optional<double> smooth_alpha;  // when smoothed
  float scale_min = 1, scale_max = 1;  // the smoothing scales s_j
};

struct LayerReport {
  std::string node, op, kind;
  std::string output;          // the float value compared for SQNR
  std::optional<double> sqnr_db;  // 10 log10(sum y^2 / sum (y - y_q)^2); none when not measured
  std::optional<int64_t> macs;    // under the report's bindings
  std::optional<LayerInputStats> input;
};

struct SkippedReport {
  std::string node, op, reason;
};

struct OutputFidelity {
  std::string name;
  double cosine = 0, max_abs_error = 0, mse = 0;  // mse: mean of (float - quantized)^2
  std::optional<double> top1_agreement;  // logits: share of rows whose argmax agrees
  size_t samples = 0;
};

struct Coverage {
  int64_t total_macs = 0, int8_macs = 0;
  double share() const { return total_macs ? static_cast<double>(int8_macs) / static_cast<double>(total_macs) : 0; }
  std::vector<std::string> float_matmuls;  // matmul-like nodes left in float, with their MACs
};

struct SmoothGroupReport {
  std::string activation;
  std::vector<std::string> consumers;
  double outlier_ratio = 0;
  bool smoothed = false;
  double alpha = 0;
  std::string reason, where;  // why (not) and how alpha was chosen; where 1/s went
  std::optional<double> error_plain, error_smoothed;  // the group's quantized output error on kept rows
};

struct SmoothingReport {
  std::string setting;  // "0.5" or "auto"
  double min_outlier_ratio = 0;
  std::vector<SmoothGroupReport> groups;
  // The smoothed float model against the original, before quantization: the largest
  // |difference| over the largest |original| of each output, worst output.
  double max_relative_error = 0;
  // The same quantization without smoothing, measured like `fidelity`.
  std::vector<OutputFidelity> fidelity_without;
};

// GPTQ rounding (gptq.h): how many weights, and the mean over them of the H-weighted
// relative output error tr(D^T H D) / tr(W^T H W) with nearest rounding and with GPTQ.
struct GptqReport {
  size_t layers = 0, calibration_passes = 0;
  double error_nearest = 0, error_gptq = 0;
};

struct FloatLayerReport {
  std::string node;
  double drop_alone = 0;
};

struct MixedPrecisionReport {
  std::string metric;
  double max_drop = 0, drop_all_int8 = 0, final_drop = 0;
  bool met = false;
  size_t evaluations = 0;
  std::vector<FloatLayerReport> float_layers;  // most sensitive first
};

struct QuantizeReport {
  QuantizeOptions options;
  // Why options.mode, when octet chose it for a caller who named none (default_mode.h).
  std::string mode_reason;
  std::string model, output;
  uint64_t float_file_bytes = 0, quantized_file_bytes = 0;  // on disk, external data included
  uint64_t float_weight_bytes = 0, quantized_weight_bytes = 0;
  std::string bindings;  // "batch=1, seq=128": where MACs were counted
  Coverage coverage;
  std::string calibration_source;
  size_t calibration_samples = 0, eval_samples = 0;
  bool eval_in_sample = false;  // too few samples to hold any out
  std::vector<LayerReport> layers;
  std::vector<SkippedReport> skipped;
  std::vector<OutputFidelity> fidelity;
  std::optional<SmoothingReport> smoothing;
  std::optional<MixedPrecisionReport> mixed_precision;
  std::optional<GptqReport> gptq;
  bool explain = false;  // the text form shows the per-layer input statistics
  std::vector<std::string> notes;
  double seconds = 0;

  nlohmann::json to_json() const;
  std::string to_text() const;
};

// MACs of every matmul-like node under `bindings`, and of those that compute in int8:
// MatMul/Gemm/Conv whose operands all come from DequantizeLinear, the ONNX integer ops
// (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv) and octet.QMatMul/QAttention.
Coverage int8_coverage(const Graph& graph, const Bindings& bindings);

// Bytes of initializer data in a graph.
uint64_t weight_bytes(const Graph& graph);

}  // namespace octet::quant
