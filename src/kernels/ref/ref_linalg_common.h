// Helpers shared by the linear-algebra reference kernels (ref_linalg*.cpp).
//
// Arithmetic per element type, like other runtimes (onnxruntime's MLAS, numpy):
//   float32, float16, bfloat16  accumulate in float32 (16-bit inputs are widened on load
//                               and rounded to nearest-even on store);
//   float64                     accumulate in double;
//   integer types               64-bit two's-complement arithmetic that wraps, then
//                               truncated to the output type: the same bits an int32
//                               kernel that wraps would produce, and no undefined overflow.
// Kernels load whole inputs into vectors of the accumulation type; that copy is cheap
// next to the O(n^3) loops and keeps the loops free of dtype switches.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/kernel.h"

namespace octet {
namespace ref_linalg {

// The sub-families; register_ref_linalg (ref_linalg.cpp) calls each.
void register_conv(KernelRegistry& r);    // ref_linalg_conv.cpp
void register_conv_transpose(KernelRegistry& r);  // ref_linalg_conv_transpose.cpp
void register_einsum(KernelRegistry& r);  // ref_linalg_einsum.cpp

// Runs fn(Acc{}) with Acc the accumulation type for `dtype` (float, double or uint64_t);
// an error naming the node for types without arithmetic (bool, string, 4-bit, float8).
template <typename Fn>
void dispatch(const KernelContext& ctx, DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: case DType::Float16: case DType::BFloat16: fn(float{}); return;
    case DType::Float64: fn(double{}); return;
    case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
    case DType::UInt8: case DType::UInt16: case DType::UInt32: case DType::UInt64:
      fn(uint64_t{}); return;
    default: ctx.fail("unsupported element type ", dtype_name(dtype));
  }
}

namespace detail {
template <typename T>
T read(const uint8_t* p, int64_t i) {
  T v;
  std::memcpy(&v, p + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}
template <typename T>
void write(uint8_t* p, int64_t i, T v) {
  std::memcpy(p + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}
}  // namespace detail

// The tensor's elements in the accumulation type (see dispatch()).
template <typename Acc>
std::vector<Acc> load(const Tensor& t) {
  const int64_t n = t.numel();
  std::vector<Acc> out(static_cast<size_t>(n));
  const uint8_t* p = t.raw();
  if constexpr (std::is_same_v<Acc, uint64_t>) {
    std::vector<int64_t> ints = t.to_int64_vector();  // signed types sign-extend
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<uint64_t>(ints[i]);
  } else if (t.dtype() == DType::Float64) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Acc>(detail::read<double>(p, i));
  } else {
    std::vector<float> f = t.to_float_vector();
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<Acc>(f[i]);
  }
  return out;
}

// Converts `values` to out's dtype and writes them (out already has its shape).
template <typename Acc>
void store(Tensor& out, const std::vector<Acc>& values) {
  OCTET_ASSERT(static_cast<int64_t>(values.size()) == out.numel(), "store size mismatch");
  uint8_t* p = out.mutable_raw();
  const int64_t n = out.numel();
  for (int64_t i = 0; i < n; ++i) {
    const Acc v = values[i];
    switch (out.dtype()) {
      case DType::Float32: detail::write(p, i, static_cast<float>(v)); break;
      case DType::Float64: detail::write(p, i, static_cast<double>(v)); break;
      case DType::Float16: detail::write(p, i, float_to_half(static_cast<float>(v))); break;
      case DType::BFloat16: detail::write(p, i, float_to_bfloat16(static_cast<float>(v))); break;
      default:
        if constexpr (std::is_same_v<Acc, uint64_t>) {
          switch (out.dtype()) {
            case DType::Int8: detail::write(p, i, static_cast<int8_t>(v)); break;
            case DType::Int16: detail::write(p, i, static_cast<int16_t>(v)); break;
            case DType::Int32: detail::write(p, i, static_cast<int32_t>(v)); break;
            case DType::Int64: detail::write(p, i, static_cast<int64_t>(v)); break;
            case DType::UInt8: detail::write(p, i, static_cast<uint8_t>(v)); break;
            case DType::UInt16: detail::write(p, i, static_cast<uint16_t>(v)); break;
            case DType::UInt32: detail::write(p, i, static_cast<uint32_t>(v)); break;
            case DType::UInt64: detail::write(p, i, v); break;
            default: OCTET_ASSERT(false, "store to ", out.describe());
          }
        } else {
          OCTET_ASSERT(false, "store to ", out.describe());
        }
    }
  }
}

// c[M,N] += a[M,K] * b[K,N], all row-major: the i-k-j order keeps the inner loop a
// contiguous axpy over a row of b and c.
template <typename Acc>
void matmul_accumulate(const Acc* a, const Acc* b, Acc* c, int64_t m, int64_t k, int64_t n) {
  for (int64_t i = 0; i < m; ++i) {
    Acc* c_row = c + i * n;
    for (int64_t p = 0; p < k; ++p) {
      const Acc a_ip = a[i * k + p];
      const Acc* b_row = b + p * n;
      for (int64_t j = 0; j < n; ++j) c_row[j] += a_ip * b_row[j];
    }
  }
}

}  // namespace ref_linalg
}  // namespace octet
