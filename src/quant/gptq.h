// GPTQ rounding for octet's int8 weights (Frantar et al., "GPTQ: Accurate Post-Training
// Quantization for Generative Pre-trained Transformers", 2022).
//
// Rounding every weight to its nearest int8 value makes each weight as close as it can be,
// but what matters is the layer's output X.W. GPTQ rounds the rows of a [K, N] weight one
// input channel at a time and moves each row's rounding error onto the rows not yet rounded,
// weighted by H = sum x^T x over the layer's calibration inputs, so that the rounding
// errors of correlated input channels cancel in X.W. Scales stay those of nearest rounding
// (symmetric, per output channel), so the file format and the kernels do not change.
//
// On all-MiniLM-L6-v2 (SmoothQuant auto, held-out sentences) it roughly halves the output
// error the int8 weights add; with activations float, mean embedding cosine 0.99859 -> 0.99930.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"
#include "quant/block_quant.h"
#include "quant/calibration_data.h"
#include "quant/qdq_rewrite.h"
#include "quant/quantize_plan.h"
#include "runtime/session.h"

namespace octet::quant {

// The sum of x^T x over the rows x (the last axis, K values) of every tensor observed:
// the Hessian of the layer's squared output error, up to a factor of 2.
//
// With `row_steps` (the activation type of a layer that reads its input per token), each
// row is first divided by its own run-time quantization step, up to the constant 255 or
// 127: by its range [min(x, 0), max(x, 0)] for uint8, by max|x| for int8 (an all-zero row
// adds nothing). H then weighs each token's weight error in units of its activation
// rounding, which is relative to its own range; a plain Gram lets a few huge-norm tokens
// (DINOv2's high-norm patch tokens) decide the rounding of every weight. Held-out
// (harness): DINOv2-S CLS cosine min 0.9952 plain, 0.9979 in steps (nearest rounding
// 0.9980; rows of unit L2 norm 0.9973); all-MiniLM-L6 0.9994 / 0.9987 / NN 0.953 plain,
// 0.9994 / 0.9985 / 0.967 in steps.
class GramObserver {
 public:
  GramObserver(std::string name, int64_t k, std::optional<DType> row_steps = std::nullopt);
  void observe(const Tensor& t);                         // float32 [..., K]
  std::vector<double> matrix() const { return {sum_.begin(), sum_.end()}; }  // K x K, row-major, symmetric
  uint64_t rows() const { return rows_; }
  int64_t k() const { return k_; }

 private:
  std::string name_;
  int64_t k_;
  std::optional<DType> row_steps_;
  std::vector<float> sum_;
  uint64_t rows_ = 0;
};

// The upper triangular U with U^T U = (H + damp * mean(diag H) * I)^-1: the factor GPTQ
// reads its error weights from. H is K x K, symmetric positive semi-definite; input channels
// that never carried a value (zero on the diagonal) get 1 there. Double precision throughout.
std::vector<double> inverse_cholesky_upper(std::vector<double> h, int64_t k, double damp);

// GPTQ of w [K, N] (row-major float, output channels along N) to int8 in [-127, 127] with
// the given scales (N of them, or 1 for the whole tensor): rows are rounded in order of
// decreasing H diagonal ("act order"), each row's error spread over the rows after it.
// Returns the int8 values in w's layout.
std::vector<int8_t> gptq_round(const float* w, int64_t k, int64_t n, const std::vector<float>& scales,
                               const std::vector<double>& h, double damp = 0.01);

// GPTQ for blocked weight-only quantization (block_quant.h): q holds the scales and zero
// points nearest rounding chose for w [K, N] (fixed beforehand, GPTQ's "static groups",
// which keeps act order possible); its codes are replaced by GPTQ's.
void gptq_round_blocks(const float* w, const std::vector<double>& h, BlockQuantized& q, double damp = 0.01);

// H-weighted relative error of a rounding: tr(D^T H D) / tr(W^T H W), D = W - q * scale.
double output_error(const float* w, const int8_t* q, int64_t k, int64_t n, const std::vector<float>& scales,
                    const std::vector<double>& h);

// What gptq_weights did, for the report.
struct GptqSummary {
  size_t layers = 0;                  // weights rounded with GPTQ
  size_t calibration_passes = 0;      // passes over the samples (Gram matrices are memory-capped)
  double error_nearest = 0;           // mean over layers of output_error, nearest rounding
  double error_gptq = 0;              // the same with GPTQ
  std::vector<SkippedNode> skipped;   // planned weights left to nearest rounding, and why
};

// The Gram matrices of `inputs` (value name, channel count K) on `session`'s graph over
// `samples`, those named in `per_token` with rows in their quantization steps of that
// activation type (GramObserver); sample_done is called after each sample.
std::map<std::string, GramObserver> observe_grams(const Session& session,
                                                  const std::vector<std::pair<std::string, int64_t>>& inputs,
                                                  const CalibrationSource& source, const std::vector<size_t>& samples,
                                                  const std::function<void()>& sample_done,
                                                  const std::set<std::string>& per_token = {},
                                                  DType row_type = DType::UInt8);

// The damping gptq_weights uses: 1% of H's mean diagonal (GPTQ's), 10% for a layer that
// reads its input per token. On those (rows in steps), 1% let GPTQ fit the 80-100
// calibration samples' few directions at the cost of the held-out ones; 10% keeps it
// nearer nearest rounding (held-out, harness: DINOv2-S CLS min 0.9972 -> 0.9981,
// all-MiniLM-L6 0.9993 / 0.9983 / NN 0.960 -> 0.9994 / 0.9985 / 0.977).
double gptq_damping(bool per_token);

// GPTQ for every planned MatMul/Gemm weight that a single quantized node reads, with
// the Gram matrices of their inputs (rows in quantization steps of `row_type` where every
// quantized reader takes the input per token: QuantizedNode::per_token) observed by
// `float_session` (on the float model the
// plan's graph is rewritten from: value names line up) over `samples`. Gram matrices of at most
// `max_gram_bytes` together (float sums) are kept at a time; more take further passes.
std::shared_ptr<const PreparedWeights> gptq_weights(const Session& float_session, const QuantizePlan& plan,
                                                    const CalibrationSource& source,
                                                    const std::vector<size_t>& samples, bool per_channel,
                                                    DType row_type, const std::function<void(size_t, size_t)>& progress,
                                                    GptqSummary& summary, size_t max_gram_bytes = size_t{256} << 20);

}  // namespace octet::quant
