// Reference kernels: reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/
// LogSumExp) and ArgMax/ArgMin.
//
// Axes come from the `axes` attribute up to opset 12 for ReduceSum and up to opset 17 for
// the others, and from the optional second input after that. No axes means "all axes",
// unless noop_with_empty_axes=1 (input-form opsets only), which makes the op the identity.
// Floats accumulate in double and round once; integers accumulate in 64 bits and wrap
// like numpy. Reducing an empty set gives the ONNX identity element: 0 for sums, 1 for
// ReduceProd, -inf / the type's lowest for ReduceMax, +inf / highest for ReduceMin,
// -inf for ReduceLogSum(Exp), NaN for a float ReduceMean (0 for an integer one).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_broadcast.h"
#include "kernels/ref/ref_math_dtype.h"
#include "kernels/ref/ref_math_reduce.h"

namespace octet::ref {
namespace {

struct ReducePlan {
  bool noop = false;        // noop_with_empty_axes with no axes: output = input
  Shape keep_shape;         // input shape with reduced dims set to 1
  Shape out_shape;          // keep_shape, or without the reduced dims when keepdims=0
  int64_t count = 1;        // elements folded into each output
};

ReducePlan plan_reduce(const KernelContext& ctx, const Tensor& x) {
  const Node& node = ctx.node();
  const bool axes_from_input = reduce_axes_from_input(node);
  std::vector<int64_t> axes;
  if (axes_from_input) {
    if (const Tensor* t = ctx.optional_input(1)) {
      if (t->dtype() != DType::Int64) ctx.fail("axes must be int64, got ", dtype_name(t->dtype()));
      axes = t->to_int64_vector();
    }
  } else {
    axes = node.attr_ints("axes", {});
  }
  const bool keepdims = node.attr_int("keepdims", 1) != 0;
  const bool noop_empty = axes_from_input && node.attr_int("noop_with_empty_axes", 0) != 0;

  ReducePlan plan;
  const int64_t rank = x.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  if (axes.empty() && noop_empty) {
    plan.noop = true;
    return plan;
  }
  for (int64_t a : axes) {
    const int64_t n = normalize_axis(ctx, a, rank, "reduction axis");
    if (reduced[n]) ctx.fail("reduction axis ", a, " is repeated");
    reduced[n] = true;
  }
  for (int64_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      plan.count *= x.shape()[d];
      plan.keep_shape.push_back(1);
      if (keepdims) plan.out_shape.push_back(1);
    } else {
      plan.keep_shape.push_back(x.shape()[d]);
      plan.out_shape.push_back(x.shape()[d]);
    }
  }
  return plan;
}

// Folds every input element into its output's accumulator.
template <typename S, typename Acc, typename Step>
std::vector<Acc> fold(const Tensor& x, const ReducePlan& plan, Acc init, Step step) {
  std::vector<Acc> acc(static_cast<size_t>(shape_numel(plan.keep_shape)), init);
  const S* in = data_as<S>(x);
  BroadcastWalker w(x.shape(), {&plan.keep_shape});
  for (int64_t i = 0; i < x.numel(); ++i, w.next()) {
    const size_t j = static_cast<size_t>(w.offset(0));
    acc[j] = step(acc[j], load(in[i]));  // not a reference: Acc may be bool
  }
  return acc;
}

enum class Reduce { Sum, Mean, Prod, Max, Min, L1, L2, SumSquare, LogSum, LogSumExp };

template <Reduce kind, typename List>
void reduce_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<List>(ctx, x.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    const ReducePlan plan = plan_reduce(ctx, x);
    if (plan.noop) {
      ctx.set_output(0, x);
      return;
    }
    Tensor& out = ctx.allocate_output(0, x.dtype(), plan.out_shape);
    S* po = data_as<S>(out);
    const size_t n = static_cast<size_t>(out.numel());

    if constexpr (kind == Reduce::Max || kind == Reduce::Min) {
      // Start from the identity so an empty set gives it; NaN wins over everything.
      C init;
      if constexpr (std::is_same_v<C, bool>) init = kind == Reduce::Min;
      else if constexpr (std::is_floating_point_v<C>)
        init = kind == Reduce::Max ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::infinity();
      else init = kind == Reduce::Max ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
      auto acc = fold<S>(x, plan, init, [](C a, C v) -> C {
        if constexpr (std::is_floating_point_v<C>) {
          if (std::isnan(a)) return a;
          if (std::isnan(v)) return v;
        }
        return kind == Reduce::Max ? std::max(a, v) : std::min(a, v);
      });
      for (size_t j = 0; j < n; ++j) po[j] = store<S>(acc[j]);
    } else if constexpr (is_int_storage_v<S> &&
                         (kind == Reduce::Sum || kind == Reduce::Mean || kind == Reduce::Prod ||
                          kind == Reduce::L1 || kind == Reduce::SumSquare)) {
      // Exact integer arithmetic, wrapping in 64 bits (then to the type's width).
      using Acc = std::conditional_t<std::is_signed_v<S>, int64_t, uint64_t>;
      auto acc = fold<S>(x, plan, Acc(kind == Reduce::Prod ? 1 : 0), [](Acc a, C v) -> Acc {
        const Acc w = static_cast<Acc>(v);
        if constexpr (kind == Reduce::Prod) return wrap_mul(a, w);
        if constexpr (kind == Reduce::SumSquare) return wrap_add(a, wrap_mul(w, w));
        if constexpr (kind == Reduce::L1)
          return wrap_add(a, (std::is_signed_v<S> && v < 0) ? wrap_sub<Acc>(0, w) : w);
        return wrap_add(a, w);
      });
      for (size_t j = 0; j < n; ++j) {
        Acc v = acc[j];
        if constexpr (kind == Reduce::Mean) v = plan.count ? static_cast<Acc>(v / static_cast<Acc>(plan.count)) : 0;
        po[j] = static_cast<S>(v);
      }
    } else {
      // Everything else in double: floats, and integer L2/LogSum/LogSumExp.
      std::vector<double> shift(n, 0.0);
      if constexpr (kind == Reduce::LogSumExp) {
        // Shift by the largest finite value so exp never overflows.
        auto mx = fold<S>(x, plan, -INFINITY, [](double a, C v) {
          const double d = static_cast<double>(v);
          return std::isfinite(d) ? std::max(a, d) : a;
        });
        for (size_t j = 0; j < n; ++j) shift[j] = std::isfinite(mx[j]) ? mx[j] : 0.0;
      }
      std::vector<double> acc(n, kind == Reduce::Prod ? 1.0 : 0.0);
      const S* in = data_as<S>(x);
      BroadcastWalker w(x.shape(), {&plan.keep_shape});
      for (int64_t i = 0; i < x.numel(); ++i, w.next()) {
        const size_t j = static_cast<size_t>(w.offset(0));
        const double v = static_cast<double>(load(in[i]));
        switch (kind) {
          case Reduce::Prod: acc[j] *= v; break;
          case Reduce::L1: acc[j] += std::fabs(v); break;
          case Reduce::L2: case Reduce::SumSquare: acc[j] += v * v; break;
          case Reduce::LogSumExp: acc[j] += std::exp(v - shift[j]); break;
          default: acc[j] += v; break;
        }
      }
      for (size_t j = 0; j < n; ++j) {
        double r = acc[j];
        switch (kind) {
          case Reduce::Mean: r /= static_cast<double>(plan.count); break;
          case Reduce::L2: r = std::sqrt(r); break;
          case Reduce::LogSum: r = std::log(r); break;
          case Reduce::LogSumExp: r = std::log(r) + shift[j]; break;
          default: break;
        }
        if constexpr (is_float_storage_v<S>) po[j] = store_double<S>(r);
        else po[j] = float_to_int<S>(r);
      }
    }
  });
}

// ArgMax/ArgMin along one axis. Ties pick the first index, or the last with
// select_last_index=1; NaN counts as the extreme (np.argmax semantics).
template <bool is_max>
void arg_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<NumericTypes>(ctx, x.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    const Node& node = ctx.node();
    const int64_t axis = normalize_axis(ctx, node.attr_int("axis", 0), x.rank());
    const bool keepdims = node.attr_int("keepdims", 1) != 0;
    const bool last = node.attr_int("select_last_index", 0) != 0;
    const Shape& shape = x.shape();
    const int64_t n = shape[axis];
    if (n == 0) ctx.fail("cannot take ", node.op_type(), " over axis ", axis, " of size 0");
    Shape out_shape;
    for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d)
      if (d != axis) out_shape.push_back(shape[d]);
      else if (keepdims) out_shape.push_back(1);
    const int64_t outer = product_of_dims(shape, 0, axis);
    const int64_t inner = product_of_dims(shape, axis + 1, shape.size());
    Tensor& out = ctx.allocate_output(0, DType::Int64, out_shape);
    int64_t* po = out.mutable_data<int64_t>();
    const S* in = data_as<S>(x);
    auto is_nan = [](C v) {
      if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
      else return false;
    };
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const S* line = in + o * n * inner + i;
        int64_t best = 0;
        C best_v = load(line[0]);
        for (int64_t k = 1; k < n; ++k) {
          const C v = load(line[k * inner]);
          bool take;
          if (is_nan(best_v)) take = last && is_nan(v);
          else if (is_nan(v)) take = true;
          else take = (is_max ? v > best_v : v < best_v) || (last && v == best_v);
          if (take) {
            best = k;
            best_v = v;
          }
        }
        po[o * inner + i] = best;
      }
    }
  });
}

}  // namespace

void register_reductions(KernelRegistry& r) {
  using SumTypes = ConcatTypes<FloatTypes, Types<int32_t, int64_t, uint32_t, uint64_t>>::type;
  using MinMaxTypes = ConcatTypes<SumTypes, Types<int8_t, uint8_t, bool>>::type;
  r.add("", "ReduceSum", reduce_kernel<Reduce::Sum, SumTypes>);
  r.add("", "ReduceMean", reduce_kernel<Reduce::Mean, SumTypes>);
  r.add("", "ReduceProd", reduce_kernel<Reduce::Prod, SumTypes>);
  r.add("", "ReduceMax", reduce_kernel<Reduce::Max, MinMaxTypes>);
  r.add("", "ReduceMin", reduce_kernel<Reduce::Min, MinMaxTypes>);
  r.add("", "ReduceL1", reduce_kernel<Reduce::L1, SumTypes>);
  r.add("", "ReduceL2", reduce_kernel<Reduce::L2, SumTypes>);
  r.add("", "ReduceSumSquare", reduce_kernel<Reduce::SumSquare, SumTypes>);
  r.add("", "ReduceLogSum", reduce_kernel<Reduce::LogSum, SumTypes>);
  r.add("", "ReduceLogSumExp", reduce_kernel<Reduce::LogSumExp, SumTypes>);
  r.add("", "ArgMax", arg_kernel<true>);
  r.add("", "ArgMin", arg_kernel<false>);
}

}  // namespace octet::ref
