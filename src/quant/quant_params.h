// Scales and zero points from ranges (activations) and from weight values, with the
// conventions of docs/quantization.md section 1: activations uint8 asymmetric (default) or
// int8 symmetric, weights int8 symmetric per output channel.
//
// Real value r and quantized q relate as r = (q - zero_point) * scale (ONNX
// QuantizeLinear/DequantizeLinear). Two rules hold for every result:
//   - 0 is always exactly representable: the range is widened to include 0 before the
//     scale is computed, and the zero point is an integer in the type's range. Padding,
//     ReLU zeros and masked attention then quantize without error.
//   - scale is a positive normal float. An all-zero range (or channel) gets scale 1 and
//     zero point 0: any scale represents 0 exactly, and 1 keeps later divisions by the
//     scale finite. A range so narrow that its scale would underflow gets the smallest
//     normal float instead.
//
// (Not to be confused with octet::QuantParams in ir/types.h, the per-axis parameters a
// quantized tensor type carries; this is one tensor's computed result.)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "quant/ranges.h"

namespace octet::quant {

struct QuantParams {
  float scale = 1;
  int32_t zero_point = 0;
  DType dtype = DType::UInt8;
};

// UInt8: asymmetric over [min(lo, 0), max(hi, 0)]: scale = (hi - lo) / 255,
//        zero_point = round_half_to_even(-lo / scale) clamped to [0, 255].
// Int8:  symmetric: scale = max(|lo|, |hi|) / 127, zero_point = 0 (-128 is never used, so
//        the grid is symmetric around 0).
// Any other type, or a range that is not finite with lo <= hi, is an error.
QuantParams activation_params(Range range, DType type);

// What octet.QMatMul's per-token rows quantize over at run time: the row's [min(x, 0),
// max(x, 0)] (k values), and the width its 8-bit step divides, hi - lo over 255 steps for
// uint8, max(-lo, hi) over 127 for int8. Shared by the models of that rounding (the
// smoothing search, GPTQ's row weighting).
Range per_token_row_range(const float* x, size_t k);
float per_token_row_span(Range row, DType type);

// Weights quantized per channel along `axis` of `shape` (negative counts from the end).
struct ChannelParams {
  std::vector<float> scales;         // one per channel
  std::vector<int32_t> zero_points;  // one per channel (all 0 when symmetric)
  DType dtype = DType::Int8;
  int64_t axis = 0;                  // normalized (non-negative)
};

// symmetric (default): Int8 only; scale = max|w| over the channel / 127, zero point 0.
// Asymmetric: Int8 or UInt8 over the channel's [min(w, 0), max(w, 0)], all levels used
// (zero point round(qmin - lo / scale), clamped). A channel of zeros gets scale 1.
// NaN or inf in `w` is an error naming `name` and the flat index.
ChannelParams weight_params_per_channel(const float* w, const std::vector<int64_t>& shape, int64_t axis,
                                        DType type = DType::Int8, bool symmetric = true,
                                        const std::string& name = "");
// The symmetric int8 scale for values of largest magnitude `abs_max` (>= 0): abs_max / 127,
// 1 for 0, never below the smallest normal float. What the rules above give a channel.
float symmetric_int8_scale(double abs_max);
// The same rule over the whole tensor (--per-tensor).
QuantParams weight_params_per_tensor(const float* w, size_t n, DType type = DType::Int8, bool symmetric = true,
                                     const std::string& name = "");

}  // namespace octet::quant
