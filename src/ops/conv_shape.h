// Output spatial dims of an ONNX convolution (Conv, ConvInteger, QLinearConv) over
// symbolic dims. Self-contained: only ir/dim.h; problems come back as text so that each
// caller words its own error.
//
//   effective kernel  k' = (k - 1) * dilation + 1
//   NOTSET:           out = floor((in + pad_begin + pad_end - k') / stride) + 1
//   VALID:            out = floor((in - k') / stride) + 1
//   SAME_UPPER/LOWER: out = ceil(in / stride)
//
// Dims stay symbolic where the input is: floor((seq - 1) / 2) + 1 is an opaque floordiv
// atom that evaluates once `seq` is bound.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/dim.h"

namespace octet {

struct ConvGeometry {
  std::vector<int64_t> strides;    // empty: all 1
  std::vector<int64_t> dilations;  // empty: all 1
  std::vector<int64_t> pads;       // empty: all 0; else [x1_begin, x2_begin, ..., x1_end, ...]
  std::string auto_pad = "NOTSET";
};

// The spatial output dims for `input` and `kernel` spatial dims (same count), or nullopt
// with a reason in *error.
inline std::optional<DimVector> conv_output_spatial(const DimVector& input, const DimVector& kernel,
                                                    const ConvGeometry& g, std::string* error = nullptr) {
  auto failed = [&](const std::string& why) -> std::optional<DimVector> {
    if (error) *error = why;
    return std::nullopt;
  };
  const size_t n = input.size();
  if (kernel.size() != n)
    return failed("kernel has " + std::to_string(kernel.size()) + " spatial dims, input has " +
                  std::to_string(n));
  auto check_len = [&](const std::vector<int64_t>& v, size_t want, const char* name) {
    return v.empty() || v.size() == want ? std::string()
                                         : std::string(name) + " has " + std::to_string(v.size()) +
                                               " values, expected " + std::to_string(want);
  };
  for (const std::string& why : {check_len(g.strides, n, "strides"), check_len(g.dilations, n, "dilations"),
                                 check_len(g.pads, 2 * n, "pads")})
    if (!why.empty()) return failed(why);
  const bool same = g.auto_pad == "SAME_UPPER" || g.auto_pad == "SAME_LOWER";
  if (!same && g.auto_pad != "NOTSET" && g.auto_pad != "VALID")
    return failed("auto_pad '" + g.auto_pad + "' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER");

  DimVector out;
  for (size_t i = 0; i < n; ++i) {
    int64_t s = g.strides.empty() ? 1 : g.strides[i];
    int64_t d = g.dilations.empty() ? 1 : g.dilations[i];
    if (s <= 0 || d <= 0) return failed("strides and dilations must be positive");
    if (same) {
      out.push_back(Dim::floor_div(input[i] + (s - 1), s));
      continue;
    }
    int64_t pb = 0, pe = 0;
    if (g.auto_pad == "NOTSET" && !g.pads.empty()) {
      pb = g.pads[i];
      pe = g.pads[i + n];
    }
    if (pb < 0 || pe < 0) return failed("pads must be non-negative");
    Dim eff = (kernel[i] - 1) * d + 1;
    Dim o = Dim::floor_div(input[i] + (pb + pe) - eff, s) + 1;
    if (auto c = o.constant(); c && *c <= 0)
      return failed("spatial dim " + std::to_string(i) + ": input " + input[i].to_string() +
                    " is smaller than the dilated kernel " + eff.to_string() + " after padding");
    out.push_back(o);
  }
  return out;
}

}  // namespace octet
