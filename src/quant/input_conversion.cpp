#include "quant/input_conversion.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace octet::quant {

namespace {

// Whole-byte integer types; sub-byte ones never come out of .npy/.npz and are packed.
bool plain_integer(DType t) { return dtype_is_integer(t) && dtype_bits(t) >= 8; }

bool float_to_float32(DType from, DType to) {
  return to == DType::Float32 && (from == DType::Float16 || from == DType::BFloat16 || from == DType::Float64);
}

// The values a whole-byte integer type holds, clipped to int64 (uint64 beyond 2^63 - 1
// never reaches a conversion: see read_integers).
std::pair<int64_t, int64_t> integer_limits(DType t) {
  switch (t) {
    case DType::Int8: return {INT8_MIN, INT8_MAX};
    case DType::UInt8: return {0, UINT8_MAX};
    case DType::Int16: return {INT16_MIN, INT16_MAX};
    case DType::UInt16: return {0, UINT16_MAX};
    case DType::Int32: return {INT32_MIN, INT32_MAX};
    case DType::UInt32: return {0, UINT32_MAX};
    case DType::Int64: return {INT64_MIN, INT64_MAX};
    case DType::UInt64: return {0, INT64_MAX};
    default: OCTET_ASSERT(false, "not a whole-byte integer type: ", dtype_name(t));
  }
  return {0, 0};
}

// The values as int64; a uint64 value above INT64_MAX fits no other type, so it is
// reported here instead of wrapping negative.
std::vector<int64_t> read_integers(const Tensor& t, DType to, const std::string& context) {
  if (t.dtype() == DType::UInt64) {
    const uint64_t* p = t.data<uint64_t>();
    for (int64_t i = 0; i < t.numel(); ++i)
      if (p[i] > static_cast<uint64_t>(INT64_MAX))
        fail(context, ": value ", p[i], " at flat index ", i, " does not fit ", dtype_name(to));
  }
  return t.to_int64_vector();
}

template <typename T>
void store(const std::vector<int64_t>& values, Tensor& out) {
  T* p = out.mutable_data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
}

Tensor convert_integers(const Tensor& t, DType to, const std::string& context) {
  const std::vector<int64_t> values = read_integers(t, to, context);
  const auto [lo, hi] = integer_limits(to);
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] < lo || values[i] > hi)
      fail(context, ": value ", values[i], " at flat index ", i, " does not fit ", dtype_name(to),
           " (the file holds ", dtype_name(t.dtype()), ")");
  Tensor out(to, t.shape());
  switch (to) {
    case DType::Int8: store<int8_t>(values, out); break;
    case DType::UInt8: store<uint8_t>(values, out); break;
    case DType::Int16: store<int16_t>(values, out); break;
    case DType::UInt16: store<uint16_t>(values, out); break;
    case DType::Int32: store<int32_t>(values, out); break;
    case DType::UInt32: store<uint32_t>(values, out); break;
    case DType::Int64: store<int64_t>(values, out); break;
    case DType::UInt64: store<uint64_t>(values, out); break;
    default: OCTET_ASSERT(false, "unexpected target ", dtype_name(to));
  }
  return out;
}

Tensor convert_to_float32(const Tensor& t, const std::string& context) {
  Tensor out(DType::Float32, t.shape());
  float* p = out.mutable_data<float>();
  if (t.dtype() == DType::Float64) {
    const double* d = t.data<double>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      // Checked before the cast: converting an out-of-range double to float is undefined.
      if (std::isfinite(d[i]) && std::fabs(d[i]) > FLT_MAX)
        fail(context, ": float64 value ", d[i], " at flat index ", i, " is beyond float32's range");
      p[i] = static_cast<float>(d[i]);
    }
  } else {
    const std::vector<float> v = t.to_float_vector();  // float16/bfloat16: exact
    for (size_t i = 0; i < v.size(); ++i) p[i] = v[i];
  }
  return out;
}

}  // namespace

void check_input_dtype(DType from, DType to, const std::string& context) {
  if (from == to || (plain_integer(from) && plain_integer(to)) || float_to_float32(from, to)) return;
  fail(context, ": the file holds ", dtype_name(from), " but the model takes ", dtype_name(to),
       "; octet converts only integer -> integer (values must fit) and float16/bfloat16/float64 -> float32");
}

Tensor convert_input_dtype(const Tensor& t, DType to, const std::string& context) {
  if (t.dtype() == to) return t;
  check_input_dtype(t.dtype(), to, context);
  return dtype_is_integer(to) ? convert_integers(t, to, context) : convert_to_float32(t, context);
}

}  // namespace octet::quant
