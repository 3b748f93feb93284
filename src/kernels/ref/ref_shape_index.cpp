// Reference kernels that select elements: Slice, Gather, GatherElements, GatherND. Every
// index is range-checked before any element is read: a bad index is an error naming the node.
#include <algorithm>

#include "kernels/kernel.h"
#include "kernels/ref/ref_shape_common.h"

namespace octet {
namespace ref_shape {

// Slice: starts/ends/axes are attributes before opset 10, inputs from 10 on (with steps).
// Per the spec: negative starts/ends count from the back (+dim); then, for a positive
// step, start and end are clamped to [0, dim]; for a negative step, start to [0, dim-1]
// and end to [-1, dim-1]. The count along an axis is max(0, ceil((end - start) / step)).
StridedView slice_view(const KernelContext& ctx, const Tensor& x) {
  const Node& node = ctx.node();
  std::vector<int64_t> starts, ends, axes, steps;
  bool has_axes = false;
  if (node.opset() >= 10 || ctx.has_input(1)) {
    starts = read_ints(ctx, ctx.input(1), "starts input");
    ends = read_ints(ctx, ctx.input(2), "ends input");
    if ((has_axes = ctx.has_input(3))) axes = read_ints(ctx, ctx.input(3), "axes input");
    if (ctx.has_input(4)) steps = read_ints(ctx, ctx.input(4), "steps input");
  } else {
    if (!node.has_attr("starts") || !node.has_attr("ends")) ctx.fail("attributes 'starts' and 'ends' are required");
    starts = node.attr_ints("starts");
    ends = node.attr_ints("ends");
    if ((has_axes = node.has_attr("axes"))) axes = node.attr_ints("axes");
  }
  const size_t k = starts.size();
  if (!has_axes)
    for (size_t i = 0; i < k; ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(k, 1);
  if (ends.size() != k || axes.size() != k || steps.size() != k)
    ctx.fail("starts, ends, axes and steps have different lengths (", k, ", ", ends.size(), ", ",
             axes.size(), ", ", steps.size(), ")");

  const int64_t rank = x.rank();
  std::vector<int64_t> begin(rank, 0), step(rank, 1), count = x.shape();
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < k; ++i) {
    const int64_t a = normalize_axis(ctx, axes[i], rank);
    if (seen[a]) ctx.fail("axes ", shape_to_string(axes), " repeat axis ", a);
    seen[a] = true;
    if (steps[i] == 0) ctx.fail("step for axis ", a, " is 0");
    const int64_t dim = x.shape()[a];
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t n = 0;
    if (steps[i] > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      if (e > s) n = (e - s - 1) / steps[i] + 1;
    } else if (dim > 0) {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      // The step's magnitude in unsigned arithmetic: -INT64_MIN does not fit an int64.
      const uint64_t magnitude = 0 - static_cast<uint64_t>(steps[i]);
      if (s > e) n = static_cast<int64_t>(static_cast<uint64_t>(s - e - 1) / magnitude) + 1;
    }
    begin[a] = n > 0 ? s : 0;
    step[a] = steps[i];
    count[a] = n;
  }
  std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  StridedView view{count, std::vector<int64_t>(rank), 0};
  for (int64_t d = 0; d < rank; ++d) {
    view.base += begin[d] * in_strides[d];
    // A huge step (INT64_MAX) is never taken when the count is 1; skip its product.
    view.strides[d] = count[d] > 1 ? step[d] * in_strides[d] : 0;
  }
  return view;
}

namespace {

void slice_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const StridedView view = slice_view(ctx, x);
  ElementWriter out(x.dtype(), view.shape);
  copy_view(out, 0, x, view.base, view.shape, view.strides);
  ctx.set_output(0, out.finish());
}

}  // namespace

std::vector<int64_t> index_values(const KernelContext& ctx, const Tensor& indices) {
  if (!dtype_is_integer(indices.dtype()) || dtype_bits(indices.dtype()) < 8)
    ctx.fail("indices must be an integer tensor, got ", indices.describe());
  return indices.to_int64_vector();
}

int64_t checked_index(const KernelContext& ctx, int64_t i, int64_t dim, int64_t axis) {
  if (i < -dim || i >= dim)
    ctx.fail("index ", i, " is out of range for axis ", axis, " of size ", dim, " (valid: [", -dim, ", ",
             dim - 1, "])");
  return i < 0 ? i + dim : i;
}

namespace {

// Every index along one axis, normalized to [0, dim).
std::vector<int64_t> checked_indices(const KernelContext& ctx, const Tensor& indices, int64_t dim,
                                     int64_t axis) {
  std::vector<int64_t> idx = index_values(ctx, indices);
  for (int64_t& i : idx) i = checked_index(ctx, i, dim, axis);
  return idx;
}

// Gather: out = data[:axis] + indices.shape + data[axis+1:]; each index selects a
// contiguous block of prod(data[axis+1:]) elements.
void gather_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  if (data.rank() == 0) ctx.fail("data must have rank >= 1, got ", data.describe());
  const int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", 0), data.rank());
  const int64_t dim = data.shape()[axis];
  std::vector<int64_t> idx = checked_indices(ctx, indices, dim, axis);
  std::vector<int64_t> shape(data.shape().begin(), data.shape().begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= data.shape()[d];
  for (int64_t d = axis + 1; d < data.rank(); ++d) inner *= data.shape()[d];
  const int64_t n = static_cast<int64_t>(idx.size());
  ElementWriter out(data.dtype(), shape);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j) out.copy(data, (o * dim + idx[j]) * inner, 1, (o * n + j) * inner, inner);
  ctx.set_output(0, out.finish());
}

// GatherElements: out[i0..i_r] = data[i0.., indices[i0..i_r] (at axis), ..i_r]. The output
// has the indices' shape; outside `axis` the indices' dims must not exceed the data's
// (as onnxruntime checks), so every read stays in bounds.
void gather_elements_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int64_t rank = data.rank();
  if (rank == 0) ctx.fail("data must have rank >= 1, got ", data.describe());
  if (indices.rank() != rank)
    ctx.fail("indices ", indices.describe(), " must have the rank of data ", data.describe());
  const int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.shape()[d] > data.shape()[d])
      ctx.fail("indices ", indices.describe(), " exceed data ", data.describe(), " in dim ", d);
  std::vector<int64_t> idx = checked_indices(ctx, indices, data.shape()[axis], axis);
  const std::vector<int64_t> strides = contiguous_strides(data.shape());
  ElementWriter out(data.dtype(), indices.shape());
  std::vector<int64_t> pos(rank, 0);
  for (int64_t i = 0; i < static_cast<int64_t>(idx.size()); ++i) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) src += (d == axis ? idx[i] : pos[d]) * strides[d];
    out.copy(data, src, 1, i, 1);
    for (int64_t d = rank - 1; d >= 0 && ++pos[d] == indices.shape()[d]; --d) pos[d] = 0;
  }
  ctx.set_output(0, out.finish());
}

// GatherND: with b = batch_dims and k = indices.shape[-1], each k-tuple of indices
// addresses a slice data[b0.., i_0, .., i_{k-1}, :] within its batch (the first b dims,
// shared by data and indices); out = indices.shape[:-1] + data.shape[b + k:].
void gather_nd_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const int64_t r = data.rank(), q = indices.rank();
  const int64_t b = ctx.node().attr_int("batch_dims", 0);
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1, got ", data.describe(), " and ", indices.describe());
  if (b < 0 || b >= std::min(r, q))
    ctx.fail("batch_dims ", b, " must be in [0, ", std::min(r, q), ") for data ", data.describe(), " and indices ",
             indices.describe());
  for (int64_t d = 0; d < b; ++d)
    if (data.shape()[d] != indices.shape()[d])
      ctx.fail("batch dim ", d, " differs: data ", data.describe(), ", indices ", indices.describe());
  const int64_t k = indices.shape().back();
  if (k > r - b)
    ctx.fail("indices ", indices.describe(), " address ", k, " dims after ", b, " batch dims, but data ",
             data.describe(), " has only ", r - b);
  std::vector<int64_t> shape(indices.shape().begin(), indices.shape().end() - 1);
  shape.insert(shape.end(), data.shape().begin() + b + k, data.shape().end());
  checked_numel(ctx, shape);
  ElementWriter out(data.dtype(), shape);
  const std::vector<int64_t> idx = index_values(ctx, indices);
  const std::vector<int64_t> strides = contiguous_strides(data.shape());
  int64_t slice = 1, tuples = 1, per_batch = 1, batch_stride = 1;
  for (int64_t d = b + k; d < r; ++d) slice *= data.shape()[d];
  for (int64_t d = b; d < r; ++d) batch_stride *= data.shape()[d];
  for (int64_t d = 0; d < q - 1; ++d) tuples *= indices.shape()[d];
  for (int64_t d = b; d < q - 1; ++d) per_batch *= indices.shape()[d];
  // With k = 0 there is no index to check, so an empty output needs no pass over the
  // (possibly huge, all empty) tuple dims.
  if (k == 0 && out.numel() == 0) tuples = 0;
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t src = t / per_batch * batch_stride;
    for (int64_t d = 0; d < k; ++d) src += checked_index(ctx, idx[t * k + d], data.shape()[b + d], b + d) * strides[b + d];
    out.copy(data, src, 1, t * slice, slice);
  }
  ctx.set_output(0, out.finish());
}

}  // namespace

void register_index(KernelRegistry& r) {
  r.add("", "Slice", slice_kernel);
  r.add("", "Gather", gather_kernel);
  r.add("", "GatherElements", gather_elements_kernel);
  r.add("", "GatherND", gather_nd_kernel);
}

}  // namespace ref_shape
}  // namespace octet
