// ReduceSum, ReduceMean and ReduceMax over float32 when the reduced axes are one contiguous
// run of dims (a BERT's mean pooling over the sequence, a LayerNorm written out over the
// last axis, the row max of a softmax written out, as octet quantize --attention int8
// writes it): the input is [outer, R, inner], and each output sums its R inputs in double
// in the reference's order (increasing flat index), then rounds once, so the results are
// the reference's bit for bit. The max keeps the reference's rules too: it starts from
// -inf, the first NaN met wins, and of equal values the earlier stays (-0 before +0). The reference walks every element through a broadcast index
// and a double conversion (~10 ns each); here the inner loop runs over `inner` contiguous
// accumulators and vectorizes. Anything else (other types, scattered axes, the empty-axes
// forms) runs the reference kernel, which also reports bad axes.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/simd_kernels.h"
#include "kernels/ref/ref_math_reduce.h"

namespace octet::cpu {
namespace {

struct Runs {
  int64_t outer = 1, reduced = 1, inner = 1;
  std::vector<int64_t> out_shape;
};

// The axes as the node states them (attribute up to opset 12 for ReduceSum, 17 for
// ReduceMean; the second input after), or nullopt for the forms left to the reference.
std::optional<std::vector<int64_t>> stated_axes(const KernelContext& ctx) {
  const Node& node = ctx.node();
  if (!ref::reduce_axes_from_input(node)) {
    std::vector<int64_t> axes = node.attr_ints("axes", {});
    return axes.empty() ? std::nullopt : std::optional(axes);
  }
  const Tensor* t = ctx.optional_input(1);
  if (!t || t->dtype() != DType::Int64 || t->numel() == 0) return std::nullopt;
  return t->to_int64_vector();
}

// [outer, reduced, inner] when the normalized axes are distinct and contiguous.
std::optional<Runs> runs_of(const KernelContext& ctx, const Tensor& x) {
  auto axes = stated_axes(ctx);
  if (!axes) return std::nullopt;
  const int64_t rank = x.rank();
  for (int64_t& a : *axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes->begin(), axes->end());
  if (std::adjacent_find(axes->begin(), axes->end()) != axes->end()) return std::nullopt;
  if (axes->back() - axes->front() + 1 != static_cast<int64_t>(axes->size())) return std::nullopt;
  const bool keepdims = ctx.node().attr_int("keepdims", 1) != 0;
  Runs r;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t n = x.shape()[d];
    const bool reduced = d >= axes->front() && d <= axes->back();
    if (reduced) r.reduced *= n;
    else if (d < axes->front()) r.outer *= n;
    else r.inner *= n;
    if (!reduced) r.out_shape.push_back(n);
    else if (keepdims) r.out_shape.push_back(1);
  }
  return r;
}

void reduce_max(KernelContext& ctx, const Tensor& x, const Runs& r) {
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Float32, r.out_shape);
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  const int64_t reduced = r.reduced, inner = r.inner;
  parallel_ranges(ctx, r.outer, x.numel(), [&](int64_t begin, int64_t end) {
    for (int64_t o = begin; o < end; ++o) {
      float* out = py + o * inner;
      std::fill(out, out + inner, -std::numeric_limits<float>::infinity());
      for (int64_t k = 0; k < reduced; ++k) {
        const float* row = px + (o * reduced + k) * inner;
        for (int64_t i = 0; i < inner; ++i) {
          const float a = out[i], v = row[i];
          out[i] = std::isnan(a) ? a : std::isnan(v) ? v : (a < v ? v : a);
        }
      }
    }
  });
}

void reduce_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DType::Float32) return run_reference(ctx);
  const std::optional<Runs> r = runs_of(ctx, x);
  if (!r) return run_reference(ctx);
  const bool mean = ctx.node().op_type() == "ReduceMean";
  if (ctx.node().op_type() == "ReduceMax") return reduce_max(ctx, x, *r);
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Float32, r->out_shape);
  const float* px = x.data<float>();
  float* py = y.mutable_data<float>();
  const int64_t outer = r->outer, reduced = r->reduced, inner = r->inner;
  // Tasks: one per outer index, or inner chunks when there is a single outer index.
  const int64_t chunk = outer > 1 ? inner : std::max<int64_t>(1, std::min<int64_t>(inner, 1024));
  const int64_t chunks = (inner + chunk - 1) / chunk;
  parallel_ranges(ctx, outer * chunks, x.numel(), [&](int64_t begin, int64_t end) {
    std::vector<double> acc(static_cast<size_t>(chunk));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t o = task / chunks, i0 = (task % chunks) * chunk, n = std::min(chunk, inner - i0);
      std::fill(acc.begin(), acc.begin() + n, 0.0);
      for (int64_t k = 0; k < reduced; ++k) {
        const float* row = px + (o * reduced + k) * inner + i0;
        for (int64_t i = 0; i < n; ++i) acc[i] += static_cast<double>(row[i]);
      }
      float* out = py + o * inner + i0;
      for (int64_t i = 0; i < n; ++i)
        out[i] = static_cast<float>(mean ? acc[i] / static_cast<double>(reduced) : acc[i]);
    }
  });
}

}  // namespace

void register_cpu_reduce(KernelRegistry& r) {
  r.add("", "ReduceSum", reduce_kernel);
  r.add("", "ReduceMean", reduce_kernel);
  r.add("", "ReduceMax", reduce_kernel);
}

}  // namespace octet::cpu
