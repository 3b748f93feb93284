// Element types. The numeric values are ONNX's TensorProto.DataType codes so that import
// and export are a cast, and so that a code we do not know is detected by from_onnx().
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace octet {

enum class DType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  Complex64 = 14,
  Complex128 = 15,
  BFloat16 = 16,
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
  Float8E8M0 = 24,  // exponent only: 2^(bits - 127), 0xFF = NaN; no sign, zero or inf
  UInt2 = 25,
  Int2 = 26,
};

// Maps an ONNX data type code to a DType; nullopt for codes this build does not know.
std::optional<DType> dtype_from_onnx(int32_t code);
int32_t dtype_to_onnx(DType t);

// Lower-case ONNX-style name: "float32", "bfloat16", "int4", ...
std::string dtype_name(DType t);
// Accepts dtype_name() output and common aliases ("float", "fp16", "bf16", "f32", ...).
std::optional<DType> dtype_from_name(const std::string& name);

// Storage bits per element (4 for int4/uint4/float4, 2 for int2/uint2, 0 for
// string/undefined).
int dtype_bits(DType t);
// Bytes needed to store n elements (sub-byte types pack 8 / bits per byte, rounding up).
size_t dtype_storage_bytes(DType t, int64_t n);

// Packed sub-byte elements (ONNX's layout): element i of a `bits`-bit type (2 or 4) lives
// in byte i * bits / 8, the lowest bits holding the element with the lowest index. So
// int4 [1, 2, 3] is 0x21 0x03 and uint2 [1, 2, 3, 0, 1] is 0x39 0x01. Padding bits of the
// last byte are zero.
inline uint8_t get_packed(const uint8_t* data, int64_t i, int bits) {
  const int per_byte = 8 / bits;
  const int shift = static_cast<int>(i % per_byte) * bits;
  return static_cast<uint8_t>((data[i / per_byte] >> shift) & ((1u << bits) - 1));
}
inline void set_packed(uint8_t* data, int64_t i, int bits, uint8_t value) {
  const int per_byte = 8 / bits;
  const int shift = static_cast<int>(i % per_byte) * bits;
  const unsigned mask = ((1u << bits) - 1) << shift;
  uint8_t& byte = data[i / per_byte];
  byte = static_cast<uint8_t>((byte & ~mask) | ((static_cast<unsigned>(value) << shift) & mask));
}

bool dtype_is_float(DType t);     // any floating type, float8 (float8e8m0 too) included
bool dtype_is_integer(DType t);   // signed or unsigned integer, 4- and 2-bit included
bool dtype_is_signed(DType t);    // signed integers and the floats with a sign bit

// C++ type -> DType, for the types kernels touch directly.
template <typename T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::Float32; }
template <> constexpr DType dtype_of<double>() { return DType::Float64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::Int64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::Int32; }
template <> constexpr DType dtype_of<int16_t>() { return DType::Int16; }
template <> constexpr DType dtype_of<int8_t>() { return DType::Int8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::UInt8; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::UInt16; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::UInt32; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::UInt64; }
template <> constexpr DType dtype_of<bool>() { return DType::Bool; }

// Half-precision conversions (round to nearest even), used wherever fp16/bf16 data is
// read or written; compute happens in float32.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);

}  // namespace octet
