// Reference kernels that join, split or repeat tensors: Concat, Split, Expand, Tile.
#include "kernels/kernel.h"
#include "kernels/ref/ref_shape_common.h"

namespace octet {
namespace ref_shape {
namespace {

int64_t product(const std::vector<int64_t>& shape, int64_t begin, int64_t end) {
  int64_t p = 1;
  for (int64_t i = begin; i < end; ++i) p *= shape[i];
  return p;
}

// Concat: equal ranks and dtypes; every dim but `axis` must match. Concat-1 defaulted
// axis to 1; from opset 4 it is required.
void concat_kernel(KernelContext& ctx) {
  if (ctx.num_inputs() == 0) ctx.fail("needs at least one input");
  const Tensor& first = ctx.input(0);
  const int64_t rank = first.rank();
  if (rank == 0) ctx.fail("cannot concatenate scalars (", first.describe(), ")");
  const Node& node = ctx.node();
  if (node.opset() >= 4 && !node.has_attr("axis")) ctx.fail("attribute 'axis' is required");
  const int64_t axis = normalize_axis(ctx, node.attr_int("axis", 1), rank);
  std::vector<int64_t> shape = first.shape();
  shape[axis] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    bool same = t.dtype() == first.dtype() && t.rank() == rank;
    for (int64_t d = 0; same && d < rank; ++d) same = d == axis || t.shape()[d] == first.shape()[d];
    if (!same)
      ctx.fail("input ", i, " ", t.describe(), " does not match input 0 ", first.describe(),
               " outside axis ", axis);
    shape[axis] += t.shape()[axis];
  }
  const int64_t outer = product(shape, 0, axis), inner = product(shape, axis + 1, rank);
  ElementWriter out(first.dtype(), shape);
  int64_t offset = 0;  // along axis
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& t = ctx.input(i);
    const int64_t block = t.shape()[axis] * inner;
    for (int64_t o = 0; o < outer; ++o)
      out.copy(t, o * block, 1, (o * shape[axis] + offset) * inner, block);
    offset += t.shape()[axis];
  }
  ctx.set_output(0, out.finish());
}

}  // namespace

// Split sizes: the `split` attribute before opset 13, the optional `split` input from 13;
// without them, equal parts over the node's outputs (num_outputs attribute from 18). As in
// the ONNX reference, a size that does not divide evenly gives ceil-sized parts and a
// smaller last part; before opset 18 the spec requires an even split.
std::vector<int64_t> split_sizes(const KernelContext& ctx, const Tensor& x, int64_t axis) {
  const Node& node = ctx.node();
  const int64_t dim = x.shape()[axis];
  const int64_t parts = static_cast<int64_t>(ctx.num_outputs());
  std::vector<int64_t> sizes;
  if (node.opset() >= 13 || ctx.has_input(1)) {
    if (ctx.has_input(1)) sizes = read_ints(ctx, ctx.input(1), "split input");
  } else {
    sizes = node.attr_ints("split");
  }
  if (!sizes.empty() && node.has_attr("num_outputs"))
    ctx.fail("'split' and 'num_outputs' are both given");
  if (sizes.empty()) {
    if (node.has_attr("num_outputs") && node.attr_int("num_outputs", 0) != parts)
      ctx.fail("num_outputs is ", node.attr_int("num_outputs", 0), " but the node has ", parts, " outputs");
    if (parts <= 0) ctx.fail("has no outputs");
    if (dim % parts == 0) {
      sizes.assign(parts, dim / parts);
    } else {
      if (node.opset() < 18)
        ctx.fail("axis ", axis, " of ", x.describe(), " cannot be split evenly into ", parts, " parts");
      sizes.assign(parts, dim / parts + 1);
      sizes.back() = dim - (dim / parts + 1) * (parts - 1);
      if (sizes.back() < 0)
        ctx.fail("axis ", axis, " of ", x.describe(), " is too short for ", parts, " parts of ",
                 dim / parts + 1);
    }
  }
  if (static_cast<int64_t>(sizes.size()) != parts)
    ctx.fail("split ", shape_to_string(sizes), " has ", sizes.size(), " parts but the node has ",
             parts, " outputs");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) ctx.fail("split ", shape_to_string(sizes), " has a negative size");
    total += s;
  }
  if (total != dim)
    ctx.fail("split ", shape_to_string(sizes), " sums to ", total, " but axis ", axis, " of ",
             x.describe(), " is ", dim);
  return sizes;
}

namespace {

void split_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", 0), x.rank());
  const int64_t dim = x.shape()[axis];
  const int64_t parts = static_cast<int64_t>(ctx.num_outputs());
  const std::vector<int64_t> sizes = split_sizes(ctx, x, axis);
  const int64_t outer = product(x.shape(), 0, axis), inner = product(x.shape(), axis + 1, x.rank());
  int64_t offset = 0;
  for (int64_t p = 0; p < parts; ++p) {
    std::vector<int64_t> shape = x.shape();
    shape[axis] = sizes[p];
    ElementWriter out(x.dtype(), shape);
    const int64_t block = sizes[p] * inner;
    for (int64_t o = 0; o < outer; ++o) out.copy(x, (o * dim + offset) * inner, 1, o * block, block);
    offset += sizes[p];
    ctx.set_output(p, out.finish());
  }
}

// Expand: bidirectional (numpy) broadcast of the input against `shape`; the result's
// rank is the larger of the two and a 1 in `shape` keeps the input's dim.
void expand_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> target = read_ints(ctx, ctx.input(1), "shape input");
  const int64_t rank = std::max<int64_t>(x.rank(), static_cast<int64_t>(target.size()));
  std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  std::vector<int64_t> shape(rank), strides(rank, 0);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t xi = i - (rank - x.rank()), ti = i - (rank - static_cast<int64_t>(target.size()));
    int64_t a = xi >= 0 ? x.shape()[xi] : 1, b = ti >= 0 ? target[ti] : 1;
    if (b < 0) ctx.fail("shape ", shape_to_string(target), " has a negative dim");
    if (a != b && a != 1 && b != 1)
      ctx.fail("cannot broadcast ", x.describe(), " to ", shape_to_string(target));
    shape[i] = a == 1 ? b : a;
    if (xi >= 0 && a != 1) strides[i] = in_strides[xi];
  }
  checked_numel(ctx, shape);
  ElementWriter out(x.dtype(), shape);
  copy_view(out, 0, x, 0, shape, strides);
  ctx.set_output(0, out.finish());
}

// Tile: out dim i = in dim i * repeats[i]. Done as a view over [r0, d0, r1, d1, ...] with
// stride 0 on the repeat dims, whose row-major order is exactly the tiled layout.
void tile_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  std::vector<int64_t> repeats = read_ints(ctx, ctx.input(1), "repeats input");
  if (static_cast<int64_t>(repeats.size()) != x.rank())
    ctx.fail("repeats ", shape_to_string(repeats), " must have one entry per dim of ", x.describe());
  std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  std::vector<int64_t> view_shape, view_strides, shape;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (repeats[i] < 0) ctx.fail("repeats ", shape_to_string(repeats), " has a negative entry");
    view_shape.insert(view_shape.end(), {repeats[i], x.shape()[i]});
    view_strides.insert(view_strides.end(), {0, in_strides[i]});
    int64_t dim = 0;
    if (__builtin_mul_overflow(repeats[i], x.shape()[i], &dim))
      ctx.fail("repeats ", shape_to_string(repeats), " make ", x.describe(), " too large");
    shape.push_back(dim);
  }
  checked_numel(ctx, shape);
  ElementWriter out(x.dtype(), shape);
  copy_view(out, 0, x, 0, view_shape, view_strides);
  ctx.set_output(0, out.finish());
}

}  // namespace

void register_combine(KernelRegistry& r) {
  r.add("", "Concat", concat_kernel);
  r.add("", "Split", split_kernel);
  r.add("", "Expand", expand_kernel);
  r.add("", "Tile", tile_kernel);
}

}  // namespace ref_shape
}  // namespace octet
