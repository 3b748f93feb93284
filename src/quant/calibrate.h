// Static calibration: runs the float model in octet's own runtime over calibration
// samples, watching the tensors the plan quantizes, and turns each tensor's statistics
// into activation quantization parameters. Memory stays fixed as samples grow: each
// tensor keeps one observer (min/max, or a fixed-size histogram), never the data.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/calibration_data.h"
#include "quant/qdq_rewrite.h"
#include "quant/quantize_options.h"
#include "runtime/session.h"

namespace octet::quant {

// Called after each sample: (samples done, samples total).
using ProgressFn = std::function<void(size_t done, size_t total)>;

struct CalibratedTensor {
  float min = 0, max = 0;  // what the samples showed
  float lo = 0, hi = 0;    // the range the method chose
  ActivationParams params;
};

struct CalibrationResult {
  std::map<std::string, CalibratedTensor> tensors;  // by value name
  size_t samples = 0;
  ActivationTable table() const;
};

// `graph` is the float graph; `tensors` names the values to calibrate (plan.activations).
CalibrationResult calibrate(std::shared_ptr<const Graph> graph, const std::vector<std::string>& tensors,
                            const CalibrationSource& source, const std::vector<size_t>& samples,
                            const QuantizeOptions& options, const ProgressFn& progress = {});

// The same on a session the caller built (SessionOptions::pack_weights = false keeps a
// graph the caller still rewrites from being copied into packed weights). `also`, when
// set, sees every value of every run too: another statistic gathered in the same pass
// (the quantizer's per-channel statistics for SmoothQuant) instead of a second pass.
CalibrationResult calibrate(const Session& session, const std::vector<std::string>& tensors,
                            const CalibrationSource& source, const std::vector<size_t>& samples,
                            const QuantizeOptions& options, const ProgressFn& progress = {},
                            const ValueObserver& also = {});

// Attention's operands (Q, K and V: attention_operands(plan)) keep their whole observed range
// under every method, as minmax has it. Entropy, percentile and mse trade a tensor's rare
// extremes for finer steps, which suits a linear layer's input. In attention those extremes
// are what matters: softmax gives its largest logits (Q.K^T's extremes) most of each row's
// weight, and a clipped V row is carried with its full weight to every query attending to
// it. Clipping them cost DINOv2-S's held-out CLS cosine min 0.9981 (minmax) -> 0.9965
// (entropy narrowing Q/K by 1-11%), then -> 0.9977 (entropy narrowing V). In the default
// per-token form these are the only calibrated tensors, so every method gives minmax's file.
void keep_observed_range(CalibrationResult& result, const std::set<std::string>& names, const QuantizeOptions& options);

// A progress bar on stderr ("calibrating [=====     ] 12/32"), redrawn in place on a
// terminal and printed at 10% steps otherwise (CI logs).
ProgressFn stderr_progress(const std::string& label);

}  // namespace octet::quant
