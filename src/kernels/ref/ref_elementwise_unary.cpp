// Reference kernels: one-input elementwise math (Sqrt, Exp, Abs, trigonometry, rounding,
// Not, IsNaN/IsInf) and the pass-through ops Identity and Dropout.
//
// Float types compute in their compute type (float32 for float16/bfloat16/float32, double
// for float64) with the C++ library functions; integer variants wrap on overflow like
// numpy (Abs(-128) is -128 for int8).
#include <cmath>

#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_elementwise.h"

namespace octet::ref {
namespace {

// Each op is a small functor built from the node (for attributes) and applied to a
// compute-type value.
#define OCTET_FLOAT_UNARY(Name, expr)                           \
  struct Name {                                                 \
    explicit Name(const Node&) {}                               \
    template <typename T>                                       \
    T operator()(T v) const {                                   \
      return static_cast<T>(expr);                              \
    }                                                           \
  };

OCTET_FLOAT_UNARY(SqrtOp, std::sqrt(v))
OCTET_FLOAT_UNARY(ReciprocalOp, T(1) / v)
OCTET_FLOAT_UNARY(ExpOp, std::exp(v))
OCTET_FLOAT_UNARY(LogOp, std::log(v))
OCTET_FLOAT_UNARY(ErfOp, std::erf(v))
OCTET_FLOAT_UNARY(TanhOp, std::tanh(v))
OCTET_FLOAT_UNARY(FloorOp, std::floor(v))
OCTET_FLOAT_UNARY(CeilOp, std::ceil(v))
OCTET_FLOAT_UNARY(RoundOp, std::nearbyint(v))  // default rounding mode: half to even
OCTET_FLOAT_UNARY(SinOp, std::sin(v))
OCTET_FLOAT_UNARY(CosOp, std::cos(v))
OCTET_FLOAT_UNARY(TanOp, std::tan(v))
OCTET_FLOAT_UNARY(AsinOp, std::asin(v))
OCTET_FLOAT_UNARY(AcosOp, std::acos(v))
OCTET_FLOAT_UNARY(AtanOp, std::atan(v))
OCTET_FLOAT_UNARY(SinhOp, std::sinh(v))
OCTET_FLOAT_UNARY(CoshOp, std::cosh(v))
OCTET_FLOAT_UNARY(AsinhOp, std::asinh(v))
OCTET_FLOAT_UNARY(AcoshOp, std::acosh(v))
OCTET_FLOAT_UNARY(AtanhOp, std::atanh(v))
#undef OCTET_FLOAT_UNARY

struct NegOp {
  explicit NegOp(const Node&) {}
  template <typename T>
  T operator()(T v) const {
    if constexpr (std::is_integral_v<T>) return wrap_sub<T>(0, v);
    else return -v;
  }
};

struct AbsOp {
  explicit AbsOp(const Node&) {}
  template <typename T>
  T operator()(T v) const {
    if constexpr (std::is_unsigned_v<T>) return v;
    else if constexpr (std::is_integral_v<T>) return v < 0 ? wrap_sub<T>(0, v) : v;
    else return std::fabs(v);
  }
};

struct SignOp {
  explicit SignOp(const Node&) {}
  template <typename T>
  T operator()(T v) const {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(v)) return v;
    return static_cast<T>((T(0) < v) - (v < T(0)));
  }
};

template <typename Op, typename List>
void unary_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Op op(ctx.node());
  dispatch<List>(ctx, x.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    map_unary<S, S>(x, y, op);
  });
}

void not_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<Types<bool>>(ctx, x.dtype(), "input 0", [&](auto) {
    Tensor& y = ctx.allocate_output(0, DType::Bool, x.shape());
    map_unary<bool, bool>(x, y, [](bool v) { return !v; });
  });
}

void isnan_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<FloatTypes>(ctx, x.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    Tensor& y = ctx.allocate_output(0, DType::Bool, x.shape());
    map_unary<S, bool>(x, y, [](auto v) { return std::isnan(v); });
  });
}

void isinf_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool neg = ctx.node().attr_int("detect_negative", 1) != 0;
  const bool pos = ctx.node().attr_int("detect_positive", 1) != 0;
  dispatch<FloatTypes>(ctx, x.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    Tensor& y = ctx.allocate_output(0, DType::Bool, x.shape());
    map_unary<S, bool>(x, y, [&](auto v) { return std::isinf(v) && (v > 0 ? pos : neg); });
  });
}

// Dropout at inference is the identity, with an all-true mask. Before opset 12 there is no
// training switch octet honours (opsets 1-6 had is_test, default 0, but an inference
// runtime never drops); from opset 12 the optional training_mode input may ask for random
// dropping, which the oracle refuses unless the ratio is 0 (then it is the identity too).
void dropout_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<FloatTypes>(ctx, x.dtype(), "input 0", [](auto) {});
  const int64_t opset = ctx.node().opset();
  if (opset >= 12) {
    const Tensor* training = ctx.optional_input(2);
    if (training && training->numel() > 0 && training->to_int64_vector()[0] != 0) {
      const Tensor* ratio_t = ctx.optional_input(1);
      const float ratio = ratio_t && ratio_t->numel() > 0 ? ratio_t->to_float_vector()[0] : 0.5f;
      if (ratio != 0.0f)
        ctx.fail("training_mode=true with ratio ", ratio,
                 " drops values at random; the reference kernels only run inference");
    }
  }
  ctx.set_output(0, x);
  if (ctx.num_outputs() > 1 && ctx.output_wanted(1)) {
    // Opset 10 made the mask bool; before that it had the input's type.
    const DType mask_type = opset >= 10 ? DType::Bool : x.dtype();
    Tensor& mask = ctx.allocate_output(1, mask_type, x.shape());
    dispatch<NumericBoolTypes>(ctx, mask_type, "mask", [&](auto tag) {
      using S = typename decltype(tag)::type;
      S* m = data_as<S>(mask);
      for (int64_t i = 0; i < mask.numel(); ++i) m[i] = store<S>(compute_t<S>(1));
    });
  }
}

}  // namespace

void register_elementwise_unary(KernelRegistry& r) {
  r.add("", "Sqrt", unary_kernel<SqrtOp, FloatTypes>);
  r.add("", "Reciprocal", unary_kernel<ReciprocalOp, FloatTypes>);
  r.add("", "Exp", unary_kernel<ExpOp, FloatTypes>);
  r.add("", "Log", unary_kernel<LogOp, FloatTypes>);
  r.add("", "Erf", unary_kernel<ErfOp, FloatTypes>);
  r.add("", "Tanh", unary_kernel<TanhOp, FloatTypes>);
  r.add("", "Floor", unary_kernel<FloorOp, FloatTypes>);
  r.add("", "Ceil", unary_kernel<CeilOp, FloatTypes>);
  r.add("", "Round", unary_kernel<RoundOp, FloatTypes>);
  r.add("", "Sin", unary_kernel<SinOp, FloatTypes>);
  r.add("", "Cos", unary_kernel<CosOp, FloatTypes>);
  r.add("", "Tan", unary_kernel<TanOp, FloatTypes>);
  r.add("", "Asin", unary_kernel<AsinOp, FloatTypes>);
  r.add("", "Acos", unary_kernel<AcosOp, FloatTypes>);
  r.add("", "Atan", unary_kernel<AtanOp, FloatTypes>);
  r.add("", "Sinh", unary_kernel<SinhOp, FloatTypes>);
  r.add("", "Cosh", unary_kernel<CoshOp, FloatTypes>);
  r.add("", "Asinh", unary_kernel<AsinhOp, FloatTypes>);
  r.add("", "Acosh", unary_kernel<AcoshOp, FloatTypes>);
  r.add("", "Atanh", unary_kernel<AtanhOp, FloatTypes>);
  r.add("", "Neg", unary_kernel<NegOp, SignedTypes>);
  r.add("", "Abs", unary_kernel<AbsOp, NumericTypes>);
  r.add("", "Sign", unary_kernel<SignOp, NumericTypes>);
  r.add("", "Not", not_kernel);
  r.add("", "IsNaN", isnan_kernel);
  r.add("", "IsInf", isinf_kernel);
  r.add("", "Dropout", dropout_kernel);  // Identity lives with the shape family
}

}  // namespace octet::ref
