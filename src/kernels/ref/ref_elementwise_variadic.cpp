// Reference kernels: variadic elementwise ops with multidirectional broadcasting across
// all inputs (Min, Max, Sum, Mean) and Where.
//
// Min/Max propagate NaN (np.minimum/np.maximum semantics). Sum and Mean accumulate in the
// compute type and round once, rather than after every pairwise add.
#include <cmath>

#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_elementwise.h"

namespace octet::ref {
namespace {

std::vector<const Tensor*> all_inputs(const KernelContext& ctx) {
  std::vector<const Tensor*> ins;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) ins.push_back(&ctx.input(i));
  if (ins.empty()) ctx.fail("needs at least one input");
  for (const Tensor* t : ins)
    if (t->dtype() != ins[0]->dtype())
      ctx.fail("inputs have different dtypes: ", dtype_name(ins[0]->dtype()), " and ",
               dtype_name(t->dtype()));
  return ins;
}

enum class Fold { Min, Max, Sum, Mean };

template <Fold kind, typename List>
void variadic_kernel(KernelContext& ctx) {
  const std::vector<const Tensor*> ins = all_inputs(ctx);
  dispatch<List>(ctx, ins[0]->dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    const Shape shape = broadcast_or_fail(ctx, ins);
    Tensor& out = ctx.allocate_output(0, ins[0]->dtype(), shape);
    std::vector<const Shape*> shapes;
    std::vector<const S*> data;
    for (const Tensor* t : ins) {
      shapes.push_back(&t->shape());
      data.push_back(data_as<S>(*t));
    }
    S* po = data_as<S>(out);
    BroadcastWalker w(shape, shapes);
    for (int64_t i = 0; i < out.numel(); ++i, w.next()) {
      C acc = load(data[0][w.offset(0)]);
      for (size_t k = 1; k < data.size(); ++k) {
        const C v = load(data[k][w.offset(k)]);
        if constexpr (kind == Fold::Sum || kind == Fold::Mean) {
          acc += v;
        } else {
          if constexpr (std::is_floating_point_v<C>) {
            if (std::isnan(acc)) continue;
            if (std::isnan(v)) { acc = v; continue; }
          }
          acc = kind == Fold::Min ? std::min(acc, v) : std::max(acc, v);
        }
      }
      if constexpr (kind == Fold::Mean) acc /= static_cast<C>(data.size());
      po[i] = store<S>(acc);
    }
  });
}

// Where(condition, X, Y): X where condition is true, else Y; all three broadcast.
void where_kernel(KernelContext& ctx) {
  const Tensor& cond = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  dispatch<Types<bool>>(ctx, cond.dtype(), "condition", [](auto) {});
  if (x.dtype() != y.dtype())
    ctx.fail("X and Y have different dtypes: ", dtype_name(x.dtype()), " and ", dtype_name(y.dtype()));
  const Shape shape = broadcast_or_fail(ctx, {&cond, &x, &y});
  const bool* pc = data_as<bool>(cond);
  BroadcastWalker w(shape, {&cond.shape(), &x.shape(), &y.shape()});
  if (x.dtype() == DType::String) {
    std::vector<std::string> values;
    for (int64_t i = 0; i < shape_numel(shape); ++i, w.next())
      values.push_back(pc[w.offset(0)] ? x.string_data()[w.offset(1)] : y.string_data()[w.offset(2)]);
    ctx.set_output(0, Tensor::strings(shape, std::move(values)));
    return;
  }
  dispatch<NumericBoolTypes>(ctx, x.dtype(), "X", [&](auto tag) {
    using S = typename decltype(tag)::type;
    Tensor& out = ctx.allocate_output(0, x.dtype(), shape);
    const S* px = data_as<S>(x);
    const S* py = data_as<S>(y);
    S* po = data_as<S>(out);
    for (int64_t i = 0; i < out.numel(); ++i, w.next())
      po[i] = pc[w.offset(0)] ? px[w.offset(1)] : py[w.offset(2)];
  });
}

}  // namespace

void register_elementwise_variadic(KernelRegistry& r) {
  r.add("", "Min", variadic_kernel<Fold::Min, NumericTypes>);
  r.add("", "Max", variadic_kernel<Fold::Max, NumericTypes>);
  r.add("", "Sum", variadic_kernel<Fold::Sum, FloatTypes>);
  r.add("", "Mean", variadic_kernel<Fold::Mean, FloatTypes>);
  r.add("", "Where", where_kernel);
}

}  // namespace octet::ref
