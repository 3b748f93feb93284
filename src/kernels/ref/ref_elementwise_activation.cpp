// Reference kernels: activation functions (Relu, Sigmoid, Gelu, Clip and the attribute-
// parameterized family: Elu, Selu, LeakyRelu, HardSigmoid, HardSwish, ThresholdedRelu,
// Celu, Softplus, Softsign, Mish, Shrink).
//
// Formulas are the ONNX operator definitions. NaN propagates through every one of them
// (Relu(NaN) is NaN, as np.maximum(x, 0) gives).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_elementwise.h"

namespace octet::ref {
namespace {

struct ReluOp {
  explicit ReluOp(const Node&) {}
  template <typename T>
  T operator()(T v) const { return v < T(0) ? T(0) : v; }
};

struct SigmoidOp {
  explicit SigmoidOp(const Node&) {}
  // Split by sign so that exp never overflows into inf/inf.
  template <typename T>
  T operator()(T v) const {
    if (v >= T(0)) return T(1) / (T(1) + std::exp(-v));
    const T e = std::exp(v);
    return e / (T(1) + e);
  }
};

// Gelu (opset 20): approximate="none" is x/2 * (1 + erf(x/sqrt(2))); "tanh" is
// x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
struct GeluOp {
  bool tanh_approx = false;
  explicit GeluOp(const Node& n) {
    const std::string a = n.attr_string("approximate", "none");
    if (a == "tanh") tanh_approx = true;
    else if (a != "none")
      fail(n.describe(), ": approximate must be \"none\" or \"tanh\", got \"", a, "\"");
  }
  template <typename T>
  T operator()(T v) const {
    if (tanh_approx) {
      const T k = static_cast<T>(0.7978845608028654);  // sqrt(2/pi)
      return T(0.5) * v * (T(1) + std::tanh(k * (v + static_cast<T>(0.044715) * v * v * v)));
    }
    return T(0.5) * v * (T(1) + std::erf(v * static_cast<T>(0.7071067811865476)));
  }
};

struct EluOp {
  double alpha;
  explicit EluOp(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <typename T>
  T operator()(T v) const { return v < T(0) ? static_cast<T>(alpha) * (std::exp(v) - T(1)) : v; }
};

struct SeluOp {
  double alpha, gamma;
  explicit SeluOp(const Node& n)
      : alpha(n.attr_float("alpha", 1.67326319217681884765625f)),
        gamma(n.attr_float("gamma", 1.05070102214813232421875f)) {}
  template <typename T>
  T operator()(T v) const {
    const T a = static_cast<T>(alpha), g = static_cast<T>(gamma);
    return v > T(0) ? g * v : g * (a * std::exp(v) - a);
  }
};

struct LeakyReluOp {
  double alpha;
  explicit LeakyReluOp(const Node& n) : alpha(n.attr_float("alpha", 0.01f)) {}
  template <typename T>
  T operator()(T v) const { return v < T(0) ? static_cast<T>(alpha) * v : v; }
};

struct HardSigmoidOp {
  double alpha, beta;
  explicit HardSigmoidOp(const Node& n)
      : alpha(n.attr_float("alpha", 0.2f)), beta(n.attr_float("beta", 0.5f)) {}
  template <typename T>
  T operator()(T v) const {
    const T y = static_cast<T>(alpha) * v + static_cast<T>(beta);
    return std::isnan(y) ? y : std::clamp(y, T(0), T(1));
  }
};

struct HardSwishOp {
  explicit HardSwishOp(const Node&) {}
  template <typename T>
  T operator()(T v) const {
    const T y = v / T(6) + T(0.5);
    return std::isnan(y) ? y : v * std::clamp(y, T(0), T(1));
  }
};

struct ThresholdedReluOp {
  double alpha;
  explicit ThresholdedReluOp(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <typename T>
  T operator()(T v) const { return v > static_cast<T>(alpha) ? v : (std::isnan(v) ? v : T(0)); }
};

struct CeluOp {
  double alpha;
  explicit CeluOp(const Node& n) : alpha(n.attr_float("alpha", 1.0f)) {}
  template <typename T>
  T operator()(T v) const {
    const T a = static_cast<T>(alpha);
    return v > T(0) ? v : a * (std::exp(v / a) - T(1));
  }
};

// log(1 + exp(x)) without overflow for large x.
template <typename T>
T softplus(T v) {
  return v > T(0) ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v));
}

struct SoftplusOp {
  explicit SoftplusOp(const Node&) {}
  template <typename T>
  T operator()(T v) const { return softplus(v); }
};

struct SoftsignOp {
  explicit SoftsignOp(const Node&) {}
  template <typename T>
  T operator()(T v) const { return v / (T(1) + std::fabs(v)); }
};

struct MishOp {
  explicit MishOp(const Node&) {}
  template <typename T>
  T operator()(T v) const { return v * std::tanh(softplus(v)); }
};

struct ShrinkOp {
  double bias, lambd;
  explicit ShrinkOp(const Node& n)
      : bias(n.attr_float("bias", 0.0f)), lambd(n.attr_float("lambd", 0.5f)) {}
  template <typename T>
  T operator()(T v) const {
    const T b = static_cast<T>(bias), l = static_cast<T>(lambd);
    if (v < -l) return v + b;
    if (v > l) return v - b;
    return std::isnan(v) ? v : T(0);
  }
};

template <typename Op, typename List>
void activation_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Op op(ctx.node());
  dispatch<List>(ctx, x.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    map_unary<S, S>(x, y, op);
  });
}

// Reads a Clip bound: a scalar (one element) of the input's type.
template <typename S>
compute_t<S> clip_bound(const KernelContext& ctx, size_t index, compute_t<S> fallback) {
  const Tensor* t = ctx.optional_input(index);
  if (!t) return fallback;
  if (t->dtype() != Elem<S>::dtype)
    ctx.fail(index == 1 ? "min" : "max", " is ", dtype_name(t->dtype()), " but input is ",
             dtype_name(Elem<S>::dtype));
  if (t->numel() != 1)
    ctx.fail(index == 1 ? "min" : "max", " must be a scalar, got shape ", shape_to_string(t->shape()));
  return load(data_as<S>(*t)[0]);
}

// Clip: min/max attributes before opset 11, optional scalar inputs from 11. When
// min > max every element becomes max (the spec's rule; min(max(x, lo), hi) gives it).
void clip_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<NumericTypes>(ctx, x.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    C lo = std::numeric_limits<C>::lowest(), hi = std::numeric_limits<C>::max();
    if constexpr (std::is_floating_point_v<C>) {
      lo = -std::numeric_limits<C>::infinity();
      hi = std::numeric_limits<C>::infinity();
    }
    if (ctx.node().opset() < 11) {
      if (ctx.node().has_attr("min")) lo = static_cast<C>(ctx.node().attr_float("min", 0));
      if (ctx.node().has_attr("max")) hi = static_cast<C>(ctx.node().attr_float("max", 0));
    } else {
      lo = clip_bound<S>(ctx, 1, lo);
      hi = clip_bound<S>(ctx, 2, hi);
    }
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    map_unary<S, S>(x, y, [&](C v) -> C {
      if constexpr (std::is_floating_point_v<C>)
        if (std::isnan(v)) return v;
      return std::min(std::max(v, lo), hi);
    });
  });
}

}  // namespace

void register_elementwise_activation(KernelRegistry& r) {
  r.add("", "Relu", activation_kernel<ReluOp, SignedTypes>);
  r.add("", "Sigmoid", activation_kernel<SigmoidOp, FloatTypes>);
  r.add("", "Gelu", activation_kernel<GeluOp, FloatTypes>);
  r.add("", "Elu", activation_kernel<EluOp, FloatTypes>);
  r.add("", "Selu", activation_kernel<SeluOp, FloatTypes>);
  r.add("", "LeakyRelu", activation_kernel<LeakyReluOp, FloatTypes>);
  r.add("", "HardSigmoid", activation_kernel<HardSigmoidOp, FloatTypes>);
  r.add("", "HardSwish", activation_kernel<HardSwishOp, FloatTypes>);
  r.add("", "ThresholdedRelu", activation_kernel<ThresholdedReluOp, FloatTypes>);
  r.add("", "Celu", activation_kernel<CeluOp, FloatTypes>);
  r.add("", "Softplus", activation_kernel<SoftplusOp, FloatTypes>);
  r.add("", "Softsign", activation_kernel<SoftsignOp, FloatTypes>);
  r.add("", "Mish", activation_kernel<MishOp, FloatTypes>);
  r.add("", "Shrink", activation_kernel<ShrinkOp, FloatTypes>);
  r.add("", "Clip", clip_kernel);
}

}  // namespace octet::ref
