#include "quant/quant_params.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "core/tensor.h"
#include "octet/error.h"

namespace octet::quant {

namespace {

std::string weight_label(const std::string& name) { return name.empty() ? "weight" : "weight '" + name + "'"; }

// qmin/qmax of the integer types quantization writes.
void type_limits(DType type, int32_t& qmin, int32_t& qmax) {
  if (type == DType::UInt8) qmin = 0, qmax = 255;
  else if (type == DType::Int8) qmin = -128, qmax = 127;
  else fail("quantization to ", dtype_name(type), " is not supported (int8 or uint8)");
}

// A computed scale as a positive normal float (see the header for why).
float safe_scale(double width, double steps) {
  if (width == 0) return 1.0f;
  const double s = width / steps;
  return s < FLT_MIN ? FLT_MIN : static_cast<float>(s);
}

// The parameters for [lo, hi] (finite, lo <= hi) once 0 has been added to it.
QuantParams params_for(double lo, double hi, DType type, bool symmetric) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  int32_t qmin = 0, qmax = 0;
  type_limits(type, qmin, qmax);
  if (symmetric) {
    if (type != DType::Int8) fail("symmetric quantization is int8 only (zero point 0), got ", dtype_name(type));
    return {safe_scale(std::max(-lo, hi), 127), 0, type};
  }
  const float scale = safe_scale(hi - lo, qmax - qmin);
  // round half to even, as ONNX DynamicQuantizeLinear rounds its zero point
  const double zp = std::nearbyint(qmin - lo / static_cast<double>(scale));
  return {scale, static_cast<int32_t>(std::clamp<double>(zp, qmin, qmax)), type};
}

void check_finite(const float* w, size_t n, const std::string& name) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(w[i])) fail(weight_label(name), ": value ", w[i], " at flat index ", i, " is not finite");
}

}  // namespace

float symmetric_int8_scale(double abs_max) { return safe_scale(abs_max, 127); }

Range per_token_row_range(const float* x, size_t k) {
  Range r;  // starts at [0, 0]: zero is always inside
  for (size_t j = 0; j < k; ++j) r.lo = std::min(r.lo, x[j]), r.hi = std::max(r.hi, x[j]);
  return r;
}

float per_token_row_span(Range row, DType type) {
  return type == DType::Int8 ? std::max(-row.lo, row.hi) : row.hi - row.lo;
}

QuantParams activation_params(Range range, DType type) {
  if (!std::isfinite(range.lo) || !std::isfinite(range.hi) || range.lo > range.hi)
    fail("activation range [", range.lo, ", ", range.hi, "] is not a finite interval");
  if (type != DType::UInt8 && type != DType::Int8)
    fail("activations quantize to uint8 (asymmetric) or int8 (symmetric), not ", dtype_name(type));
  return params_for(range.lo, range.hi, type, type == DType::Int8);
}

ChannelParams weight_params_per_channel(const float* w, const std::vector<int64_t>& shape, int64_t axis, DType type,
                                        bool symmetric, const std::string& name) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (axis < -rank || axis >= rank)
    fail(weight_label(name), ": channel axis ", axis, " is out of range for shape ", shape_to_string(shape));
  if (axis < 0) axis += rank;
  const size_t n = static_cast<size_t>(shape_numel(shape));
  check_finite(w, n, name);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= shape[d];
  const int64_t channels = shape[axis];
  ChannelParams out;
  out.dtype = type;
  out.axis = axis;
  // Walked in memory order with one running range per channel: a [K, N] MatMul weight
  // quantized along N (axis 1) read column by column touched a new cache line per value,
  // which on a 49k-column LM head cost more than the rest of the rewrite.
  std::vector<float> lo(static_cast<size_t>(channels), 0.0f), hi(static_cast<size_t>(channels), 0.0f);  // 0 is in every range anyway
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c) {
      const float* row = w + (o * channels + c) * inner;
      float l = lo[static_cast<size_t>(c)], h = hi[static_cast<size_t>(c)];
      for (int64_t i = 0; i < inner; ++i) l = std::min(l, row[i]), h = std::max(h, row[i]);
      lo[static_cast<size_t>(c)] = l, hi[static_cast<size_t>(c)] = h;
    }
  for (int64_t c = 0; c < channels; ++c) {
    const QuantParams p = params_for(lo[static_cast<size_t>(c)], hi[static_cast<size_t>(c)], type, symmetric);
    out.scales.push_back(p.scale);
    out.zero_points.push_back(p.zero_point);
  }
  return out;
}

QuantParams weight_params_per_tensor(const float* w, size_t n, DType type, bool symmetric, const std::string& name) {
  check_finite(w, n, name);
  double lo = 0, hi = 0;
  for (size_t i = 0; i < n; ++i) lo = std::min<double>(lo, w[i]), hi = std::max<double>(hi, w[i]);
  return params_for(lo, hi, type, symmetric);
}

}  // namespace octet::quant
