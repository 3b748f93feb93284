// Which nodes of a (level-1 cleaned) float graph get quantized, and which float tensors
// then need activation ranges from calibration.
//
//   Weight      MatMul with a constant 2-D B, Gemm with a constant B, Conv with a constant
//               W: int8 weights per output channel; the float data input is an activation.
//   Activation  MatMul with two float activation inputs (attention's Q.K^T and P.V).
//   Embedding   Gather (axis 0) on a constant 2-D float table: int8 rows.
//
// A constant means an initializer that is not also a graph input (an overridable default
// could change at run time). Nodes named in, or whose op type is in, options.exclude
// stay float; so do activation matmuls under --attention fp32 and embeddings when turned
// off. Every decision is recorded with its reason for the report. In static mode, a
// MatMul/Gemm named in options.per_token reads its input quantized per token at run time:
// it needs no calibrated range.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/quantize_options.h"

namespace octet::quant {

enum class QuantKind { Weight, Activation, Embedding };

struct QuantizedNode {
  Node* node = nullptr;
  QuantKind kind = QuantKind::Weight;
  int weight_input = -1;   // Weight/Embedding: the constant input's slot
  int weight_axis = 0;     // Weight/Embedding: the output-channel (row) axis of the constant
  std::vector<int> activation_inputs;  // slots whose float tensors get Q/DQ (static mode)
  bool per_token = false;  // Weight in static mode: input quantized per row at run time (options.per_token)
};

struct SkippedNode {
  const Node* node = nullptr;
  std::string reason;  // "excluded by --exclude MatMul", "weight is a graph input", ...
};

struct QuantizePlan {
  std::vector<QuantizedNode> nodes;  // in graph order
  std::vector<SkippedNode> skipped;  // matmul-like nodes left in float, and why
  // Float tensors that need calibrated ranges (static mode), in first-use order, no repeats.
  std::vector<Value*> activations;
};

QuantizePlan plan_quantization(Graph& graph, const QuantizeOptions& options);

const char* kind_name(QuantKind k);

// The activation inputs of the planned activation x activation matmuls that no Softmax
// wrote: attention's Q, K and V, not P.V's probabilities (whose range is fixed, [0, 1]).
std::set<std::string> attention_operands(const QuantizePlan& plan);

}  // namespace octet::quant
