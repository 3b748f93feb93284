// Internal to the elementwise reference family: the loops shared by its files, and the
// per-file registration functions that register_ref_elementwise() calls.
#pragma once

#include <vector>

#include "kernels/kernel.h"
#include "kernels/ref/ref_math_broadcast.h"
#include "kernels/ref/ref_math_dtype.h"

namespace octet::ref {

void register_elementwise_unary(KernelRegistry& r);     // ref_elementwise_unary.cpp
void register_elementwise_activation(KernelRegistry& r);  // ref_elementwise_activation.cpp
void register_elementwise_binary(KernelRegistry& r);    // ref_elementwise_binary.cpp
void register_elementwise_variadic(KernelRegistry& r);  // ref_elementwise_variadic.cpp
void register_elementwise_cast(KernelRegistry& r);      // ref_elementwise_cast.cpp

// out[i] = f(x[i]) over one tensor; In/Out are storage types, f maps compute types.
template <typename In, typename Out, typename F>
void map_unary(const Tensor& x, Tensor& out, F f) {
  const In* in = data_as<In>(x);
  Out* o = data_as<Out>(out);
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) o[i] = store<Out>(f(load(in[i])));
}

// out = f(a, b) with multidirectional broadcasting; allocates output 0 as `out_dtype`.
template <typename A, typename B, typename Out, typename F>
void map_binary(KernelContext& ctx, const Tensor& a, const Tensor& b, F f) {
  const Shape shape = broadcast_or_fail(ctx, {&a, &b});
  Tensor& out = ctx.allocate_output(0, Elem<Out>::dtype, shape);
  const A* pa = data_as<A>(a);
  const B* pb = data_as<B>(b);
  Out* po = data_as<Out>(out);
  const int64_t n = out.numel();
  if (a.shape() == shape && b.shape() == shape) {  // common case: no broadcasting
    for (int64_t i = 0; i < n; ++i) po[i] = store<Out>(f(load(pa[i]), load(pb[i])));
    return;
  }
  BroadcastWalker w(shape, {&a.shape(), &b.shape()});
  for (int64_t i = 0; i < n; ++i, w.next())
    po[i] = store<Out>(f(load(pa[w.offset(0)]), load(pb[w.offset(1)])));
}

}  // namespace octet::ref
