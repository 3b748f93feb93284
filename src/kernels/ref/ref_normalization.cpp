// Reference kernels: Softmax, LogSoftmax, Hardmax, LayerNormalization, RMSNormalization.
//
// All statistics are computed in double and each output is rounded once to its type.
// The spec lets stash_type pick float32 for stage one; the oracle is at least that
// precise, and onnxruntime likewise rounds fp16 outputs once after computing in float.
#include <cmath>

#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_broadcast.h"
#include "kernels/ref/ref_math_dtype.h"
#include "kernels/ref/ref_math_reduce.h"

namespace octet::ref {
namespace {

enum class Soft { Softmax, LogSoftmax, Hardmax };

// Before opset 13 these ops flatten the input to 2-D at `axis` (default 1) and normalize
// each row; from 13 they normalize along the one axis (default -1).
template <Soft kind>
void softmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<FloatTypes>(ctx, x.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const bool coerce_2d = ctx.node().opset() < 13;
    const int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", coerce_2d ? 1 : -1), x.rank());
    const Shape& shape = x.shape();
    const int64_t outer = product_of_dims(shape, 0, axis);
    const int64_t n = coerce_2d ? product_of_dims(shape, axis, shape.size()) : shape[axis];
    const int64_t inner = coerce_2d ? 1 : product_of_dims(shape, axis + 1, shape.size());
    Tensor& out = ctx.allocate_output(0, x.dtype(), shape);
    const S* in = data_as<S>(x);
    S* po = data_as<S>(out);
    std::vector<double> line(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * n * inner + i;
        double mx = -INFINITY;
        int64_t argmax = 0;
        for (int64_t k = 0; k < n; ++k) {
          line[k] = static_cast<double>(load(in[base + k * inner]));
          if (line[k] > mx) {
            mx = line[k];
            argmax = k;
          }
        }
        if constexpr (kind == Soft::Hardmax) {
          for (int64_t k = 0; k < n; ++k) po[base + k * inner] = store_double<S>(k == argmax ? 1.0 : 0.0);
          continue;
        }
        double sum = 0;
        for (int64_t k = 0; k < n; ++k) sum += std::exp(line[k] - mx);
        for (int64_t k = 0; k < n; ++k) {
          const double r = kind == Soft::Softmax ? std::exp(line[k] - mx) / sum
                                                 : (line[k] - mx) - std::log(sum);
          po[base + k * inner] = store_double<S>(r);
        }
      }
    }
  });
}

// Checks that `t` broadcasts unidirectionally to X (the shape of Scale and B).
void require_unidirectional(const KernelContext& ctx, const Tensor& t, const Tensor& x, const char* what) {
  auto b = broadcast_shapes({&t.shape(), &x.shape()});
  if (!b || *b != x.shape())
    ctx.fail(what, " shape ", shape_to_string(t.shape()), " does not broadcast to X shape ",
             shape_to_string(x.shape()));
  if (t.dtype() != x.dtype())
    ctx.fail(what, " is ", dtype_name(t.dtype()), " but X is ", dtype_name(x.dtype()));
}

DType stash_dtype(const KernelContext& ctx) {
  const int64_t code = ctx.node().attr_int("stash_type", 1);
  auto t = dtype_from_onnx(static_cast<int32_t>(code));
  if (!t || !Dispatch<FloatTypes>::contains(*t))
    ctx.fail("stash_type ", code, " is not a float type");
  return *t;
}

// Per-row statistics over the trailing dims [axis, rank); rows are the leading dims.
struct RowStats {
  int64_t rows, cols;
  std::vector<double> center;  // mean (LayerNorm) or 0 (RMSNorm)
  std::vector<double> inv;     // 1 / sqrt(var + eps) or 1 / sqrt(mean(x^2) + eps)
};

template <typename S>
RowStats row_stats(const Tensor& x, int64_t axis, double eps, bool subtract_mean) {
  RowStats st{product_of_dims(x.shape(), 0, axis), product_of_dims(x.shape(), axis, x.shape().size()), {}, {}};
  const S* in = data_as<S>(x);
  for (int64_t r = 0; r < st.rows; ++r) {
    const S* row = in + r * st.cols;
    double mean = 0;
    if (subtract_mean) {
      for (int64_t c = 0; c < st.cols; ++c) mean += static_cast<double>(load(row[c]));
      mean /= static_cast<double>(st.cols);
    }
    double sq = 0;
    for (int64_t c = 0; c < st.cols; ++c) {
      const double d = static_cast<double>(load(row[c])) - mean;
      sq += d * d;
    }
    st.center.push_back(mean);
    st.inv.push_back(1.0 / std::sqrt(sq / static_cast<double>(st.cols) + eps));
  }
  return st;
}

// Y = (X - center) * inv * Scale (+ B), Scale and B broadcast to X.
template <typename S>
void write_normalized(const Tensor& x, const RowStats& st, const Tensor& scale, const Tensor* bias,
                      Tensor& y) {
  const S* in = data_as<S>(x);
  const S* ps = data_as<S>(scale);
  const S* pb = bias ? data_as<S>(*bias) : nullptr;
  S* po = data_as<S>(y);
  const Shape none;
  BroadcastWalker w(x.shape(), {&scale.shape(), bias ? &bias->shape() : &none});
  for (int64_t i = 0; i < x.numel(); ++i, w.next()) {
    const size_t r = static_cast<size_t>(i / st.cols);
    double v = (static_cast<double>(load(in[i])) - st.center[r]) * st.inv[r];
    v *= static_cast<double>(load(ps[w.offset(0)]));
    if (pb) v += static_cast<double>(load(pb[w.offset(1)]));
    po[i] = store_double<S>(v);
  }
}

// LayerNormalization (opset 17): outputs Y, and optionally Mean and InvStdDev with shape
// X.shape[:axis] + [1] * (rank - axis) in the stash type.
void layer_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  const Tensor* bias = ctx.optional_input(2);
  dispatch<FloatTypes>(ctx, x.dtype(), "X", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", -1), x.rank());
    const double eps = ctx.node().attr_float("epsilon", 1e-5f);
    const DType stash = stash_dtype(ctx);
    require_unidirectional(ctx, scale, x, "Scale");
    if (bias) require_unidirectional(ctx, *bias, x, "B");
    const RowStats st = row_stats<S>(x, axis, eps, true);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    write_normalized<S>(x, st, scale, bias, y);
    Shape stat_shape(x.shape().begin(), x.shape().begin() + axis);
    stat_shape.resize(x.shape().size(), 1);
    for (size_t k = 1; k <= 2 && k < ctx.num_outputs(); ++k) {
      if (!ctx.output_wanted(k)) continue;
      Tensor& t = ctx.allocate_output(k, stash, stat_shape);
      const std::vector<double>& v = k == 1 ? st.center : st.inv;
      dispatch<FloatTypes>(ctx, stash, "stash_type", [&](auto stag) {
        using T = typename decltype(stag)::type;
        T* p = data_as<T>(t);
        for (size_t r = 0; r < v.size(); ++r) p[r] = store_double<T>(v[r]);
      });
    }
  });
}

// RMSNormalization (opset 23): Y = X / sqrt(mean(X^2 over [axis, rank)) + eps) * Scale.
void rms_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  dispatch<FloatTypes>(ctx, x.dtype(), "X", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", -1), x.rank());
    const double eps = ctx.node().attr_float("epsilon", 1e-5f);
    stash_dtype(ctx);
    require_unidirectional(ctx, scale, x, "scale");
    const RowStats st = row_stats<S>(x, axis, eps, false);
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    write_normalized<S>(x, st, scale, nullptr, y);
  });
}

}  // namespace

void register_normalization(KernelRegistry& r) {
  r.add("", "Softmax", softmax_kernel<Soft::Softmax>);
  r.add("", "LogSoftmax", softmax_kernel<Soft::LogSoftmax>);
  r.add("", "Hardmax", softmax_kernel<Soft::Hardmax>);
  r.add("", "LayerNormalization", layer_norm_kernel);
  r.add("", "RMSNormalization", rms_norm_kernel);
}

}  // namespace octet::ref
