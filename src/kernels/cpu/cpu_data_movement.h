// Optimized data-movement kernels (Transpose, Slice, Concat, Split, Gather): dtype-agnostic,
// they move whole elements as bytes, so one kernel serves every type whose elements are a
// whole number of bytes. Packed sub-byte types (int4, uint2, float4, ...) and strings are
// declined at session creation when the graph says so, and handed to the reference kernel
// at run time otherwise.
//
// Argument handling (perm, Slice's index clamping, Split sizes) is the reference's own
// (ref_shape_common.h), so errors read the same; where the reference checks the data
// itself (Gather's index range, Concat's shapes) these kernels run the reference kernel
// on anything they would reject, which then reports the error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/kernel.h"
#include "kernels/ref/ref_shape_common.h"

namespace octet::cpu {

void register_cpu_data_movement(KernelRegistry& r);

// Bytes per element, or 0 for types these kernels do not move (sub-byte, string).
size_t element_bytes(DType dtype);

// Below this many elements a copy runs on the calling thread: waking the OpenMP team
// costs more than moving a few hundred KB.
constexpr int64_t kMoveParallelMinElements = 64 * 1024;

// dst[i] = src[view.base + sum_d i_d * view.strides[d]] for i over view.shape in
// row-major order, elements of `esize` bytes. Collapses dims that stay adjacent, then
// copies contiguous runs with memcpy, transposes in cache-sized tiles when the source's
// contiguous dim moved away from the end, and walks strides otherwise.
void copy_strided(const KernelContext& ctx, uint8_t* dst, const uint8_t* src, size_t esize,
                  const ref_shape::StridedView& view);

// dst [rows, width] = columns [col0, col0 + width) of the row-major float32 src [rows, n],
// by copy_strided: a product's Y cut into the parts of the Split it absorbed (octet.MatMulNBits
// and octet.MatMulBias with `split`, where their GEMV cannot write the parts directly).
void copy_columns(const KernelContext& ctx, const float* src, int64_t rows, int64_t n, int64_t col0, int64_t width,
                  float* dst);

}  // namespace octet::cpu
