// Resize's attributes and argument layout per opset, read and checked in one place for
// the inference rule (ops/vision_ops.cpp) and the reference kernel
// (kernels/ref/ref_vision_resize.cpp), so both accept the same nodes and word the same
// errors.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace octet {

struct ResizeAttrs {
  std::string mode;                             // nearest | linear | cubic
  std::string coordinate_transformation_mode;   // half_pixel, asymmetric, ...
  std::string nearest_mode;                     // round_prefer_floor | round_prefer_ceil | floor | ceil
  float cubic_coeff_a = -0.75f;
  bool exclude_outside = false;
  float extrapolation_value = 0.0f;
  bool antialias = false;                       // opset 18+
  std::vector<int64_t> axes;                    // opset 18+; empty: every axis
  std::string keep_aspect_ratio_policy = "stretch";  // opset 18+
};

// Reads and validates the node's attributes for `opset`; `fail` (which must not return)
// gets a message naming the attribute and what is wrong.
ResizeAttrs read_resize_attrs(const Node& node, int64_t opset, const std::function<void(const std::string&)>& fail);

// Input positions at this opset; -1 when the opset has no such input.
struct ResizeInputs {
  int roi = -1, scales = -1, sizes = -1;
};
ResizeInputs resize_inputs(int64_t opset);

// The output size of an axis of `in` elements resized by `scale`: floor(in * scale),
// computed in double as the ONNX reference does.
int64_t resize_scaled_size(int64_t in, float scale);

// keep_aspect_ratio_policy not_larger / not_smaller: one scale for every resized axis
// (the smallest / largest of sizes[i] / in[i]); each size round(scale * in[i]), halves up,
// or -1 where that is beyond 9e15 (callers report it). Every in[i] must be positive.
double resize_keep_aspect_scale(const std::vector<int64_t>& in, const std::vector<int64_t>& sizes,
                                const std::string& policy);
std::vector<int64_t> resize_keep_aspect_sizes(const std::vector<int64_t>& in, const std::vector<int64_t>& sizes,
                                              const std::string& policy);

}  // namespace octet
