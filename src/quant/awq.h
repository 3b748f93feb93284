// Activation-aware weight quantization (AWQ, Lin et al. 2023) for weight-only int4/int8:
// input channels that carry large activations matter more, so before rounding, weight row
// j (input channel j of every matmul reading one activation X) is multiplied by s_j and X
// divided by s_j (folded into X's producer, e.g. RMSNorm's weight, by smooth_fold.h, the
// machinery SmoothQuant uses). The product is unchanged in exact arithmetic; the salient
// rows get finer steps.
//
// Search, per group (all matmuls reading X share one s): s_j = mean|X_j|^alpha, normalized
// so max(s) * min(s) = 1, for alpha in 0, 0.1, .., 1; the alpha whose block-quantized
// outputs on the calibration rows ((X / s) . deq(Q(s W)), every reader of X) are closest
// to the float outputs X . W wins. alpha = 0 is plain RTN, so on those rows the result is
// never worse than RTN; when it wins the group is left unscaled.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "quant/channel_stats.h"
#include "quant/smoothquant.h"

namespace octet::quant {

struct AwqSearch {
  int bits = 4;
  int64_t block = 32;
  bool symmetric = true;
};

// One decision per group with kept rows (SmoothingDecision: smoothed, alpha, scale and the
// output error without / with it); groups whose readers are not plain MatMuls are skipped.
std::vector<SmoothingDecision> search_awq_scales(const Graph& graph, const std::vector<SmoothGroup>& groups,
                                                 const std::map<std::string, ChannelStatsObserver>& stats,
                                                 const AwqSearch& search);

}  // namespace octet::quant
