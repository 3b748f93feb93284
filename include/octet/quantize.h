// Post-training int8 quantization through the public API: what `octet quantize` does
// (docs/quantization.md), with the calibration samples coming from the caller.
//
//   class MySamples : public octet::CalibrationSource {
//     bool next(octet::NamedTensors& sample) override { ... fill sample; return true until done ... }
//   };
//   MySamples samples;
//   octet::QuantizeReport r = octet::quantize("model.onnx", "model_int8.onnx", {}, &samples);
//   std::cout << r.int8_mac_share << "\n" << r.json << "\n";
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "octet/tensor.h"

namespace octet {
namespace v1 {

// The spellings are the CLI's (`octet quantize --help`); anything else is an octet::Error
// listing the accepted values.
struct QuantizeOptions {
  // auto: static with calibration, dynamic without, and per-token dynamic for a decoder
  // LLM (target octet; see `octet quantize --help`, MODES) | static (needs calibration) | dynamic
  std::string mode = "auto";
  std::string target = "octet";       // octet | ort | tensorrt
  std::string method = "minmax";      // calibration: minmax | percentile | entropy | mse
  double percentile = 99.99;          // for method "percentile", in [50, 100]
  std::string activation_type;        // uint8 | int8; empty: int8 for tensorrt, else uint8
  bool per_channel = true;            // weights: one scale per output channel
  bool quantize_attention = true;     // the activation x activation MatMuls of attention
  bool attention_row_scales = true;   // softmax probabilities with a scale per row (CLI --attention int8)
  std::string rounding = "gptq";      // int8 MatMul/Gemm weights with samples: gptq | nearest
  bool quantize_embeddings = true;    // Gather on a constant table -> int8 rows
  size_t embedding_min_kib = 1024;    // smaller tables (positions, token types) stay float; 0: all
  std::vector<std::string> exclude;   // node names or op types kept in float
  // Static mode, target octet: MatMul/Gemm node names or op types whose input is quantized
  // per token at run time instead of with one calibrated scale (CLI --per-token). Empty:
  // every MatMul/Gemm on the octet target; {"none"}: all calibrated
  std::vector<std::string> per_token;
  std::string smoothquant;            // "auto", "off" or an alpha in [0, 1] ("0.5"); "": auto in static mode
  double smoothquant_min_outlier = 4; // smooth only activations at least this uneven
  std::optional<double> max_drop;     // keep the fewest layers float so the drop stays below
  std::string metric = "cosine";      // for max_drop: cosine | top1 | mse
  bool explain = false;               // per-layer input statistics in the report
  size_t max_samples = 0;             // use at most this many calibration samples (0: all)
  double holdout = 0.2;               // share held out for the fidelity report
  size_t sqnr_samples = 8;            // per-layer SQNR over at most this many samples
  bool external_data = false;         // write the weights to OUTPUT.data
};

// Calibration samples, implemented by the caller: each call to next() fills `sample` with
// one sample's inputs by name (batch 1 is usual; shapes may differ between samples) and
// returns true, or returns false when there are no more. The samples are read once, in
// order; octet keeps them in a temporary folder while it quantizes, not in memory.
class CalibrationSource {
 public:
  virtual ~CalibrationSource() = default;
  virtual bool next(NamedTensors& sample) = 0;
};

// Progress while quantizing: the stage ("reading samples", "calibrating", ...), the
// steps done and the steps in this stage (0 when not known yet).
using ProgressCallback = std::function<void(const std::string& stage, size_t done, size_t total)>;

struct LayerSummary {
  std::string node, op, kind;
  std::optional<double> sqnr_db;  // quantized output against float on calibration samples
};
struct SkippedLayer {
  std::string node, op, reason;
};
struct OutputFidelity {
  std::string name;
  double cosine = 0, max_abs_error = 0, mse = 0;
  std::optional<double> top1_agreement;  // for outputs that look like logits
  size_t samples = 0;
};

struct QuantizeReport {
  std::string model, output;
  uint64_t float_file_bytes = 0, quantized_file_bytes = 0;
  int64_t total_macs = 0, int8_macs = 0;
  double int8_mac_share = 0;
  std::string calibration_source;
  size_t calibration_samples = 0, eval_samples = 0;
  std::vector<LayerSummary> layers;
  std::vector<SkippedLayer> skipped;
  std::vector<OutputFidelity> fidelity;  // end outputs, quantized against float
  std::vector<std::string> notes;
  double seconds = 0;
  std::string json;  // everything, as `octet quantize --report` writes it
  std::string text;  // the table `octet quantize` prints
};

// Quantizes the model at `model_path` and writes `output_path` (never the input itself;
// an existing output file is replaced). `calibration` may be null in dynamic mode.
QuantizeReport quantize(const std::string& model_path, const std::string& output_path,
                        const QuantizeOptions& options, CalibrationSource* calibration,
                        const ProgressCallback& progress = {});
// The same with samples from a folder or file (.npz files, <input>.npy stacks, ONNX
// test-data folders, or one .npz), as `octet quantize --calib`.
QuantizeReport quantize(const std::string& model_path, const std::string& output_path,
                        const QuantizeOptions& options, const std::string& calibration_path,
                        const ProgressCallback& progress = {});

}  // namespace v1
}  // namespace octet
