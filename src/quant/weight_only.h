// Weight-only quantization (`octet quantize --weights int4|int8`): every MatMul whose B is a
// constant float32 [K, N] gets 4- or 8-bit weights in blocks of `block` values along K, and
// activations stay float. Aimed at decoding, where a step reads every weight once and the
// bytes read set the speed. docs/quantization.md §6 describes the formats:
//   target ort:            com.microsoft.MatMulNBits (onnxruntime's and octet's native op)
//   target octet/tensorrt: MatMul(A, DequantizeLinear(W_q, scales[, zero_points], axis 0,
//                          block_size)), standard ONNX opset 21 (the opset is raised when
//                          older); octet's optimizer turns it into MatMulNBits.
// Methods: RTN (round to nearest per block, quant/block_quant.h), or AWQ (quant/awq.h):
// per-input-channel scales searched on calibration activations (--calib), folded into the
// weights and, inverted, into the activation's producer; then RTN.
#pragma once

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "onnx/model_io.h"
#include "quant/quantize_options.h"

namespace octet::quant {

struct WeightOnlyOptions {
  int bits = 4;
  int64_t block = 0;        // 0: the default, 32 for int4 and 128 for int8
  bool symmetric = true;    // false: a zero point per block (--asymmetric)
  bool keep_lm_head = false;  // the MatMul producing a graph output stays float
  bool awq = false;           // --method awq: activation-aware scales first (needs calibration samples)
  bool gptq = false;          // --method gptq / awq-gptq: GPTQ rounding within the blocks (gptq.h)
  Target target = Target::Octet;
  std::set<std::string> exclude;  // node names or op types kept float

  int64_t block_size() const { return block ? block : (bits == 4 ? 32 : 128); }
};

struct WeightOnlyJob {
  std::filesystem::path model, output;
  WeightOnlyOptions options;
  std::string calib;         // calibration samples (AWQ)
  size_t calib_samples = 0;  // at most this many (0: all)
  SaveOptions save;
  bool progress = true;
};

struct WeightOnlyLayer {
  std::string node, weight;
  int64_t K = 0, N = 0;
  bool lm_head = false;
  double rel_error = 0;  // ||W - W_q|| / ||W|| (Frobenius), of the weights as written
};

struct WeightOnlyReport {
  WeightOnlyOptions options;
  std::string model, output, form;
  std::vector<WeightOnlyLayer> layers;
  std::vector<std::pair<std::string, std::string>> kept;  // node, why it stays float
  std::vector<std::string> notes;
  uint64_t float_file_bytes = 0, quantized_file_bytes = 0;
  size_t calibration_samples = 0;
  struct AwqGroup {
    std::string activation;
    size_t readers = 0;
    double alpha = 0, error_rtn = 0, error_awq = 0;  // output error on the kept rows
    std::string folded;                               // where 1/s went
  };
  std::vector<AwqGroup> awq;
  size_t gptq_layers = 0;  // weights rounded by GPTQ
  double seconds = 0;

  std::string to_text() const;
  nlohmann::json to_json() const;
};

// Parses "int4" / "4" / "int8" / "8"; an octet::Error listing the choices otherwise.
int parse_weight_bits(const std::string& s);

WeightOnlyReport quantize_weights_only(const WeightOnlyJob& job);

}  // namespace octet::quant
