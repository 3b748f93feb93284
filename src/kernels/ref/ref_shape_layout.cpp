// Reference kernels that change how elements are laid out: Reshape, Flatten, Squeeze,
// Unsqueeze (all zero-copy: the output shares the input's bytes) and Transpose.
#include <algorithm>

#include "kernels/kernel.h"
#include "kernels/ref/ref_shape_common.h"
#include "ops/transpose_layout.h"

namespace octet {
namespace ref_shape {
namespace {

// Reshape: 0 copies the input dim at the same position (unless allowzero = 1, opset 14+,
// where 0 means an empty dim), -1 is inferred from the element count (at most one).
// Reshape-1 carried the shape as an attribute.
void reshape_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Node& node = ctx.node();
  std::vector<int64_t> target = node.opset() >= 5 || ctx.has_input(1)
                                    ? read_ints(ctx, ctx.input(1), "shape input")
                                    : node.attr_ints("shape");
  const bool allow_zero = node.opset() >= 14 && node.attr_int("allowzero", 0) != 0;
  std::vector<int64_t> shape(target.size());
  int64_t inferred = -1, known = 1;
  bool has_zero = false;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == -1) {
      if (inferred >= 0) ctx.fail("shape ", shape_to_string(target), " has more than one -1");
      inferred = static_cast<int64_t>(i);
      continue;
    }
    if (d < -1) ctx.fail("shape ", shape_to_string(target), " has an invalid dim ", d);
    if (d == 0) {
      has_zero = true;
      if (!allow_zero) {
        if (static_cast<int64_t>(i) >= x.rank())
          ctx.fail("shape ", shape_to_string(target), " copies dim ", i, " (0) but the input ",
                   x.describe(), " has rank ", x.rank());
        d = x.shape()[i];
      }
    }
    shape[i] = d;
    if (__builtin_mul_overflow(known, d, &known))
      ctx.fail("shape ", shape_to_string(target), " has too many elements");
  }
  if (allow_zero && has_zero && inferred >= 0)
    ctx.fail("shape ", shape_to_string(target), " has both 0 and -1 while allowzero is set");
  if (inferred >= 0) {
    if (known == 0 || x.numel() % known != 0)
      ctx.fail("cannot reshape ", x.describe(), " to ", shape_to_string(target));
    shape[inferred] = x.numel() / known;
  }
  if (const int64_t n = checked_numel(ctx, shape); n != x.numel())
    ctx.fail("cannot reshape ", x.describe(), " to ", shape_to_string(target), " (", n, " elements)");
  ctx.set_output(0, reshaped(x, std::move(shape)));
}

// Flatten: [prod(dims[:axis]), prod(dims[axis:])], axis in [-rank, rank].
void flatten_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  int64_t axis = ctx.node().attr_int("axis", 1);
  if (axis < -rank || axis > rank)
    ctx.fail("axis ", axis, " is out of range for rank ", rank, " (valid: [", -rank, ", ", rank, "])");
  if (axis < 0) axis += rank;
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= x.shape()[i];
  int64_t inner = 1;
  for (int64_t i = axis; i < rank; ++i) inner *= x.shape()[i];
  ctx.set_output(0, reshaped(x, {outer, inner}));
}

// Axes of Squeeze/Unsqueeze: an attribute before opset 13, an input from 13 on.
// Duplicates are an error; `rank` is the rank the axes index into.
std::vector<int64_t> read_axes(const KernelContext& ctx, size_t input, int64_t rank, bool* given) {
  std::vector<int64_t> axes;
  if (ctx.node().opset() >= 13 || ctx.has_input(input)) {
    *given = ctx.has_input(input);
    if (*given) axes = read_ints(ctx, ctx.input(input), "axes input");
  } else {
    *given = ctx.node().has_attr("axes");
    axes = ctx.node().attr_ints("axes");
  }
  for (int64_t& a : axes) a = normalize_axis(ctx, a, rank);
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    ctx.fail("axes ", shape_to_string(axes), " repeat an axis");
  return axes;
}

void squeeze_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  bool given = false;
  std::vector<int64_t> axes = read_axes(ctx, 1, x.rank(), &given);
  std::vector<bool> drop(x.rank(), false);
  if (!given) {
    for (int64_t i = 0; i < x.rank(); ++i) drop[i] = x.shape()[i] == 1;
  } else {
    for (int64_t a : axes) {
      if (x.shape()[a] != 1)
        ctx.fail("cannot squeeze axis ", a, " of ", x.describe(), ": its size is not 1");
      drop[a] = true;
    }
  }
  std::vector<int64_t> shape;
  for (int64_t i = 0; i < x.rank(); ++i)
    if (!drop[i]) shape.push_back(x.shape()[i]);
  ctx.set_output(0, reshaped(x, std::move(shape)));
}

// Unsqueeze: axes index into the output, whose rank is rank(x) + len(axes).
void unsqueeze_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  int64_t count = 0;
  if (ctx.node().opset() >= 13 || ctx.has_input(1)) {
    count = ctx.input(1).numel();  // required from opset 13
  } else {
    if (!ctx.node().has_attr("axes")) ctx.fail("attribute 'axes' is required");
    count = static_cast<int64_t>(ctx.node().attr_ints("axes").size());
  }
  const int64_t out_rank = x.rank() + count;
  bool given = false;
  std::vector<int64_t> axes = read_axes(ctx, 1, out_rank, &given);
  std::vector<bool> inserted(out_rank, false);
  for (int64_t a : axes) inserted[a] = true;
  std::vector<int64_t> shape;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) shape.push_back(inserted[i] ? 1 : x.shape()[next++]);
  ctx.set_output(0, reshaped(x, std::move(shape)));
}

}  // namespace

std::vector<int64_t> transpose_perm(const KernelContext& ctx, const Tensor& x) {
  std::optional<std::vector<int64_t>> perm = transpose_permutation(ctx.node(), x.rank());
  if (!perm) {
    const Attribute* a = ctx.node().find_attr("perm");
    ctx.fail("perm ", a && a->kind == Attribute::Kind::Ints ? shape_to_string(a->ints) : std::string("(not ints)"),
             " is not a permutation of the ", x.rank(), " dims of ", x.describe());
  }
  return *perm;
}

namespace {

// Transpose: out.shape[i] = in.shape[perm[i]]; perm defaults to reversing the dims.
void transpose_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  const std::vector<int64_t> perm = transpose_perm(ctx, x);
  std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  std::vector<int64_t> shape(rank), strides(rank);
  for (int64_t i = 0; i < rank; ++i) {
    shape[i] = x.shape()[perm[i]];
    strides[i] = in_strides[perm[i]];
  }
  ElementWriter out(x.dtype(), shape);
  copy_view(out, 0, x, 0, shape, strides);
  ctx.set_output(0, out.finish());
}

}  // namespace

void register_layout(KernelRegistry& r) {
  r.add("", "Reshape", reshape_kernel);
  r.add("", "Flatten", flatten_kernel);
  r.add("", "Squeeze", squeeze_kernel);
  r.add("", "Unsqueeze", unsqueeze_kernel);
  r.add("", "Transpose", transpose_kernel);
}

}  // namespace ref_shape
}  // namespace octet
