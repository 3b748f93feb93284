// Reference kernel for Pad (modes constant, reflect, edge, wrap).
//
// Opset history: Pad-1 `paddings` and Pad-2 `pads` attributes with a float `value`;
// Pad-11 moved pads and constant_value to inputs; Pad-18 added the `axes` input; Pad-19
// added mode "wrap". Negative pads remove elements; as onnxruntime does (it turns
// negative pads into slices taken before padding), an axis is first cropped by its
// negative pads and what remains is padded, so reflect/edge/wrap read only kept
// elements. (The ONNX Python reference hands negative pads to numpy.pad, which rejects
// them.) Reflect and wrap pads longer than the axis repeat periodically, as numpy.pad.
#include <algorithm>

#include "kernels/kernel.h"
#include "kernels/ref/ref_shape_common.h"

namespace octet {
namespace ref_shape {
namespace {

enum class PadMode { Constant, Reflect, Edge, Wrap };

PadMode parse_mode(const KernelContext& ctx) {
  std::string mode = ctx.node().attr_string("mode", "constant");
  if (mode == "constant") return PadMode::Constant;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "edge") return PadMode::Edge;
  if (mode == "wrap") return PadMode::Wrap;
  ctx.fail("unknown mode '", mode, "' (constant, reflect, edge, wrap)");
}

// For one axis: the input index each output index reads, or -1 for the constant value.
std::vector<int64_t> axis_map(const KernelContext& ctx, PadMode mode, int64_t dim, int64_t pad_begin,
                              int64_t pad_end, int64_t axis, int64_t* out_dim) {
  // pads near INT64_MIN cannot be negated; they remove everything anyway
  const int64_t crop = pad_begin < -dim ? dim + 1 : std::max<int64_t>(0, -pad_begin);
  const int64_t kept = dim - crop - (pad_end < -dim ? dim + 1 : std::max<int64_t>(0, -pad_end));
  if (kept < 0)
    ctx.fail("pads ", pad_begin, ", ", pad_end, " remove more than the ", dim, " elements of axis ", axis);
  const int64_t before = std::max<int64_t>(0, pad_begin);
  if (__builtin_add_overflow(kept, before, out_dim) ||
      __builtin_add_overflow(*out_dim, std::max<int64_t>(0, pad_end), out_dim))
    ctx.fail("pads ", pad_begin, ", ", pad_end, " make axis ", axis, " too large");
  if (mode != PadMode::Constant && kept == 0 && *out_dim > 0)
    ctx.fail("cannot pad axis ", axis, " in this mode: it has no elements to repeat");
  std::vector<int64_t> map(*out_dim);
  for (int64_t o = 0; o < *out_dim; ++o) {
    int64_t i = o - before;
    if (i < 0 || i >= kept) {
      switch (mode) {
        case PadMode::Constant: map[o] = -1; continue;
        case PadMode::Edge: i = std::clamp<int64_t>(i, 0, kept - 1); break;
        case PadMode::Wrap: i = ((i % kept) + kept) % kept; break;
        case PadMode::Reflect: {
          // Mirror without repeating the edge element: period 2 * (kept - 1).
          const int64_t period = 2 * (kept - 1);
          if (period == 0) {
            i = 0;
          } else {
            i = ((i % period) + period) % period;
            if (i >= kept) i = period - i;
          }
          break;
        }
      }
    }
    map[o] = i + crop;
  }
  return map;
}

void pad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Node& node = ctx.node();
  const int64_t rank = x.rank();
  const PadMode mode = parse_mode(ctx);
  std::vector<int64_t> pads, axes;
  Tensor value(x.dtype(), {});  // zero (or "" for strings)
  bool has_axes = false;
  if (node.opset() >= 11 || ctx.has_input(1)) {
    pads = read_ints(ctx, ctx.input(1), "pads input");
    if (const Tensor* v = ctx.optional_input(2); v && v->numel() > 0) {
      if (v->dtype() != x.dtype() || v->numel() != 1)
        ctx.fail("constant_value ", v->describe(), " must be one ", dtype_name(x.dtype()), " value");
      value = *v;
    }
    if ((has_axes = ctx.has_input(3))) axes = read_ints(ctx, ctx.input(3), "axes input");
  } else {
    pads = node.attr_ints(node.opset() < 2 && node.has_attr("paddings") ? "paddings" : "pads");
    if (float v = node.attr_float("value", 0.0f); v != 0.0f) value = scalar_of_dtype(ctx, x.dtype(), v);
  }
  if (!has_axes)
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  if (pads.size() != 2 * axes.size())
    ctx.fail("pads ", shape_to_string(pads), " must have 2 entries per padded axis (", axes.size(), " axes)");
  std::vector<int64_t> begin(rank, 0), end(rank, 0);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = normalize_axis(ctx, axes[i], rank);
    if (seen[a]) ctx.fail("axes ", shape_to_string(axes), " repeat axis ", a);
    seen[a] = true;
    begin[a] = pads[i];
    end[a] = pads[axes.size() + i];
  }

  std::vector<int64_t> shape(rank);
  std::vector<std::vector<int64_t>> maps(rank);
  for (int64_t d = 0; d < rank; ++d)
    maps[d] = axis_map(ctx, mode, x.shape()[d], begin[d], end[d], d, &shape[d]);
  checked_numel(ctx, shape);
  const std::vector<int64_t> strides = contiguous_strides(x.shape());
  ElementWriter out(x.dtype(), shape);
  const int64_t total = out.numel();
  if (rank == 0) out.copy(x, 0, 1, 0, 1);
  if (rank == 0 || total == 0) {
    ctx.set_output(0, out.finish());
    return;
  }
  // Rows over the last axis; an odometer walks the outer axes.
  const int64_t inner = shape[rank - 1];
  std::vector<int64_t> pos(rank - 1, 0);
  for (int64_t row = 0; row < total / inner; ++row) {
    int64_t base = 0;
    bool padding = false;
    for (int64_t d = 0; d < rank - 1; ++d) {
      int64_t m = maps[d][pos[d]];
      padding |= m < 0;
      base += m * strides[d];
    }
    const int64_t dst = row * inner;
    if (padding) {
      out.fill(value, dst, inner);
    } else {
      for (int64_t j = 0; j < inner; ++j) {
        int64_t m = maps[rank - 1][j];
        if (m < 0) out.fill(value, dst + j, 1);
        else out.copy(x, base + m, 1, dst + j, 1);
      }
    }
    for (int64_t d = rank - 2; d >= 0 && ++pos[d] == shape[d]; --d) pos[d] = 0;
  }
  ctx.set_output(0, out.finish());
}

}  // namespace

void register_pad(KernelRegistry& r) { r.add("", "Pad", pad_kernel); }

}  // namespace ref_shape
}  // namespace octet
