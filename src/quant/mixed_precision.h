// Accuracy-driven mixed precision (--max-drop X --metric cosine|top1|mse): which quantized
// layers to keep in float so that the end output stays within X of fp32.
//
// The search only sees an evaluation function (a set of layers kept float -> the metric's
// drop against fp32 on held-out samples), so it is tested apart from any model:
//   1. sensitivity: each layer quantized alone, everything else float; rank by the drop;
//   2. keep the most sensitive layers float, the fewest (bisecting the ranked prefix, as
//      the drop shrinks as layers go back to float) that meet the target;
//   3. prune: try each kept layer back in int8, least sensitive first, and leave it int8
//      when the target still holds. No single layer of the result can go back to int8.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "quant/quant_report.h"

namespace octet::quant {

enum class Metric { Cosine, Top1, Mse };
const char* metric_name(Metric m);
Metric parse_metric(const std::string& s);

// How far `fidelity` is from fp32 under `metric`: 1 - the smallest cosine, 1 - the smallest
// top-1 agreement (an error when no output looks like logits), or the largest mean squared
// error, over all outputs.
double metric_drop(const std::vector<OutputFidelity>& fidelity, Metric metric);

using DropFn = std::function<double(const std::set<std::string>& float_layers)>;

struct FloatLayer {
  std::string node;
  double drop_alone = 0;  // the drop with only this layer in int8
  std::string reason;
};

struct MixedPrecisionResult {
  double drop_all_int8 = 0, final_drop = 0;
  std::vector<FloatLayer> float_layers;  // most sensitive first
  std::vector<FloatLayer> ranking;       // every layer, most sensitive first
  size_t evaluations = 0;
  bool met = false;
};

// `layers`: every quantized layer, by node name. Calls `progress(done, total)` as it goes
// (total is an estimate until the end).
MixedPrecisionResult search_mixed_precision(const std::vector<std::string>& layers, const DropFn& drop,
                                            double max_drop,
                                            const std::function<void(size_t, size_t)>& progress = {});

}  // namespace octet::quant
