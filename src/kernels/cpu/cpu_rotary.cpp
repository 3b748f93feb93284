// Optimized float32 octet.ApplyRotary (semantics: src/ops/octet_ops.cpp; oracle: the
// reference kernel in kernels/ref/ref_octet.cpp, which runs the seven ONNX ops it replaces).
//
// Y = X * cos + rotate_half(X) * sin over rows of D = X's last dim, with cos and sin rows
// found by broadcast strides: per row, the first half is x1 * c - x2 * s and the second
// x2 * c + x1 * s. Each product and the sum are rounded to float32 as the separate Mul,
// Mul and Add are (the build does not contract them into FMAs), so the result is the
// reference's bit for bit. Cases off this path (other dtypes, a cos/sin whose last dim is
// broadcast) go to the reference kernel.
#include <vector>

#include "kernels/cpu/simd_kernels.h"

namespace octet::cpu {
namespace {

// Element strides of a cos/sin operand over X's leading dims (0 where it broadcasts). Its
// last dim must be X's, read contiguously; false when it is not, or it does not broadcast.
bool row_strides(const Tensor& c, const std::vector<int64_t>& xs, std::vector<int64_t>& strides) {
  const size_t rank = xs.size();
  const size_t crank = static_cast<size_t>(c.rank());
  if (crank == 0 || crank > rank || c.shape().back() != xs.back()) return false;
  strides.assign(rank - 1, 0);
  int64_t running = xs.back();
  for (size_t k = 1; k < crank; ++k) {
    const int64_t cd = c.shape()[crank - 1 - k];
    const size_t xi = rank - 1 - k;
    if (cd != 1 && cd != xs[xi]) return false;
    strides[xi] = cd == 1 ? 0 : running;
    running *= cd;
  }
  return true;
}

void rotate_row(const float* x, const float* c, const float* s, float* y, int64_t h) {
#pragma omp simd
  for (int64_t j = 0; j < h; ++j) {
    const float a = x[j] * c[j];
    const float b = -x[j + h] * s[j];
    y[j] = a + b;
  }
#pragma omp simd
  for (int64_t j = 0; j < h; ++j) {
    const float a = x[j + h] * c[j + h];
    const float b = x[j] * s[j + h];
    y[j + h] = a + b;
  }
}

void apply_rotary_f32(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& cos = ctx.input(1);
  const Tensor& sin = ctx.input(2);
  if (x.dtype() != DType::Float32 || cos.dtype() != DType::Float32 || sin.dtype() != DType::Float32 ||
      x.rank() < 1 || x.shape().back() % 2 != 0 || x.shape().back() == 0)
    return run_reference(ctx);
  std::vector<int64_t> cos_strides, sin_strides;
  if (!row_strides(cos, x.shape(), cos_strides) || !row_strides(sin, x.shape(), sin_strides))
    return run_reference(ctx);
  const std::vector<int64_t>& shape = x.shape();
  const int64_t d = shape.back(), rows = x.numel() / d;
  float* y = ctx.allocate_output_uninitialized(0, DType::Float32, shape).mutable_data<float>();
  const float* px = x.data<float>();
  const float* pc = cos.data<float>();
  const float* ps = sin.data<float>();
  const int64_t lead = static_cast<int64_t>(shape.size()) - 1;
  parallel_ranges(ctx, rows, x.numel(), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t co = 0, so = 0;
      for (int64_t i = lead - 1, rest = r; i >= 0; --i) {
        const int64_t coord = rest % shape[i];
        rest /= shape[i];
        co += coord * cos_strides[i];
        so += coord * sin_strides[i];
      }
      rotate_row(px + r * d, pc + co, ps + so, y + r * d, d / 2);
    }
  });
}

}  // namespace

void register_cpu_rotary(KernelRegistry& r) {
  r.add("octet", "ApplyRotary", KernelDef{apply_rotary_f32, prepare_float32});
}

}  // namespace octet::cpu
