// The epilogue steps the octet fused ops share (ref_octet.cpp): each runs the ai.onnx
// reference kernel of the op it replaces, so a fused op rounds exactly as the unfused
// graph does.
#pragma once

#include <vector>

#include "kernels/kernel.h"

namespace octet::ref {

// Runs the ai.onnx reference kernel `op` on `inputs` under `node`'s name (errors name it);
// returns output 0.
Tensor run_onnx_kernel(const char* op, const Node& node, std::vector<const Tensor*> inputs);

// ONNX Gelu of `y`: approximate="tanh" when `tanh`, else "none" (erf).
Tensor gelu_epilogue(const Tensor& y, bool tanh);

}  // namespace octet::ref
