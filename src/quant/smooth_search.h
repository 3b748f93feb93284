// The error estimate behind --smoothquant auto (smoothquant.h), built once per group and
// then asked about each candidate scale.
//
// For a group (the matmuls reading one activation X) and its kept calibration rows of X,
// error(s) is the squared error of the group's outputs when X / s is quantized per tensor
// (range from the per-channel min/max, i.e. over all samples) and s * W per output channel
// (or per tensor), against the float product X.W, summed over the group's weights. When
// the group reads X per token (SmoothGroup::per_token), X / s is quantized per row instead,
// as octet.QMatMul does at run time (uint8: the row's range with 0, (max - min) / 255;
// int8: max|x| / 127): smoothing then only pays for the weights' rounding, which the
// search must see, or it smooths where per-row inputs need no help.
//
// Why a class: the search asks 12 scales per group. The float products X.W do not depend
// on s, so they are computed once here instead of once per candidate; and the quantized
// weight s * W is never materialized whole: each candidate walks W in column blocks (the
// block's scales, its quantized copy, its product and its error), the blocks spread over
// the cores. On SmolLM2-135M this took the search from ~50 s and a 3x copy of the 49k-wide
// LM head per candidate to a few seconds and a block per core.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "quant/channel_stats.h"
#include "quant/quantize_options.h"
#include "quant/smoothquant.h"

namespace octet::quant {

class SmoothingSearch {
 public:
  // Reads the group's weights from `graph`, which must outlive the search and keep them.
  SmoothingSearch(const Graph& graph, const SmoothGroup& group, const ChannelStatsObserver& stats,
                  const QuantizeOptions& options);

  // Kept rows with only finite values: 0 means error() has nothing to measure (it is 0).
  int64_t rows() const { return rows_; }
  // The estimate for per-channel scales s (all > 0); empty means no smoothing (s = 1).
  double error(const std::vector<float>& scale) const;

 private:
  struct Weight {
    const float* data = nullptr;  // as stored: [K, N], or [N, K] when transposed
    int64_t n = 0;
    bool transposed = false;
    std::vector<float> exact;     // X.W over the kept rows, [rows, N]
  };
  double weight_error(const Weight& w, const std::vector<float>& s, const std::vector<float>& xq) const;

  // X / s rounded to the activation grid and back, [rows, K].
  std::vector<float> quantized_input(const std::vector<float>& s) const;

  const ChannelStatsObserver& stats_;
  QuantizeOptions options_;
  bool per_token_ = false;
  int64_t k_ = 0, rows_ = 0;
  std::vector<float> x_;  // the kept finite rows, [rows, K]
  std::vector<Weight> weights_;
};

}  // namespace octet::quant
