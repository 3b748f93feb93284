#include "ops/resize_attrs.h"

#include <algorithm>
#include <cmath>

namespace octet {

namespace {
bool one_of(const std::string& v, std::initializer_list<const char*> allowed) {
  return std::any_of(allowed.begin(), allowed.end(), [&](const char* a) { return v == a; });
}
}  // namespace

ResizeAttrs read_resize_attrs(const Node& n, int64_t opset, const std::function<void(const std::string&)>& fail) {
  ResizeAttrs a;
  a.mode = n.attr_string("mode", "nearest");
  if (!one_of(a.mode, {"nearest", "linear", "cubic"}) || (opset < 11 && a.mode == "cubic"))
    fail("mode '" + a.mode + "' is not " + (opset < 11 ? "nearest or linear" : "nearest, linear or cubic") +
         " at opset " + std::to_string(opset));
  if (opset < 11) {
    // Resize-10 has only `mode`; its coordinates are x_out / scale, like Upsample's.
    for (const char* later : {"coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                              "extrapolation_value"})
      if (n.has_attr(later)) fail(std::string("attribute '") + later + "' exists from opset 11, not " + std::to_string(opset));
    a.coordinate_transformation_mode = "asymmetric";
    a.nearest_mode = "floor";
    return a;
  }
  a.coordinate_transformation_mode = n.attr_string("coordinate_transformation_mode", "half_pixel");
  const std::string& c = a.coordinate_transformation_mode;
  const bool known = one_of(c, {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize"}) ||
                     (c == "tf_half_pixel_for_nn" && opset < 13) || (c == "half_pixel_symmetric" && opset >= 19);
  if (!known) fail("coordinate_transformation_mode '" + c + "' is not defined at opset " + std::to_string(opset));
  a.nearest_mode = n.attr_string("nearest_mode", "round_prefer_floor");
  if (!one_of(a.nearest_mode, {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}))
    fail("nearest_mode '" + a.nearest_mode + "' is not round_prefer_floor, round_prefer_ceil, floor or ceil");
  a.cubic_coeff_a = n.attr_float("cubic_coeff_a", -0.75f);
  const int64_t exclude = n.attr_int("exclude_outside", 0);
  if (exclude != 0 && exclude != 1) fail("exclude_outside " + std::to_string(exclude) + " must be 0 or 1");
  a.exclude_outside = exclude == 1;
  a.extrapolation_value = n.attr_float("extrapolation_value", 0.0f);
  if (opset < 18) {
    for (const char* later : {"antialias", "axes", "keep_aspect_ratio_policy"})
      if (n.has_attr(later)) fail(std::string("attribute '") + later + "' exists from opset 18, not " + std::to_string(opset));
    return a;
  }
  const int64_t antialias = n.attr_int("antialias", 0);
  if (antialias != 0 && antialias != 1) fail("antialias " + std::to_string(antialias) + " must be 0 or 1");
  a.antialias = antialias == 1;
  if (a.antialias && a.mode == "nearest") fail("antialias=1 applies to linear and cubic modes, not nearest");
  a.axes = n.attr_ints("axes");
  a.keep_aspect_ratio_policy = n.attr_string("keep_aspect_ratio_policy", "stretch");
  if (!one_of(a.keep_aspect_ratio_policy, {"stretch", "not_larger", "not_smaller"}))
    fail("keep_aspect_ratio_policy '" + a.keep_aspect_ratio_policy + "' is not stretch, not_larger or not_smaller");
  return a;
}

ResizeInputs resize_inputs(int64_t opset) {
  if (opset < 11) return ResizeInputs{-1, 1, -1};
  return ResizeInputs{1, 2, 3};
}

int64_t resize_scaled_size(int64_t in, float scale) {
  return static_cast<int64_t>(std::floor(static_cast<double>(in) * static_cast<double>(scale)));
}

double resize_keep_aspect_scale(const std::vector<int64_t>& in, const std::vector<int64_t>& sizes,
                                const std::string& policy) {
  double scale = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const double s = static_cast<double>(sizes[i]) / static_cast<double>(in[i]);
    if (i == 0 || (policy == "not_larger" ? s < scale : s > scale)) scale = s;
  }
  return scale;
}

std::vector<int64_t> resize_keep_aspect_sizes(const std::vector<int64_t>& in, const std::vector<int64_t>& sizes,
                                              const std::string& policy) {
  const double scale = resize_keep_aspect_scale(in, sizes, policy);
  std::vector<int64_t> out;
  for (int64_t d : in) {
    const double size = scale * static_cast<double>(d) + 0.5;
    out.push_back(size < 9.0e15 ? static_cast<int64_t>(size) : -1);
  }
  return out;
}

}  // namespace octet
