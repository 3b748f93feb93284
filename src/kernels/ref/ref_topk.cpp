// Reference kernel: TopK, the k largest (largest=1) or smallest elements along `axis` with
// their int64 indices, best first.
//
// Order: ties go to the lower index, as the spec requires and the node tests check. NaN
// ranks above every number and equal to another NaN, numpy's sort order (the ONNX
// reference sorts with numpy): NaNs come first with largest=1 and last with largest=0.
// sorted=0 leaves the order unspecified; this kernel returns the sorted one.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/ref/ref_math_broadcast.h"
#include "kernels/ref/ref_math_dtype.h"
#include "kernels/ref/ref_math_reduce.h"

namespace octet::ref {
namespace {

// k: the 1-element int64 input K from opset 10, the attribute before.
int64_t read_k(const KernelContext& ctx) {
  if (const Tensor* t = ctx.optional_input(1)) {
    if (t->dtype() != DType::Int64 || t->rank() != 1 || t->numel() != 1)
      ctx.fail("K must be a 1-D int64 tensor of one element, got ", t->describe());
    return t->data<int64_t>()[0];
  }
  if (!ctx.node().has_attr("k")) ctx.fail("k is missing: neither input K nor attribute 'k' is given");
  return ctx.node().attr_int("k", 0);
}

void topk_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  dispatch<NumericTypes>(ctx, x.dtype(), "input 0", [&](auto tag) {
    using S = typename decltype(tag)::type;
    using C = compute_t<S>;
    const Node& node = ctx.node();
    if (x.rank() == 0) ctx.fail("X must have rank >= 1, got ", x.describe());
    const int64_t axis = normalize_axis(ctx, node.attr_int("axis", -1), x.rank());
    const bool largest = node.attr_int("largest", 1) != 0;
    const Shape& shape = x.shape();
    const int64_t n = shape[axis];
    const int64_t k = read_k(ctx);
    if (k < 0 || k > n) ctx.fail("k = ", k, " is out of range [0, ", n, "] for axis ", axis, " of ", x.describe());
    Shape out_shape = shape;
    out_shape[axis] = k;
    Tensor& values = ctx.allocate_output_uninitialized(0, x.dtype(), out_shape);
    Tensor& indices = ctx.allocate_output_uninitialized(1, DType::Int64, out_shape);
    const int64_t outer = product_of_dims(shape, 0, axis);
    const int64_t inner = product_of_dims(shape, axis + 1, shape.size());
    const S* in = data_as<S>(x);
    S* pv = data_as<S>(values);
    int64_t* pi = indices.mutable_data<int64_t>();
    auto is_nan = [](C v) {
      if constexpr (std::is_floating_point_v<C>) return std::isnan(v);
      else return false;
    };
    // a ranks strictly above b (NaN above numbers).
    auto above = [&](C a, C b) { return is_nan(b) ? false : (is_nan(a) || a > b); };
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::vector<C> line(static_cast<size_t>(n));
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t base = o * n * inner + i;
        for (int64_t j = 0; j < n; ++j) line[j] = load(in[base + j * inner]);
        std::iota(order.begin(), order.end(), 0);
        // A strict total order: by value (descending or ascending), then by index.
        auto before = [&](int64_t a, int64_t b) {
          const C va = line[a], vb = line[b];
          const bool a_first = largest ? above(va, vb) : above(vb, va);
          const bool b_first = largest ? above(vb, va) : above(va, vb);
          return a_first || (!b_first && a < b);
        };
        std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
        const int64_t out_base = o * k * inner + i;
        for (int64_t j = 0; j < k; ++j) {
          pv[out_base + j * inner] = in[base + order[j] * inner];
          pi[out_base + j * inner] = order[j];
        }
      }
    }
  });
}

}  // namespace

void register_sorting(KernelRegistry& r) { r.add("", "TopK", topk_kernel); }

}  // namespace octet::ref
