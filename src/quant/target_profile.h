// Export profiles: the op and type rules a quantized graph must meet for the runtime it
// targets (docs/quantization.md §1). `octet quantize` checks the graph it is about to
// write and refuses to write one that breaks its target's rules; `octet check --target`
// can reuse the same rules.
//
//   octet     anything octet runs (the octet domain included)
//   ort       standard ONNX domains only; Q/DQ zero points uint8/int8, scales float32
//             constants; MatMulInteger with uint8/int8 inputs
//   tensorrt  static symmetric int8 only: every QuantizeLinear/DequantizeLinear has a
//             constant float32 scale and a constant int8 zero point of all zeros (an absent
//             zero point means uint8, which TensorRT rejects); per-channel scales only on a
//             weight's output-channel axis; no DynamicQuantizeLinear, MatMulInteger,
//             ConvInteger, QLinearMatMul, QLinearConv or octet-domain ops
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "quant/quantize_options.h"

namespace octet::quant {

// Each problem is one line naming the node, its op and the rule broken. Empty: compliant.
std::vector<std::string> check_target_profile(const Graph& graph, Target target);

// Refuses option combinations a target cannot express (tensorrt + dynamic, tensorrt +
// uint8 activations), with the reason, before any work is done.
void check_target_options(const QuantizeOptions& options, bool activation_type_given);

}  // namespace octet::quant
