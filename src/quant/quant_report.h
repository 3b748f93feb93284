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

struct LayerReport {
  std::string node, op, kind;
  std::string output;          // the float value compared for SQNR
  std::optional<double> sqnr_db;  // 10 log10(sum y^2 / sum (y - y_q)^2); none when not measured
  std::optional<int64_t> macs;    // under the report's bindings
};

struct SkippedReport {
  std::string node, op, reason;
};

struct OutputFidelity {
  std::string name;
  double cosine = 0, max_abs_error = 0;
  std::optional<double> top1_agreement;  // logits: share of rows whose argmax agrees
  size_t samples = 0;
};

struct Coverage {
  int64_t total_macs = 0, int8_macs = 0;
  double share() const { return total_macs ? static_cast<double>(int8_macs) / static_cast<double>(total_macs) : 0; }
  std::vector<std::string> float_matmuls;  // matmul-like nodes left in float, with their MACs
};

struct QuantizeReport {
  QuantizeOptions options;
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
