// Helpers shared by the shape-family reference kernels (ref_shape*.cpp).
//
// Data movement is dtype-agnostic: kernels describe *where* elements go (index math) and
// an ElementWriter moves them, byte-wise for every fixed-size type, element by element
// for the packed 4- and 2-bit types, and by value for string tensors (which keep their
// elements outside the byte buffer). Kernels therefore never switch on dtype.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace octet {
namespace ref_shape {

// The sub-families; register_ref_shape (ref_shape.cpp) calls each.
void register_layout(KernelRegistry& r);    // ref_shape_layout.cpp: Reshape, Squeeze, Transpose, ...
void register_combine(KernelRegistry& r);   // ref_shape_combine.cpp: Concat, Split, Expand, Tile
void register_index(KernelRegistry& r);     // ref_shape_index.cpp: Slice, Gather, GatherElements, GatherND
void register_pad(KernelRegistry& r);       // ref_shape_pad.cpp: Pad
void register_scatter(KernelRegistry& r);   // ref_shape_scatter.cpp: ScatterND, ScatterElements, Scatter

// `axis` in [-rank, rank) made non-negative; otherwise an error naming the node.
int64_t normalize_axis(const KernelContext& ctx, int64_t axis, int64_t rank,
                       const char* what = "axis");

// The element count of a shape computed from data (Reshape, Expand, Tile, ...); an
// error naming the node when a dim is negative or the product overflows int64.
int64_t checked_numel(const KernelContext& ctx, const std::vector<int64_t>& shape);

// Row-major element strides of a contiguous tensor of this shape.
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

// Index values of an integer tensor (any integer dtype of 8 bits or more), not yet
// range-checked; an error naming the node for other dtypes.
std::vector<int64_t> index_values(const KernelContext& ctx, const Tensor& indices);
// Index `i` into an axis of size `dim`, negative counting from the back, made
// non-negative; an error naming the node, the axis and the valid range when out of range.
int64_t checked_index(const KernelContext& ctx, int64_t i, int64_t dim, int64_t axis);

// Contents of an integer index/shape input (any integer dtype, rank 0 or 1); an error
// naming the node and `what` for other dtypes or ranks.
std::vector<int64_t> read_ints(const KernelContext& ctx, const Tensor& t, const char* what);

// The same elements under a new shape of equal size, sharing the bytes (zero-copy).
Tensor reshaped(const Tensor& t, std::vector<int64_t> shape);

// A one-element tensor of `dtype` holding `value` (cast like a C++ static_cast, floats
// rounded to nearest for float16/bfloat16); for attributes typed float regardless of
// the data type (Pad-2 `value`).
Tensor scalar_of_dtype(const KernelContext& ctx, DType dtype, double value);

// The argument handling of Slice, Split and Transpose, shared with the optimized
// kernels (src/kernels/cpu/cpu_data_movement*.cpp) so that both validate inputs, clamp
// indices and word their errors identically.

// Transpose's `perm` (default: the dims reversed), checked to be a permutation of x's dims.
std::vector<int64_t> transpose_perm(const KernelContext& ctx, const Tensor& x);

// A strided view of a contiguous tensor: element (i_0..i_r) of `shape` is element
// base + sum_d i_d * strides[d] of the source.
struct StridedView {
  std::vector<int64_t> shape, strides;
  int64_t base = 0;
};
// Slice's selection of x (inputs from opset 10, attributes before), indices normalized
// and clamped as the spec says; strides may be negative. Dims of count <= 1 get stride 0.
StridedView slice_view(const KernelContext& ctx, const Tensor& x);

// Split's part sizes along `axis` (already normalized): the `split` input or attribute,
// else equal parts over the node's outputs; checked to sum to the dim.
std::vector<int64_t> split_sizes(const KernelContext& ctx, const Tensor& x, int64_t axis);

// Builds one output tensor element by element, for any dtype.
class ElementWriter {
 public:
  ElementWriter(DType dtype, std::vector<int64_t> shape);

  int64_t numel() const { return numel_; }
  // out[dst + i] = src[src_index + i * src_stride] for i in [0, n). src has this dtype.
  void copy(const Tensor& src, int64_t src_index, int64_t src_stride, int64_t dst, int64_t n);
  // out[dst + i] = value's first element for i in [0, n).
  void fill(const Tensor& value, int64_t dst, int64_t n);
  // The finished tensor; the writer is spent afterwards.
  Tensor finish();

 private:
  DType dtype_;
  std::vector<int64_t> shape_;
  int64_t numel_;
  int bits_;
  Tensor out_;                        // non-string types
  std::vector<std::string> strings_;  // string type
};

// Copies the strided view `src[base + sum_d i_d * strides[d]]`, i over `shape`, into
// consecutive output elements starting at `dst` (row-major over `shape`). Strides may be
// zero (broadcast) or negative (reversed slices). Covers Transpose, Slice, Expand, Tile.
void copy_view(ElementWriter& out, int64_t dst, const Tensor& src, int64_t base,
               const std::vector<int64_t>& shape, const std::vector<int64_t>& strides);

}  // namespace ref_shape
}  // namespace octet
