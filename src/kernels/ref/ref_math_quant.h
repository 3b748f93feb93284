// Internal to the quantization reference family: reading quantized elements of any
// storage type, mapping an element to its scale/zero-point (per tensor, per axis,
// blocked), and the registration of the integer-matmul file.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels/kernel.h"
#include "kernels/ref/ref_math_broadcast.h"
#include "kernels/ref/ref_math_dtype.h"
#include "kernels/ref/ref_math_lowbit.h"

namespace octet::ref {

void register_quant_matmul(KernelRegistry& r);  // ref_quant_matmul.cpp

// Element i of an integer, packed 4/2-bit integer, small-float or float tensor, as a
// double (exact for all of these types except 64-bit integers beyond 2^53).
inline double element_as_double(const Tensor& t, int64_t i) {
  const uint8_t* p = t.raw();
  switch (t.dtype()) {
    case DType::Int4: case DType::UInt4: case DType::Int2: case DType::UInt2:
      return packed_int_value(t.dtype(), p, i);
    case DType::Float8E8M0: return e8m0_decode(p[i]);
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ:
      return minifloat_format(t.dtype())->decode(p[i]);
    case DType::Float4E2M1: return minifloat_format(t.dtype())->decode(get_nibble(p, i));
    default: break;
  }
  double v = 0;
  const bool ok = Dispatch<NumericBoolTypes>::run(t.dtype(), [&](auto tag) {
    using S = typename decltype(tag)::type;
    v = static_cast<double>(load(data_as<S>(t)[i]));
  });
  OCTET_ASSERT(ok, "element_as_double on ", t.describe());
  return v;
}

// Which scale (and zero point) applies to each element of a quantized tensor `x`:
// per tensor (scale has one element), per axis (1-D scale of length x.shape[axis]) or
// blocked (scale has x's rank, with ceil(x.shape[axis] / block_size) along `axis`).
class QuantGranularity {
 public:
  QuantGranularity(const KernelContext& ctx, const Shape& x, const Tensor& scale, int64_t axis,
                   int64_t block_size) {
    const Shape& s = scale.shape();
    if (scale.numel() == 1) return;  // per tensor (also a 1-element 1-D or blocked scale)
    const int64_t rank = static_cast<int64_t>(x.size());
    axis_ = normalize_axis(ctx, axis, rank, "quantization axis");
    dim_ = x[axis_];
    inner_ = product_of_dims(x, axis_ + 1, x.size());
    if (block_size == 0) {
      if (s.size() != 1 || s[0] != dim_)
        ctx.fail("per-axis scale must be 1-D of length ", dim_, " (input shape ", shape_to_string(x),
                 ", axis ", axis_, "), got shape ", shape_to_string(s));
      mode_ = Mode::PerAxis;
      return;
    }
    if (block_size < 0) ctx.fail("block_size must be positive, got ", block_size);
    bool ok = static_cast<int64_t>(s.size()) == rank;
    for (int64_t d = 0; ok && d < rank; ++d)
      ok = d == axis_ ? s[d] == (dim_ + block_size - 1) / block_size : s[d] == x[d];
    if (!ok)
      ctx.fail("blocked scale shape ", shape_to_string(s), " does not match input shape ",
               shape_to_string(x), " with axis ", axis_, " and block_size ", block_size);
    mode_ = Mode::Blocked;
    block_ = block_size;
    blocks_ = s[axis_];
  }

  // Index into the scale/zero-point tensor for element i of x.
  int64_t index(int64_t i) const {
    switch (mode_) {
      case Mode::PerTensor: return 0;
      case Mode::PerAxis: return (i / inner_) % dim_;
      case Mode::Blocked: {
        const int64_t c = (i / inner_) % dim_;
        const int64_t outer = i / (inner_ * dim_);
        return (outer * blocks_ + c / block_) * inner_ + i % inner_;
      }
    }
    return 0;
  }

 private:
  enum class Mode { PerTensor, PerAxis, Blocked };
  Mode mode_ = Mode::PerTensor;
  int64_t axis_ = 0, dim_ = 1, inner_ = 1, block_ = 1, blocks_ = 1;
};

// Saturation range of an integer quantized type.
inline bool quant_int_range(DType t, int64_t& lo, int64_t& hi) {
  switch (t) {
    case DType::UInt8: lo = 0; hi = 255; return true;
    case DType::Int8: lo = -128; hi = 127; return true;
    case DType::UInt16: lo = 0; hi = 65535; return true;
    case DType::Int16: lo = -32768; hi = 32767; return true;
    case DType::UInt4: lo = 0; hi = 15; return true;
    case DType::Int4: lo = -8; hi = 7; return true;
    case DType::UInt2: lo = 0; hi = 3; return true;
    case DType::Int2: lo = -2; hi = 1; return true;
    default: return false;
  }
}

}  // namespace octet::ref
