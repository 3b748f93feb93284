// Reference Resize (opsets 10-19): nearest, linear and cubic interpolation, every
// coordinate transformation, scales or sizes, axes, keep_aspect_ratio_policy, antialias
// and tf_crop_and_resize's extrapolation value.
//
// Interpolation is separable, so the kernel resizes one axis at a time, in double:
//   out[.., y, ..] = sum_k w[y][k] * in[.., j[y][k], ..]
// where for each output index y along the axis
//   x = the source coordinate of y (coordinate_transformation_mode, below);
//   nearest: one tap, x rounded per nearest_mode;
//   linear / cubic: taps j = floor(x) + start .. floor(x) - start + 1 with weights
//     kernel((j - x) * s), kernel the tent (support 1) or Keys' cubic with a =
//     cubic_coeff_a (support 2); s = 1, or min(scale, 1) with antialias (the kernel
//     stretched over 1/s input pixels when downsampling, weights normalized to sum 1);
//     start = floor(-support / s) + 1;
//   exclude_outside: taps outside the input get weight 0, the rest renormalized;
//   taps outside the input otherwise read the nearest edge pixel.
// Source coordinates, with scale the axis' scale (given, or out / in from sizes) and
// length = in * scale (not rounded: the ONNX reference and onnxruntime use it unrounded):
//   half_pixel           (y + 0.5) / scale - 0.5
//   half_pixel_symmetric the same shifted so the output's centre maps to the input's:
//                        + in / 2 * (1 - out / length)
//   pytorch_half_pixel   length > 1 ? (y + 0.5) / scale - 0.5 : 0
//   align_corners        length > 1 ? y * (in - 1) / (length - 1) : 0
//   asymmetric           y / scale
//   tf_half_pixel_for_nn (y + 0.5) / scale  (opsets 11-12)
//   tf_crop_and_resize   roi_start * (in - 1) + y * (roi_end - roi_start) * (in - 1) / (length - 1)
//                        (length 1: the roi's centre); outside [0, in - 1] the output
//                        is extrapolation_value.
// Integer outputs are rounded half to even and saturated, as the ONNX reference does.
#include <algorithm>
#include <cmath>

#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_dtype.h"
#include "kernels/ref/ref_shape_common.h"
#include "ops/op_registry.h"
#include "ops/resize_attrs.h"

namespace octet::ref {
namespace {

// One axis' resampling: for output index y, taps j[y * taps + k] with weights w[...].
struct AxisPlan {
  int64_t axis = 0, in = 0, out = 0, taps = 0;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<bool> extrapolate;  // tf_crop_and_resize: output y lies outside the input
  bool identity = false;          // every output reads its own input element
};

double cubic_kernel(double t, double a) {
  t = std::fabs(t);
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

double source_coordinate(const ResizeAttrs& a, int64_t y, int64_t in, int64_t out, double scale, double roi_start,
                         double roi_end) {
  const double length = scale * static_cast<double>(in);
  const double yd = static_cast<double>(y), ind = static_cast<double>(in);
  const std::string& c = a.coordinate_transformation_mode;
  if (c == "half_pixel") return (yd + 0.5) / scale - 0.5;
  if (c == "half_pixel_symmetric")
    return ind / 2 * (1 - static_cast<double>(out) / length) + (yd + 0.5) / scale - 0.5;
  if (c == "pytorch_half_pixel") return length > 1 ? (yd + 0.5) / scale - 0.5 : 0.0;
  if (c == "align_corners") return length > 1 ? yd * (ind - 1) / (length - 1) : 0.0;
  if (c == "asymmetric") return yd / scale;
  if (c == "tf_half_pixel_for_nn") return (yd + 0.5) / scale;
  // tf_crop_and_resize
  if (length > 1) return roi_start * (ind - 1) + yd * (roi_end - roi_start) * (ind - 1) / (length - 1);
  return 0.5 * (roi_start + roi_end) * (ind - 1);
}

int64_t nearest_index(double x, const std::string& mode) {
  const double f = std::floor(x);
  if (x == f) return static_cast<int64_t>(f);
  const double r = x - f;
  bool up = mode == "ceil";
  if (mode == "round_prefer_floor") up = r > 0.5;
  if (mode == "round_prefer_ceil") up = r >= 0.5;
  return static_cast<int64_t>(f) + (up ? 1 : 0);
}

AxisPlan plan_axis(const ResizeAttrs& a, int64_t axis, int64_t in, int64_t out, double scale, double roi_start,
                   double roi_end) {
  AxisPlan p;
  p.axis = axis;
  p.in = in;
  p.out = out;
  const bool nearest = a.mode == "nearest";
  const double support = a.mode == "cubic" ? 2.0 : 1.0;
  const double s = a.antialias ? std::min(scale, 1.0) : 1.0;
  const int64_t start = nearest ? 0 : static_cast<int64_t>(std::floor(-support / s)) + 1;
  p.taps = nearest ? 1 : 2 - 2 * start;
  p.index.resize(static_cast<size_t>(out * p.taps));
  p.weight.resize(p.index.size());
  p.extrapolate.assign(static_cast<size_t>(out), false);
  p.identity = in == out;
  for (int64_t y = 0; y < out; ++y) {
    const double x = source_coordinate(a, y, in, out, scale, roi_start, roi_end);
    if (a.coordinate_transformation_mode == "tf_crop_and_resize" && (x < 0 || x > static_cast<double>(in - 1)))
      p.extrapolate[y] = true;
    int64_t* j = p.index.data() + y * p.taps;
    double* w = p.weight.data() + y * p.taps;
    if (nearest) {
      j[0] = std::clamp<int64_t>(nearest_index(x, a.nearest_mode), 0, in - 1);
      w[0] = 1;
    } else {
      const int64_t base = static_cast<int64_t>(std::floor(x)) + start;
      double sum = 0, inside = 0;
      for (int64_t k = 0; k < p.taps; ++k) {
        j[k] = base + k;
        const double t = (static_cast<double>(j[k]) - x) * s;
        w[k] = a.mode == "cubic" ? cubic_kernel(t, a.cubic_coeff_a) : std::max(0.0, 1 - std::fabs(t));
        sum += w[k];
      }
      if (a.antialias && sum != 0)
        for (int64_t k = 0; k < p.taps; ++k) w[k] /= sum;
      if (a.exclude_outside) {
        for (int64_t k = 0; k < p.taps; ++k) {
          if (j[k] < 0 || j[k] >= in) w[k] = 0;
          inside += w[k];
        }
        if (inside != 0)
          for (int64_t k = 0; k < p.taps; ++k) w[k] /= inside;
      }
      for (int64_t k = 0; k < p.taps; ++k) j[k] = std::clamp<int64_t>(j[k], 0, in - 1);
    }
    // Identity: the weights on y sum to exactly 1, every other weight is 0.
    double on_y = 0;
    for (int64_t k = 0; k < p.taps; ++k) {
      if (j[k] == y) on_y += w[k];
      else if (w[k] != 0) p.identity = false;
    }
    if (on_y != 1.0 || p.extrapolate[y]) p.identity = false;
  }
  return p;
}

// Applies one axis' plan to `data` of `shape` (row-major), returning the new data.
std::vector<double> apply(const AxisPlan& p, const std::vector<double>& data, std::vector<int64_t>& shape,
                          double extrapolation_value) {
  const int64_t outer = shape_numel(std::vector<int64_t>(shape.begin(), shape.begin() + p.axis));
  const int64_t inner = shape_numel(std::vector<int64_t>(shape.begin() + p.axis + 1, shape.end()));
  std::vector<double> out(static_cast<size_t>(outer * p.out * inner), 0.0);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t y = 0; y < p.out; ++y) {
      double* dst = out.data() + (o * p.out + y) * inner;
      if (p.extrapolate[y]) {
        std::fill(dst, dst + inner, extrapolation_value);
        continue;
      }
      for (int64_t k = 0; k < p.taps; ++k) {
        const double w = p.weight[y * p.taps + k];
        const double* src = data.data() + (o * p.in + p.index[y * p.taps + k]) * inner;
        for (int64_t i = 0; i < inner; ++i) dst[i] += w * src[i];
      }
    }
  shape[p.axis] = p.out;
  return out;
}

std::vector<double> read_doubles(const Tensor& t) {
  std::vector<double> out;
  if (t.dtype() == DType::Float64) {
    const double* d = reinterpret_cast<const double*>(t.raw());
    out.assign(d, d + t.numel());
  } else {
    for (float f : t.to_float_vector()) out.push_back(f);
  }
  return out;
}

template <typename S>
S store_resized(double v) {
  if constexpr (is_float_storage_v<S>) {
    return store_double<S>(v);
  } else {
    // Round half to even, then saturate (numpy.round + clip, as the ONNX reference does).
    const double r = std::nearbyint(v);
    if (std::isnan(r)) return S{0};
    const double lo = static_cast<double>(std::numeric_limits<S>::lowest());
    const double hi = static_cast<double>(std::numeric_limits<S>::max());
    if (r <= lo) return std::numeric_limits<S>::lowest();
    if (r >= hi) return std::numeric_limits<S>::max();
    return static_cast<S>(r);
  }
}

void resize_kernel(KernelContext& ctx) {
  const Node& node = ctx.node();
  const int64_t opset = node.opset() > 0 ? node.opset() : kNewestOnnxOpset;
  const ResizeAttrs a = read_resize_attrs(node, opset, [&](const std::string& why) { ctx.fail(why); });
  const ResizeInputs where = resize_inputs(opset);
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  auto present = [&](int i) -> const Tensor* {
    const Tensor* t = i >= 0 ? ctx.optional_input(static_cast<size_t>(i)) : nullptr;
    return t && t->numel() > 0 ? t : nullptr;
  };
  const Tensor* scales_t = present(where.scales);
  const Tensor* sizes_t = present(where.sizes);
  const Tensor* roi_t = present(where.roi);
  if (scales_t && sizes_t) ctx.fail("has both scales and sizes; exactly one of them may be given");
  if (!scales_t && !sizes_t) ctx.fail("has neither scales nor sizes; exactly one of them must be given");

  std::vector<int64_t> axes = a.axes;
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  for (int64_t& ax : axes) {
    if (ax < -rank || ax >= rank) ctx.fail("axis ", ax, " is out of range for X ", x.describe());
    if (ax < 0) ax += rank;
  }
  for (size_t i = 0; i < axes.size(); ++i)
    for (size_t k = 0; k < i; ++k)
      if (axes[i] == axes[k]) ctx.fail("axis ", axes[i], " is repeated in 'axes'");
  const size_t n = axes.size();

  std::vector<double> scale(n, 1.0);
  std::vector<int64_t> in_sizes(n), out_sizes(n);
  for (size_t i = 0; i < n; ++i) in_sizes[i] = x.shape()[axes[i]];
  if (scales_t) {
    if (scales_t->dtype() != DType::Float32 || scales_t->rank() != 1 || scales_t->numel() != static_cast<int64_t>(n))
      ctx.fail("scales ", scales_t->describe(), " must be float32 with one value per resized axis (", n, ")");
    const std::vector<float> s = scales_t->to_float_vector();
    for (size_t i = 0; i < n; ++i) {
      if (!(s[i] > 0) || !std::isfinite(s[i]))
        ctx.fail("scales has the value ", s[i], "; scales must be positive and finite");
      scale[i] = s[i];
      const double size = static_cast<double>(in_sizes[i]) * scale[i];
      if (size >= 9.0e15) ctx.fail("scales ", s[i], " makes axis ", axes[i], " too large");
      out_sizes[i] = resize_scaled_size(in_sizes[i], s[i]);
    }
  } else {
    const std::vector<int64_t> want = ref_shape::read_ints(ctx, *sizes_t, "sizes");
    if (sizes_t->dtype() != DType::Int64 || static_cast<int64_t>(want.size()) != static_cast<int64_t>(n))
      ctx.fail("sizes ", sizes_t->describe(), " must be int64 with one value per resized axis (", n, ")");
    for (size_t i = 0; i < n; ++i) {
      if (want[i] < 0) ctx.fail("sizes has the negative value ", want[i]);
      if (in_sizes[i] == 0 && want[i] != 0)
        ctx.fail("axis ", axes[i], " of X ", x.describe(), " is empty and cannot be resized to ", want[i]);
    }
    if (a.keep_aspect_ratio_policy != "stretch" &&
        std::none_of(in_sizes.begin(), in_sizes.end(), [](int64_t d) { return d == 0; })) {
      const double common = resize_keep_aspect_scale(in_sizes, want, a.keep_aspect_ratio_policy);
      out_sizes = resize_keep_aspect_sizes(in_sizes, want, a.keep_aspect_ratio_policy);
      for (int64_t size : out_sizes)
        if (size < 0) ctx.fail("sizes with keep_aspect_ratio_policy ", a.keep_aspect_ratio_policy, " are too large");
      std::fill(scale.begin(), scale.end(), common);
    } else {
      out_sizes = want;
      for (size_t i = 0; i < n; ++i)
        scale[i] = in_sizes[i] == 0 ? 1.0 : static_cast<double>(want[i]) / static_cast<double>(in_sizes[i]);
    }
  }
  std::vector<double> roi;
  if (a.coordinate_transformation_mode == "tf_crop_and_resize") {
    if (!roi_t) ctx.fail("coordinate_transformation_mode tf_crop_and_resize needs a roi input");
    roi = read_doubles(*roi_t);
    if (roi.size() != 2 * n)
      ctx.fail("roi ", roi_t->describe(), " needs ", 2 * n, " values (starts then ends of the resized axes)");
  }

  std::vector<int64_t> out_shape = x.shape();
  for (size_t i = 0; i < n; ++i) out_shape[axes[i]] = out_sizes[i];
  ref_shape::checked_numel(ctx, out_shape);
  std::vector<AxisPlan> plans;
  for (size_t i = 0; i < n; ++i) {
    if (out_sizes[i] > 0 && in_sizes[i] == 0)
      ctx.fail("axis ", axes[i], " of X ", x.describe(), " is empty and cannot be resized");
    double start = 0, end = 1;
    if (!roi.empty()) {  // [starts..., ends...] of the resized axes, in the order of `axes`
      start = roi[i];
      end = roi[i + n];
    }
    AxisPlan p = plan_axis(a, axes[i], in_sizes[i], out_sizes[i], scale[i], start, end);
    if (!p.identity) plans.push_back(std::move(p));
  }

  Tensor& out = ctx.allocate_output_uninitialized(0, x.dtype(), out_shape);
  dispatch<NumericTypes>(ctx, x.dtype(), "X", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S* src = data_as<S>(x);
    std::vector<double> data(static_cast<size_t>(x.numel()));
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<double>(load(src[i]));
    std::vector<int64_t> shape = x.shape();
    for (const AxisPlan& p : plans) data = apply(p, data, shape, a.extrapolation_value);
    S* dst = data_as<S>(out);
    for (size_t i = 0; i < data.size(); ++i) dst[i] = store_resized<S>(data[i]);
  });
}

}  // namespace

void register_resize(KernelRegistry& r) { r.add("", "Resize", resize_kernel); }

}  // namespace octet::ref
