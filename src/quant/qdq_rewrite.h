// Writes the quantized graph (docs/quantization.md §1) for a plan: int8 weights with
// DequantizeLinear, Q/DQ pairs on activations (static), octet.QMatMul or
// DynamicQuantizeLinear/MatMulInteger (dynamic, per target), int8 embedding rows.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/quantize_options.h"
#include "quant/quantize_plan.h"

namespace octet::quant {

// One activation tensor's quantization: q = saturate(round(x / scale) + zero_point).
struct ActivationParams {
  float scale = 1;
  int32_t zero_point = 0;
  DType dtype = DType::UInt8;  // UInt8 or Int8
};
using ActivationTable = std::map<std::string, ActivationParams>;  // by value name

// An int8 weight: data, and its scale and zero point (per channel along `axis`, or one).
struct QuantizedWeight {
  Tensor data;        // int8, the float weight's shape
  Tensor scale;       // float32 [C] per channel, or a scalar
  Tensor zero_point;  // int8, scale's shape, all zero (symmetric)
};
// Symmetric int8 (quant_params.h: scale = max|w| / 127 per channel, a channel of zeros
// gets 1), every value rounded half to even into [-127, 127]. A NaN or inf weight is an
// error naming `name`.
QuantizedWeight quantize_weight(const Tensor& w, int axis, bool per_channel, const std::string& name);

// Weights already rounded elsewhere (GPTQ, gptq.h), by weight value name: the rewrite uses
// them instead of rounding to nearest. Same scales and layout as quantize_weight's.
using PreparedWeights = std::map<std::string, QuantizedWeight>;

// A node the rewrite quantized, and the value that carries its result before and after
// (the same name, except where a dynamic rewrite replaced the node by a new one).
struct RewrittenLayer {
  std::string node, op;
  QuantKind kind = QuantKind::Weight;
  std::string float_output;
  Value* quantized_output = nullptr;  // read its name after the patch applied
};

struct RewriteResult {
  int weights = 0, activation_pairs = 0, embeddings = 0, dynamic_matmuls = 0;
  std::vector<RewrittenLayer> layers;
  std::vector<SkippedNode> skipped;  // planned nodes the chosen form cannot express
};

// Rewrites `graph` in place. Static mode needs params for every plan.activations entry.
RewriteResult write_quantized_graph(Graph& graph, const QuantizePlan& plan, const ActivationTable& params,
                                    const QuantizeOptions& options, const PreparedWeights* prepared = nullptr);

}  // namespace octet::quant
