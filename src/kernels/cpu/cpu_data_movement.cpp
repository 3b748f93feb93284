// Optimized Transpose, Slice, Concat, Split and Gather (see cpu_data_movement.h). Each
// moves whole elements as bytes; results are the reference's bit for bit, since both
// only copy.
#include "kernels/cpu/cpu_data_movement.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/simd_kernels.h"
#include "ops/transpose_layout.h"

namespace octet::cpu {
namespace {

int64_t product(const std::vector<int64_t>& shape, int64_t begin, int64_t end) {
  int64_t p = 1;
  for (int64_t i = begin; i < end; ++i) p *= shape[i];
  return p;
}

// Declines a node whose data inputs (the first `data_inputs`, all when 0) have a known
// dtype these kernels do not move.
bool declines_dtype(const Node& node, size_t data_inputs) {
  const size_t n = data_inputs ? std::min(data_inputs, node.inputs().size()) : node.inputs().size();
  for (size_t i = 0; i < n; ++i) {
    const Value* v = node.inputs()[i];
    if (v && v->type.known() && element_bytes(v->type.dtype) == 0) return true;
  }
  return false;
}

bool prepare_first_input(const Node& node, std::unique_ptr<KernelState>&) { return !declines_dtype(node, 1); }
bool prepare_all_inputs(const Node& node, std::unique_ptr<KernelState>&) { return !declines_dtype(node, 0); }

bool prepare_gather(const Node& node, std::unique_ptr<KernelState>&) {
  if (declines_dtype(node, 1)) return false;
  const Value* indices = node.inputs().size() > 1 ? node.inputs()[1] : nullptr;
  return !(indices && indices->type.known() && indices->type.dtype != DType::Int64 &&
           indices->type.dtype != DType::Int32);
}

void transpose_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const size_t es = element_bytes(x.dtype());
  if (es == 0) return run_reference(ctx);
  const std::vector<int64_t> perm = ref_shape::transpose_perm(ctx, x);
  const std::vector<int64_t> in_strides = ref_shape::contiguous_strides(x.shape());
  ref_shape::StridedView view{std::vector<int64_t>(perm.size()), std::vector<int64_t>(perm.size()), 0};
  for (size_t i = 0; i < perm.size(); ++i) {
    view.shape[i] = x.shape()[perm[i]];
    view.strides[i] = in_strides[perm[i]];
  }
  // Moving only size-1 axes (a decode step's [1, 1, heads, 64] -> [1, heads, 1, 64] head
  // split): the bytes are already in order, so the output is a view (registered
  // may_alias_inputs). transpose_to_reshape does this in the graph where the dims are
  // static; with a symbolic sequence length only the run knows.
  if (moves_only_unit_axes(x.shape(), perm)) {
    ctx.set_output(0, ref_shape::reshaped(x, view.shape));
    return;
  }
  Tensor& out = ctx.allocate_output_uninitialized(0, x.dtype(), view.shape);
  copy_strided(ctx, out.mutable_raw(), x.raw(), es, view);
}

// True when the selection is one contiguous run of x's elements (every dim with more than
// one element keeps x's row-major stride), e.g. rows [0, n) of a table.
bool contiguous_selection(const ref_shape::StridedView& view) {
  int64_t stride = 1;
  for (size_t i = view.shape.size(); i-- > 0;) {
    if (view.shape[i] > 1 && view.strides[i] != stride) return false;
    stride *= view.shape[i];
  }
  return true;
}

// Memory that outlives the run and is never written while it does: a weight, a caller's
// input, a kernel's heap output (shared, so kept alive by the view). Not the run's arena
// (writable memory the session hands out; a region there is reused once its tensor dies).
bool safe_to_view(const Tensor& x) {
  const std::shared_ptr<Buffer>& b = x.buffer();
  return b && (b->owns_memory() || !b->writable());
}

void slice_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const size_t es = element_bytes(x.dtype());
  if (es == 0) return run_reference(ctx);
  const ref_shape::StridedView view = ref_shape::slice_view(ctx, x);
  // A contiguous slice of long-lived memory is returned as a view: a rotary table sliced to
  // the current length every decode step (Llama exports) would otherwise be copied.
  const int64_t numel = shape_numel(view.shape);
  if (numel > 0 && contiguous_selection(view) && safe_to_view(x)) {
    const size_t bytes = static_cast<size_t>(numel) * es;
    ctx.set_output(0, Tensor(x.dtype(), view.shape, Buffer::borrow(x.raw() + view.base * es, bytes, x.buffer())));
    return;
  }
  Tensor& out = ctx.allocate_output_uninitialized(0, x.dtype(), view.shape);
  copy_strided(ctx, out.mutable_raw(), x.raw(), es, view);
}

// Every input is [outer, d_i * inner] viewed as bytes; output row o is their rows o in turn.
void concat_kernel(KernelContext& ctx) {
  const Node& node = ctx.node();
  const size_t n = ctx.num_inputs();
  if (n == 0 || !ctx.has_input(0) || (node.opset() >= 4 && !node.has_attr("axis"))) return run_reference(ctx);
  const Tensor& first = ctx.input(0);
  const int64_t rank = first.rank();
  const size_t es = element_bytes(first.dtype());
  int64_t axis = node.attr_int("axis", 1);
  if (es == 0 || rank == 0 || axis < -rank || axis >= rank) return run_reference(ctx);
  if (axis < 0) axis += rank;
  std::vector<int64_t> shape = first.shape();
  shape[axis] = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!ctx.has_input(i)) return run_reference(ctx);
    const Tensor& t = ctx.input(i);
    if (t.dtype() != first.dtype() || t.rank() != rank) return run_reference(ctx);
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && t.shape()[d] != first.shape()[d]) return run_reference(ctx);
    shape[axis] += t.shape()[axis];
  }
  Tensor& out = ctx.allocate_output_uninitialized(0, first.dtype(), shape);
  const int64_t outer = product(shape, 0, axis);
  const int64_t inner_bytes = product(shape, axis + 1, rank) * static_cast<int64_t>(es);
  const int64_t out_row = shape[axis] * inner_bytes;
  uint8_t* dst = out.mutable_raw();
  const int64_t work = out.numel() > kMoveParallelMinElements ? out.numel() : 0;
  parallel_ranges(ctx, outer, work, [&](int64_t begin, int64_t end) {
    int64_t offset = 0;  // bytes into an output row
    for (size_t i = 0; i < n; ++i) {
      const Tensor& t = ctx.input(i);
      const int64_t block = t.shape()[axis] * inner_bytes;
      if (block > 0)
        for (int64_t o = begin; o < end; ++o)
          std::memcpy(dst + o * out_row + offset, t.raw() + o * block, static_cast<size_t>(block));
      offset += block;
    }
  });
}

// The mirror of Concat: part p takes bytes [offset_p, offset_p + block_p) of every input row.
void split_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const size_t es = element_bytes(x.dtype());
  if (es == 0) return run_reference(ctx);
  const int64_t axis = ref_shape::normalize_axis(ctx, ctx.node().attr_int("axis", 0), x.rank());
  const std::vector<int64_t> sizes = ref_shape::split_sizes(ctx, x, axis);
  const int64_t outer = product(x.shape(), 0, axis);
  const int64_t inner_bytes = product(x.shape(), axis + 1, x.rank()) * static_cast<int64_t>(es);
  const int64_t in_row = x.shape()[axis] * inner_bytes;
  if (outer == 1) {
    // One row (a decode step's merged q/k/v or gate/up product split on its last axis):
    // each part is a contiguous run of the input, returned as a view (registered
    // may_alias_inputs, so the planner keeps the input's memory as long as the parts).
    int64_t offset = 0;
    for (size_t p = 0; p < sizes.size(); ++p) {
      std::vector<int64_t> shape = x.shape();
      shape[axis] = sizes[p];
      const size_t bytes = static_cast<size_t>(sizes[p] * inner_bytes);
      if (ctx.output_wanted(p))
        ctx.set_output(p, Tensor(x.dtype(), std::move(shape), Buffer::borrow(x.raw() + offset, bytes, x.buffer())));
      offset += static_cast<int64_t>(bytes);
    }
    return;
  }
  std::vector<uint8_t*> dst(sizes.size());
  for (size_t p = 0; p < sizes.size(); ++p) {
    std::vector<int64_t> shape = x.shape();
    shape[axis] = sizes[p];
    dst[p] = ctx.allocate_output_uninitialized(p, x.dtype(), shape).mutable_raw();
  }
  const int64_t work = x.numel() > kMoveParallelMinElements ? x.numel() : 0;
  parallel_ranges(ctx, outer, work, [&](int64_t begin, int64_t end) {
    int64_t offset = 0;
    for (size_t p = 0; p < sizes.size(); ++p) {
      const int64_t block = sizes[p] * inner_bytes;
      if (block > 0)
        for (int64_t o = begin; o < end; ++o)
          std::memcpy(dst[p] + o * block, x.raw() + o * in_row + offset, static_cast<size_t>(block));
      offset += block;
    }
  });
}

template <typename I>
bool normalized_indices(const Tensor& indices, int64_t dim, std::vector<int64_t>& out) {
  const I* p = indices.data<I>();
  out.resize(static_cast<size_t>(indices.numel()));
  for (int64_t j = 0; j < indices.numel(); ++j) {
    const int64_t i = static_cast<int64_t>(p[j]);
    if (i < -dim || i >= dim) return false;
    out[j] = i < 0 ? i + dim : i;
  }
  return true;
}

// Gather: output row (o, j) is data row (o, indices[j]) of prod(data[axis+1:]) elements;
// on axis 0 that is an embedding lookup, one memcpy per token.
void gather_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const size_t es = element_bytes(data.dtype());
  const int64_t rank = data.rank();
  int64_t axis = ctx.node().attr_int("axis", 0);
  if (es == 0 || rank == 0 || axis < -rank || axis >= rank) return run_reference(ctx);
  if (axis < 0) axis += rank;
  const int64_t dim = data.shape()[axis];
  std::vector<int64_t> idx;
  bool in_range = false;
  if (indices.dtype() == DType::Int64) in_range = normalized_indices<int64_t>(indices, dim, idx);
  else if (indices.dtype() == DType::Int32) in_range = normalized_indices<int32_t>(indices, dim, idx);
  if (!in_range) return run_reference(ctx);  // other index types, or the reference's range error
  std::vector<int64_t> shape(data.shape().begin(), data.shape().begin() + axis);
  shape.insert(shape.end(), indices.shape().begin(), indices.shape().end());
  shape.insert(shape.end(), data.shape().begin() + axis + 1, data.shape().end());
  Tensor& out = ctx.allocate_output_uninitialized(0, data.dtype(), shape);
  const int64_t n = static_cast<int64_t>(idx.size());
  const int64_t outer = product(data.shape(), 0, axis);
  const int64_t row = product(data.shape(), axis + 1, rank) * static_cast<int64_t>(es);
  if (row == 0) return;
  uint8_t* dst = out.mutable_raw();
  const uint8_t* src = data.raw();
  const int64_t work = out.numel() > kMoveParallelMinElements ? out.numel() : 0;
  parallel_ranges(ctx, outer * n, work, [&](int64_t begin, int64_t end) {
    for (int64_t u = begin; u < end; ++u) {
      const int64_t o = u / n, j = u % n;
      std::memcpy(dst + u * row, src + (o * dim + idx[j]) * row, static_cast<size_t>(row));
    }
  });
}

}  // namespace

void register_cpu_data_movement(KernelRegistry& r) {
  // Transpose and Split may return views of their input (see the kernels).
  r.add("", "Transpose", KernelDef{transpose_kernel, prepare_first_input, true});
  r.add("", "Slice", KernelDef{slice_kernel, prepare_first_input});
  r.add("", "Concat", KernelDef{concat_kernel, prepare_all_inputs});
  r.add("", "Split", KernelDef{split_kernel, prepare_first_input, true});
  r.add("", "Gather", KernelDef{gather_kernel, prepare_gather});
}

}  // namespace octet::cpu
