// Reference kernels: two-input elementwise ops with ONNX multidirectional broadcasting:
// arithmetic (Add, Sub, Mul, Div, Pow, Mod, PRelu), comparisons, logic and bitwise ops.
//
// Integer semantics (decided here, matching onnxruntime's C++ kernels and numpy's
// astype where the spec is silent):
// - Add/Sub/Mul wrap on overflow (two's complement), never undefined behaviour.
// - Div truncates toward zero (C++ '/', as onnxruntime does); INT_MIN / -1 wraps to
//   INT_MIN; division by zero is an error naming the node.
// - Mod with fmod=0 takes the divisor's sign (Python/numpy '%'); with fmod=1 the
//   dividend's (C fmod). Floats with fmod=0 follow np.mod (allowed from opset 28).
// - Pow with an integer base and a negative integer exponent gives the truncated real
//   result (1, -1 or 0), as onnxruntime's std::pow + cast does.
#include <cmath>
#include <cstdint>
#include <functional>

#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_elementwise.h"

namespace octet::ref {
namespace {

void require_same_dtype(const KernelContext& ctx, const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype())
    ctx.fail("inputs have different dtypes: ", dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
}

// Kernel for ops whose output has the inputs' dtype: Op::apply(ctx, a, b) on compute values.
template <typename Op, typename List>
void same_type_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  require_same_dtype(ctx, a, b);
  dispatch<List>(ctx, a.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    map_binary<S, S, S>(ctx, a, b, [&](C x, C y) -> C { return Op::apply(ctx, x, y); });
  });
}

struct AddOp {
  template <typename T>
  static T apply(const KernelContext&, T a, T b) {
    if constexpr (std::is_integral_v<T>) return wrap_add(a, b);
    else return a + b;
  }
};
struct SubOp {
  template <typename T>
  static T apply(const KernelContext&, T a, T b) {
    if constexpr (std::is_integral_v<T>) return wrap_sub(a, b);
    else return a - b;
  }
};
struct MulOp {
  template <typename T>
  static T apply(const KernelContext&, T a, T b) {
    if constexpr (std::is_integral_v<T>) return wrap_mul(a, b);
    else return a * b;
  }
};
struct DivOp {
  template <typename T>
  static T apply(const KernelContext& ctx, T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) ctx.fail("integer division by zero");
      if constexpr (std::is_signed_v<T>)
        if (b == T(-1)) return wrap_sub<T>(0, a);  // INT_MIN / -1 overflows
      return static_cast<T>(a / b);
    } else {
      return a / b;
    }
  }
};

// fmod=0 (numpy '%'): the result takes the divisor's sign.
template <typename T>
T floor_mod(const KernelContext& ctx, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) ctx.fail("integer modulo by zero");
    if constexpr (std::is_signed_v<T>) {
      if (b == T(-1)) return 0;
      T r = static_cast<T>(a % b);
      if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
      return r;
    } else {
      return static_cast<T>(a % b);
    }
  } else {
    T r = std::fmod(a, b);
    if (r != 0) {
      if ((r < 0) != (b < 0)) r += b;
    } else {
      r = std::copysign(T(0), b);
    }
    return r;
  }
}

// fmod=1 (C fmod): the result takes the dividend's sign.
template <typename T>
T trunc_mod(const KernelContext& ctx, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) ctx.fail("integer modulo by zero");
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return 0;
    return static_cast<T>(a % b);
  } else {
    return std::fmod(a, b);
  }
}

void mod_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  require_same_dtype(ctx, a, b);
  const int64_t fmod = ctx.node().attr_int("fmod", 0);
  if (fmod != 0 && fmod != 1) ctx.fail("fmod must be 0 or 1, got ", fmod);
  dispatch<NumericTypes>(ctx, a.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    map_binary<S, S, S>(ctx, a, b, [&](C x, C y) -> C {
      return fmod ? trunc_mod(ctx, x, y) : floor_mod(ctx, x, y);
    });
  });
}

// Integer power by squaring, wrapping on overflow.
template <typename T>
T int_pow(T base, int64_t exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>)
      if (base == -1) return (exp % 2 == 0) ? 1 : -1;
    return 0;
  }
  T result = 1;
  while (exp > 0) {
    if (exp & 1) result = wrap_mul(result, base);
    base = wrap_mul(base, base);
    exp >>= 1;
  }
  return result;
}

// Pow: the base decides the output type; the exponent may be any numeric type.
void pow_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  using BaseTypes = Types<float, Float16, BFloat16, double, int32_t, int64_t>;
  dispatch<BaseTypes>(ctx, a.dtype(), "input 0 (base)", [&](auto base_tag) {
    using SA = typename decltype(base_tag)::type;
    dispatch<NumericTypes>(ctx, b.dtype(), "input 1 (exponent)", [&](auto exp_tag) {
      using SB = typename decltype(exp_tag)::type;
      using CA = compute_t<SA>;
      using CB = compute_t<SB>;
      const Shape shape = broadcast_or_fail(ctx, {&a, &b});
      Tensor& out = ctx.allocate_output(0, a.dtype(), shape);
      const SA* pa = data_as<SA>(a);
      const SB* pb = data_as<SB>(b);
      SA* po = data_as<SA>(out);
      BroadcastWalker w(shape, {&a.shape(), &b.shape()});
      for (int64_t i = 0; i < out.numel(); ++i, w.next()) {
        const CA x = load(pa[w.offset(0)]);
        const CB y = load(pb[w.offset(1)]);
        // Nested rather than `integral<CA> && integral<CB>`: clang 14 (the fuzz build)
        // instantiates that branch for a float base and rejects int_pow's integer result.
        if constexpr (std::is_integral_v<CA>) {
          if constexpr (std::is_integral_v<CB>) {
            // uint64 exponents beyond int64 behave like huge positive ones.
            const int64_t e = (std::is_unsigned_v<CB> && y > static_cast<CB>(INT64_MAX))
                                  ? INT64_MAX : static_cast<int64_t>(y);
            po[i] = int_pow<CA>(x, e);
          } else {
            po[i] = float_to_int<CA>(std::pow(static_cast<double>(x), static_cast<double>(y)));
          }
        } else {
          po[i] = store_double<SA>(std::pow(static_cast<double>(x), static_cast<double>(y)));
        }
      }
    });
  });
}

// PRelu: slope broadcasts unidirectionally to X.
void prelu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& slope = ctx.input(1);
  require_same_dtype(ctx, x, slope);
  const Shape shape = broadcast_or_fail(ctx, {&x, &slope});
  if (shape != x.shape())
    ctx.fail("slope shape ", shape_to_string(slope.shape()), " does not broadcast to X shape ",
             shape_to_string(x.shape()));
  dispatch<SignedTypes>(ctx, x.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    map_binary<S, S, S>(ctx, x, slope, [](C v, C s) -> C {
      if constexpr (std::is_integral_v<C>) return v < 0 ? wrap_mul(v, s) : v;
      else return v < 0 ? v * s : v;
    });
  });
}

// ---- comparisons and logic: bool outputs ----

template <typename Cmp, typename List>
void compare_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  require_same_dtype(ctx, a, b);
  if constexpr (std::is_same_v<List, NumericBoolTypes>) {
    // Equal also takes strings (opset 19).
    if (a.dtype() == DType::String) {
      const Shape shape = broadcast_or_fail(ctx, {&a, &b});
      Tensor& out = ctx.allocate_output(0, DType::Bool, shape);
      bool* po = data_as<bool>(out);
      BroadcastWalker w(shape, {&a.shape(), &b.shape()});
      for (int64_t i = 0; i < out.numel(); ++i, w.next())
        po[i] = a.string_data()[w.offset(0)] == b.string_data()[w.offset(1)];
      return;
    }
  }
  dispatch<List>(ctx, a.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    map_binary<S, S, bool>(ctx, a, b, [](C x, C y) { return Cmp{}(x, y); });
  });
}

template <typename Fn>
void bool_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  require_same_dtype(ctx, a, b);
  dispatch<Types<bool>>(ctx, a.dtype(), "input 0", [&](auto) {
    map_binary<bool, bool, bool>(ctx, a, b, [](bool x, bool y) { return Fn{}(x, y); });
  });
}

struct LogicalXor {
  bool operator()(bool a, bool b) const { return a != b; }
};

template <typename Fn>
void bitwise_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  require_same_dtype(ctx, a, b);
  dispatch<IntTypes>(ctx, a.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    map_binary<S, S, S>(ctx, a, b, [](S x, S y) { return static_cast<S>(Fn{}(x, y)); });
  });
}

void bitwise_not_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<IntTypes>(ctx, x.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    Tensor& y = ctx.allocate_output(0, x.dtype(), x.shape());
    map_unary<S, S>(x, y, [](S v) { return static_cast<S>(~v); });
  });
}

// BitShift: unsigned types, and signed ones from opset 28 (arithmetic right shift). A
// shift that is negative or not smaller than the bit width leaves only the sign fill:
// -1 for a right shift of a negative value, 0 otherwise.
void bitshift_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  require_same_dtype(ctx, a, b);
  const std::string dir = ctx.node().attr_string("direction", "");
  if (dir != "LEFT" && dir != "RIGHT") ctx.fail("direction must be LEFT or RIGHT, got \"", dir, "\"");
  const bool left = dir == "LEFT";
  dispatch<IntTypes>(ctx, a.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using U = std::make_unsigned_t<S>;
    map_binary<S, S, S>(ctx, a, b, [left](S x, S s) -> S {
      const bool negative_x = std::is_signed_v<S> && x < 0;
      // A negative shift converts to a huge unsigned one.
      if (static_cast<uint64_t>(s) >= sizeof(S) * 8) return (!left && negative_x) ? S(-1) : S(0);
      const U ux = static_cast<U>(x);
      if (left) return static_cast<S>(static_cast<U>(ux << s));
      if (!negative_x) return static_cast<S>(static_cast<U>(ux >> s));
      const U shifted = static_cast<U>(static_cast<U>(~ux) >> s);  // shift the complement in zeros
      return static_cast<S>(static_cast<U>(~shifted));
    });
  });
}

}  // namespace

void register_elementwise_binary(KernelRegistry& r) {
  r.add("", "Add", same_type_kernel<AddOp, NumericTypes>);
  r.add("", "Sub", same_type_kernel<SubOp, NumericTypes>);
  r.add("", "Mul", same_type_kernel<MulOp, NumericTypes>);
  r.add("", "Div", same_type_kernel<DivOp, NumericTypes>);
  r.add("", "Mod", mod_kernel);
  r.add("", "Pow", pow_kernel);
  r.add("", "PRelu", prelu_kernel);
  r.add("", "Equal", compare_kernel<std::equal_to<>, NumericBoolTypes>);
  r.add("", "Less", compare_kernel<std::less<>, NumericTypes>);
  r.add("", "Greater", compare_kernel<std::greater<>, NumericTypes>);
  r.add("", "LessOrEqual", compare_kernel<std::less_equal<>, NumericTypes>);
  r.add("", "GreaterOrEqual", compare_kernel<std::greater_equal<>, NumericTypes>);
  r.add("", "And", bool_kernel<std::logical_and<>>);
  r.add("", "Or", bool_kernel<std::logical_or<>>);
  r.add("", "Xor", bool_kernel<LogicalXor>);
  r.add("", "BitwiseAnd", bitwise_kernel<std::bit_and<>>);
  r.add("", "BitwiseOr", bitwise_kernel<std::bit_or<>>);
  r.add("", "BitwiseXor", bitwise_kernel<std::bit_xor<>>);
  r.add("", "BitwiseNot", bitwise_not_kernel);
  r.add("", "BitShift", bitshift_kernel);
}

}  // namespace octet::ref
