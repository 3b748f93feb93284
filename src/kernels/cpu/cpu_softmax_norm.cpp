// Softmax, LayerNormalization and RMSNormalization (ai.onnx and octet domains), float32.
//
// Rows along the last axis are the fast path (transformers normalize the hidden or key
// axis). Softmax over an inner axis transposes blocks of columns into contiguous rows
// so the same row kernel runs on them.
#include <vector>

#include "kernels/cpu/simd_kernels.h"
#include "kernels/cpu/vec_ops.h"

namespace octet::cpu {
namespace {

int64_t product(const std::vector<int64_t>& shape, int64_t from, int64_t to) {
  int64_t p = 1;
  for (int64_t i = from; i < to; ++i) p *= shape[static_cast<size_t>(i)];
  return p;
}

// The axis in [0, rank), or -1 when it is out of range (the reference reports that).
int64_t resolve_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return -1;
  return axis < 0 ? axis + rank : axis;
}

// Columns per transposed block for an inner-axis softmax: 16 columns of a row share a
// cache line pair, and the block [16, n] stays in L1/L2 for usual n.
constexpr int64_t kColumnBlock = 16;

void softmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  // Before opset 13 the input is coerced to 2-D at `axis` (default 1): rows of
  // everything from axis on. From 13 the softmax runs along the one axis (default -1).
  const bool coerce_2d = ctx.node().opset() < 13;
  const int64_t axis = resolve_axis(ctx.node().attr_int("axis", coerce_2d ? 1 : -1), x.rank());
  if (x.dtype() != DType::Float32 || x.rank() == 0 || axis < 0) return run_reference(ctx);
  const std::vector<int64_t>& shape = x.shape();
  const int64_t outer = product(shape, 0, axis);
  const int64_t n = coerce_2d ? product(shape, axis, x.rank()) : shape[static_cast<size_t>(axis)];
  const int64_t inner = coerce_2d ? 1 : product(shape, axis + 1, x.rank());
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Float32, shape);
  if (x.numel() == 0) return;
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  const VecTable& t = vec_ops();

  if (inner == 1) {
    parallel_ranges(ctx, outer, x.numel(), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) t.softmax_row(px + r * n, py + r * n, n, 1.0f);
    });
    return;
  }
  // Work items: (outer index, block of kColumnBlock inner columns).
  const int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  parallel_ranges(ctx, outer * blocks, x.numel(), [&](int64_t begin, int64_t end) {
    std::vector<float> rows(static_cast<size_t>(kColumnBlock * n));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t o = item / blocks, c0 = (item % blocks) * kColumnBlock;
      const int64_t width = std::min(kColumnBlock, inner - c0);
      const float* src = px + o * n * inner + c0;
      float* dst = py + o * n * inner + c0;
      for (int64_t k = 0; k < n; ++k)
        for (int64_t c = 0; c < width; ++c) rows[static_cast<size_t>(c * n + k)] = src[k * inner + c];
      for (int64_t c = 0; c < width; ++c) t.softmax_row(&rows[static_cast<size_t>(c * n)], &rows[static_cast<size_t>(c * n)], n, 1.0f);
      for (int64_t k = 0; k < n; ++k)
        for (int64_t c = 0; c < width; ++c) dst[k * inner + c] = rows[static_cast<size_t>(c * n + k)];
    }
  });
}

// True when `p` (Scale or B) broadcast to X's shape is one row of `cols` repeated: its
// dims right-aligned against X are 1 before `axis` and X's own dims from `axis` on.
bool is_row_param(const Tensor* p, const std::vector<int64_t>& xshape, int64_t axis) {
  if (!p) return true;
  if (p->dtype() != DType::Float32 || p->rank() > static_cast<int64_t>(xshape.size())) return false;
  const int64_t offset = static_cast<int64_t>(xshape.size()) - p->rank();
  for (int64_t i = 0; i < p->rank(); ++i) {
    const int64_t xi = offset + i, d = p->shape()[static_cast<size_t>(i)];
    if (xi < axis ? d != 1 : d != xshape[static_cast<size_t>(xi)]) return false;
  }
  return true;
}

// Shared by LayerNormalization (center, optional bias) and RMSNormalization.
void norm_kernel(KernelContext& ctx, bool center) {
  const Tensor& x = ctx.input(0);
  const Tensor* scale = ctx.optional_input(1);
  const Tensor* bias = center ? ctx.optional_input(2) : nullptr;
  const int64_t axis = resolve_axis(ctx.node().attr_int("axis", -1), x.rank());
  if (x.dtype() != DType::Float32 || axis < 0 || !scale || !is_row_param(scale, x.shape(), axis) ||
      !is_row_param(bias, x.shape(), axis))
    return run_reference(ctx);
  const int64_t rows = product(x.shape(), 0, axis), cols = product(x.shape(), axis, x.rank());
  if (cols == 0) return run_reference(ctx);
  const float eps = ctx.node().attr_float("epsilon", 1e-5f);
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Float32, x.shape());
  const float* px = x.data<float>();
  const float* pg = scale->data<float>();
  const float* pb = bias ? bias->data<float>() : nullptr;
  float* py = y.mutable_data<float>();
  const VecTable& t = vec_ops();
  parallel_ranges(ctx, rows, x.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) t.norm_row(px + r * cols, py + r * cols, cols, pg, pb, eps, center);
  });
}

void layer_norm_kernel(KernelContext& ctx) { norm_kernel(ctx, true); }
void rms_norm_kernel(KernelContext& ctx) { norm_kernel(ctx, false); }

// Float32 statistics only (stash_type 1); the Mean and InvStdDev outputs of
// LayerNormalization are left to the reference kernel (nothing in a transformer reads them).
bool prepare_norm(const Node& node, std::unique_ptr<KernelState>& state) {
  if (node.attr_int("stash_type", 1) != 1) return false;
  if (node.op_type() == "LayerNormalization" && (node.output(1) || node.output(2))) return false;
  return prepare_float32(node, state);
}

}  // namespace

void register_cpu_softmax_norm(KernelRegistry& r) {
  r.add("", "Softmax", KernelDef{softmax_kernel, prepare_float32});
  r.add("", "LayerNormalization", KernelDef{layer_norm_kernel, prepare_norm});
  r.add("", "RMSNormalization", KernelDef{rms_norm_kernel, prepare_norm});
  r.add("octet", "RMSNormalization", KernelDef{rms_norm_kernel, prepare_norm});
}

}  // namespace octet::cpu
