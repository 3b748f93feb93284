// Reference kernels that write elements: ScatterND, ScatterElements and Scatter (its name
// before opset 11). The output is a copy of data in which runs of elements are replaced
// by, or combined (`reduction` add, mul, max, min) with, runs of updates.
//
// Each op only works out *where* its updates go (a list of moves, every index
// range-checked before anything is written); one routine applies the moves. Updates are
// applied in order, so with reduction none a duplicate index leaves the last update, as
// the ONNX reference does (the spec leaves the order undefined).
#include <cmath>
#include <cstring>

#include "kernels/kernel.h"
#include "kernels/ref/ref_math_dtype.h"
#include "kernels/ref/ref_shape_common.h"

namespace octet {
namespace ref_shape {
namespace {

using namespace octet::ref;

enum class Reduction { None, Add, Mul, Max, Min };

Reduction read_reduction(const KernelContext& ctx) {
  const std::string r = ctx.node().attr_string("reduction", "none");
  if (r == "none") return Reduction::None;
  if (r == "add") return Reduction::Add;
  if (r == "mul") return Reduction::Mul;
  if (r == "max") return Reduction::Max;
  if (r == "min") return Reduction::Min;
  ctx.fail("reduction '", r, "' is not one of none, add, mul, max, min");
}

// out[dst + i] = f(out[dst + i], updates[src + i]) for i in [0, n).
struct Move {
  int64_t dst, src, n;
};

// f(a, b) of one reduction. Integers wrap (as numpy does); floats compute in float32 or
// float64 and round once; max/min return NaN when either side is NaN (np.maximum).
template <typename S>
S combine(Reduction r, S a, S b) {
  if constexpr (is_int_storage_v<S>) {
    switch (r) {
      case Reduction::Add: return wrap_add(a, b);
      case Reduction::Mul: return wrap_mul(a, b);
      case Reduction::Max: return a < b ? b : a;
      case Reduction::Min: return b < a ? b : a;
      default: return b;
    }
  } else {
    const auto x = load(a), y = load(b);
    switch (r) {
      case Reduction::Add: return store<S>(x + y);
      case Reduction::Mul: return store<S>(x * y);
      case Reduction::Max: return std::isnan(x) ? a : (std::isnan(y) || x < y ? b : a);
      case Reduction::Min: return std::isnan(x) ? a : (std::isnan(y) || y < x ? b : a);
      default: return b;
    }
  }
}

void apply_moves(KernelContext& ctx, const Tensor& data, const Tensor& updates, const std::vector<Move>& moves) {
  const Reduction reduction = read_reduction(ctx);
  if (updates.dtype() != data.dtype())
    ctx.fail("updates ", updates.describe(), " must have the element type of data ", data.describe());
  if (reduction == Reduction::None) {  // pure data movement: any dtype
    ElementWriter out(data.dtype(), data.shape());
    out.copy(data, 0, 1, 0, data.numel());
    for (const Move& m : moves) out.copy(updates, m.src, 1, m.dst, m.n);
    ctx.set_output(0, out.finish());
    return;
  }
  dispatch<NumericTypes>(ctx, data.dtype(), "data", [&](auto tag) {
    using S = typename decltype(tag)::type;
    Tensor& out = ctx.allocate_output_uninitialized(0, data.dtype(), data.shape());
    if (data.bytes()) std::memcpy(out.mutable_raw(), data.raw(), data.bytes());
    S* po = data_as<S>(out);
    const S* pu = data_as<S>(updates);
    for (const Move& m : moves)
      for (int64_t i = 0; i < m.n; ++i) po[m.dst + i] = combine<S>(reduction, po[m.dst + i], pu[m.src + i]);
  });
}

// ScatterND: with k = indices.shape[-1], each k-tuple of indices addresses the slice
// data[i_0, .., i_{k-1}, :], which takes the matching slice of updates; updates must
// have the shape indices.shape[:-1] + data.shape[k:].
void scatter_nd_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const int64_t r = data.rank(), q = indices.rank();
  if (r < 1 || q < 1) ctx.fail("data and indices must have rank >= 1, got ", data.describe(), " and ", indices.describe());
  const int64_t k = indices.shape().back();
  if (k > r) ctx.fail("indices ", indices.describe(), " address ", k, " dims, but data ", data.describe(), " has rank ", r);
  std::vector<int64_t> want(indices.shape().begin(), indices.shape().end() - 1);
  want.insert(want.end(), data.shape().begin() + k, data.shape().end());
  if (updates.shape() != want)
    ctx.fail("updates ", updates.describe(), " must have the shape indices.shape[:-1] + data.shape[", k,
             ":] = ", shape_to_string(want));
  const std::vector<int64_t> idx = index_values(ctx, indices);
  const std::vector<int64_t> strides = contiguous_strides(data.shape());
  int64_t slice = 1;
  for (int64_t d = k; d < r; ++d) slice *= data.shape()[d];
  // updates has tuples * slice elements, so an empty slice leaves nothing to write; with
  // k = 0 there are no indices to check either.
  const int64_t tuples = k > 0 ? static_cast<int64_t>(idx.size()) / k : (slice > 0 ? updates.numel() / slice : 0);
  std::vector<Move> moves;
  moves.reserve(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t dst = 0;
    for (int64_t d = 0; d < k; ++d) dst += checked_index(ctx, idx[t * k + d], data.shape()[d], d) * strides[d];
    moves.push_back({dst, t * slice, slice});
  }
  apply_moves(ctx, data, updates, moves);
}

// ScatterElements: updates[p] goes to data[p with p[axis] replaced by indices[p]].
// Outside `axis` the indices' dims must not exceed the data's, so every write stays in
// bounds (onnxruntime checks the same).
void scatter_elements_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const int64_t rank = data.rank();
  if (rank == 0) ctx.fail("data must have rank >= 1, got ", data.describe());
  if (indices.rank() != rank)
    ctx.fail("indices ", indices.describe(), " must have the rank of data ", data.describe());
  if (updates.shape() != indices.shape())
    ctx.fail("updates ", updates.describe(), " must have the shape of indices ", indices.describe());
  const int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.shape()[d] > data.shape()[d])
      ctx.fail("indices ", indices.describe(), " exceed data ", data.describe(), " in dim ", d);
  const std::vector<int64_t> idx = index_values(ctx, indices);
  const std::vector<int64_t> strides = contiguous_strides(data.shape());
  std::vector<Move> moves;
  moves.reserve(idx.size());
  std::vector<int64_t> pos(rank, 0);
  for (int64_t i = 0; i < static_cast<int64_t>(idx.size()); ++i) {
    int64_t dst = 0;
    for (int64_t d = 0; d < rank; ++d)
      dst += (d == axis ? checked_index(ctx, idx[i], data.shape()[axis], axis) : pos[d]) * strides[d];
    moves.push_back({dst, i, 1});
    for (int64_t d = rank - 1; d >= 0 && ++pos[d] == indices.shape()[d]; --d) pos[d] = 0;
  }
  apply_moves(ctx, data, updates, moves);
}

}  // namespace

void register_scatter(KernelRegistry& r) {
  r.add("", "ScatterND", scatter_nd_kernel);
  r.add("", "ScatterElements", scatter_elements_kernel);
  r.add("", "Scatter", scatter_elements_kernel);
}

}  // namespace ref_shape
}  // namespace octet
