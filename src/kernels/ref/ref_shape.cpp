// Reference kernels of the shape family that create tensors or describe them: Shape,
// Size, Identity, Constant, ConstantOfShape, Range. The other members live in
// ref_shape_{layout,combine,index,pad,scatter}.cpp; this file registers them all.
#include <cmath>
#include <cstring>

#include "kernels/kernel.h"
#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_shape_common.h"

namespace octet {
namespace ref_shape {
namespace {

// Shape-15 added start/end: negative values count from the back, then both are clamped
// to [0, rank]; start >= end gives an empty result.
void shape_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t rank = x.rank();
  auto clamp_bound = [&](int64_t v) {
    if (v < 0) v += rank;
    return v < 0 ? 0 : (v > rank ? rank : v);
  };
  int64_t start = clamp_bound(ctx.node().attr_int("start", 0));
  int64_t end = clamp_bound(ctx.node().attr_int("end", rank));
  int64_t n = end > start ? end - start : 0;
  Tensor& out = ctx.allocate_output(0, DType::Int64, {n});
  for (int64_t i = 0; i < n; ++i) out.mutable_data<int64_t>()[i] = x.shape()[start + i];
}

void size_kernel(KernelContext& ctx) {
  Tensor& out = ctx.allocate_output(0, DType::Int64, {});
  out.mutable_data<int64_t>()[0] = ctx.input(0).numel();
}

// Shares the input's bytes.
void identity_kernel(KernelContext& ctx) { ctx.set_output(0, ctx.input(0)); }

// Exactly one of the value attributes; value_float(s)/value_int(s)/value_string(s) are
// the opset-12 shorthands (float32, int64 and string; scalar or 1-D).
void constant_kernel(KernelContext& ctx) {
  const Node& n = ctx.node();
  static const char* const kNames[] = {"value",       "value_float",  "value_floats", "value_int",
                                       "value_ints",  "value_string", "value_strings", "sparse_value"};
  int present = 0;
  for (const char* name : kNames) present += n.has_attr(name) ? 1 : 0;
  if (present != 1)
    ctx.fail("needs exactly one of the value attributes, got ", present);
  if (n.has_attr("sparse_value")) ctx.fail("sparse_value constants are not supported");
  if (const Tensor* t = n.attr_tensor("value")) {
    ctx.set_output(0, *t);
  } else if (n.has_attr("value_float")) {
    ctx.set_output(0, Tensor::scalar<float>(n.attr_float("value_float", 0)));
  } else if (n.has_attr("value_floats")) {
    auto v = n.attr_floats("value_floats");
    ctx.set_output(0, Tensor::from_vector<float>({static_cast<int64_t>(v.size())}, v));
  } else if (n.has_attr("value_int")) {
    ctx.set_output(0, Tensor::scalar<int64_t>(n.attr_int("value_int", 0)));
  } else if (n.has_attr("value_ints")) {
    auto v = n.attr_ints("value_ints");
    ctx.set_output(0, Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
  } else if (n.has_attr("value_string")) {
    ctx.set_output(0, Tensor::strings({}, {n.attr_string("value_string", "")}));
  } else {
    const Attribute* a = n.find_attr("value_strings");
    if (a->kind != Attribute::Kind::Strings)
      ctx.fail("attribute 'value_strings' is ", attribute_kind_name(a->kind), ", expected strings");
    ctx.set_output(0, Tensor::strings({static_cast<int64_t>(a->strings.size())}, a->strings));
  }
}

// Output type and fill come from the one-element `value` tensor; float32 0 by default.
void constant_of_shape_kernel(KernelContext& ctx) {
  std::vector<int64_t> shape = read_ints(ctx, ctx.input(0), "shape input");
  if (ctx.input(0).rank() != 1) ctx.fail("shape input must be 1-D, got ", ctx.input(0).describe());
  checked_numel(ctx, shape);
  Tensor zero = Tensor::scalar<float>(0.0f);
  const Tensor* value = ctx.node().attr_tensor("value");
  if (!value) value = &zero;
  if (value->numel() != 1) ctx.fail("'value' must hold one element, got ", value->describe());
  ElementWriter out(value->dtype(), shape);
  out.fill(*value, 0, out.numel());
  ctx.set_output(0, out.finish());
}

// Range: n = max(ceil((limit - start) / delta), 0); out[i] = start + i * delta.
// Integers are computed exactly (in 128 bits, so no intermediate can overflow); float32
// and float64 in double, as numpy.arange (the ONNX reference) does; float16/bfloat16 in
// stash_type (float32 by default, float64 when stash_type = 11), then rounded.
constexpr int64_t kMaxRangeElements = int64_t{1} << 40;

template <typename T>
void store_at(Tensor& out, int64_t i, T v) {
  std::memcpy(out.mutable_raw() + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

void range_int(KernelContext& ctx, DType dtype, int64_t start, int64_t limit, int64_t delta) {
  if (delta == 0) ctx.fail("delta must not be 0");
  __int128 span = static_cast<__int128>(limit) - start;
  __int128 n = 0;
  if ((span > 0 && delta > 0) || (span < 0 && delta < 0)) {
    __int128 mag = span < 0 ? -span : span, step = delta < 0 ? -static_cast<__int128>(delta) : delta;
    n = (mag + step - 1) / step;
  }
  if (n > kMaxRangeElements) ctx.fail("would produce too many elements");
  Tensor& out = ctx.allocate_output(0, dtype, {static_cast<int64_t>(n)});
  for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
    int64_t v = static_cast<int64_t>(start + static_cast<__int128>(i) * delta);
    switch (dtype) {
      case DType::Int8: store_at(out, i, static_cast<int8_t>(v)); break;
      case DType::Int16: store_at(out, i, static_cast<int16_t>(v)); break;
      case DType::Int32: store_at(out, i, static_cast<int32_t>(v)); break;
      default: store_at(out, i, v); break;
    }
  }
}

template <typename Compute>
int64_t range_count(const KernelContext& ctx, Compute start, Compute limit, Compute delta) {
  if (delta == 0) ctx.fail("delta must not be 0");
  double n = std::ceil(static_cast<double>((limit - start) / delta));
  if (std::isnan(n) || n > static_cast<double>(kMaxRangeElements))
    ctx.fail("start ", start, ", limit ", limit, ", delta ", delta, " give no finite range");
  return n > 0 ? static_cast<int64_t>(n) : 0;
}

void range_kernel(KernelContext& ctx) {
  const Tensor* in[3] = {&ctx.input(0), &ctx.input(1), &ctx.input(2)};
  const char* names[3] = {"start", "limit", "delta"};
  const DType dtype = in[0]->dtype();
  for (int i = 0; i < 3; ++i) {
    if (in[i]->numel() != 1 || in[i]->rank() > 1)
      ctx.fail(names[i], " must be a scalar, got ", in[i]->describe());
    if (in[i]->dtype() != dtype)
      ctx.fail(names[i], " is ", in[i]->describe(), " but start is ", dtype_name(dtype));
  }
  switch (dtype) {
    case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
      range_int(ctx, dtype, in[0]->to_int64_vector()[0], in[1]->to_int64_vector()[0],
                in[2]->to_int64_vector()[0]);
      return;
    case DType::Float32: case DType::Float64: {
      double v[3];
      for (int i = 0; i < 3; ++i) {
        if (dtype == DType::Float64) std::memcpy(&v[i], in[i]->raw(), sizeof(double));
        else v[i] = in[i]->to_float_vector()[0];
      }
      int64_t n = range_count<double>(ctx, v[0], v[1], v[2]);
      Tensor& out = ctx.allocate_output(0, dtype, {n});
      for (int64_t i = 0; i < n; ++i) {
        double x = v[0] + static_cast<double>(i) * v[2];
        if (dtype == DType::Float64) store_at(out, i, x);
        else store_at(out, i, static_cast<float>(x));
      }
      return;
    }
    case DType::Float16: case DType::BFloat16: {
      int64_t stash = ctx.node().attr_int("stash_type", 1);
      if (stash != 1 && stash != 11) ctx.fail("stash_type must be 1 (float) or 11 (double), got ", stash);
      float v[3];
      for (int i = 0; i < 3; ++i) v[i] = in[i]->to_float_vector()[0];
      auto round = [&](double x) {
        float f = static_cast<float>(x);
        return dtype == DType::Float16 ? float_to_half(f) : float_to_bfloat16(f);
      };
      if (stash == 1) {
        int64_t n = range_count<float>(ctx, v[0], v[1], v[2]);
        Tensor& out = ctx.allocate_output(0, dtype, {n});
        for (int64_t i = 0; i < n; ++i) store_at(out, i, round(v[0] + static_cast<float>(i) * v[2]));
      } else {
        int64_t n = range_count<double>(ctx, v[0], v[1], v[2]);
        Tensor& out = ctx.allocate_output(0, dtype, {n});
        for (int64_t i = 0; i < n; ++i) store_at(out, i, round(double{v[0]} + static_cast<double>(i) * v[2]));
      }
      return;
    }
    default:
      ctx.fail("unsupported type ", dtype_name(dtype));
  }
}

}  // namespace
}  // namespace ref_shape

void register_ref_shape(KernelRegistry& r) {
  using namespace ref_shape;
  r.add("", "Shape", shape_kernel);
  r.add("", "Size", size_kernel);
  r.add("", "Identity", identity_kernel);
  r.add("", "Constant", constant_kernel);
  r.add("", "ConstantOfShape", constant_of_shape_kernel);
  r.add("", "Range", range_kernel);
  register_layout(r);
  register_combine(r);
  register_index(r);
  register_pad(r);
  register_scatter(r);
}

}  // namespace octet
