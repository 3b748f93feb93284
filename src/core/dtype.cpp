#include "core/dtype.h"

#include "core/sizes.h"
#include "octet/error.h"

#include <cstring>
#include <map>

namespace octet {

namespace {
struct DTypeInfo {
  DType type;
  const char* name;
  int bits;
};

constexpr DTypeInfo kInfo[] = {
    {DType::Undefined, "undefined", 0},
    {DType::Float32, "float32", 32},
    {DType::UInt8, "uint8", 8},
    {DType::Int8, "int8", 8},
    {DType::UInt16, "uint16", 16},
    {DType::Int16, "int16", 16},
    {DType::Int32, "int32", 32},
    {DType::Int64, "int64", 64},
    {DType::String, "string", 0},
    {DType::Bool, "bool", 8},
    {DType::Float16, "float16", 16},
    {DType::Float64, "float64", 64},
    {DType::UInt32, "uint32", 32},
    {DType::UInt64, "uint64", 64},
    {DType::Complex64, "complex64", 64},
    {DType::Complex128, "complex128", 128},
    {DType::BFloat16, "bfloat16", 16},
    {DType::Float8E4M3FN, "float8e4m3fn", 8},
    {DType::Float8E4M3FNUZ, "float8e4m3fnuz", 8},
    {DType::Float8E5M2, "float8e5m2", 8},
    {DType::Float8E5M2FNUZ, "float8e5m2fnuz", 8},
    {DType::UInt4, "uint4", 4},
    {DType::Int4, "int4", 4},
    {DType::Float4E2M1, "float4e2m1", 4},
    {DType::Float8E8M0, "float8e8m0", 8},
    {DType::UInt2, "uint2", 2},
    {DType::Int2, "int2", 2},
};
constexpr int kCount = sizeof(kInfo) / sizeof(kInfo[0]);

constexpr bool indexed_by_code() {
  for (int i = 0; i < kCount; ++i)
    if (static_cast<int>(kInfo[i].type) != i) return false;
  return true;
}
static_assert(indexed_by_code(), "kInfo[code] must describe the DType with that ONNX code");

const DTypeInfo& info(DType t) {
  int code = static_cast<int>(t);
  if (code < 0 || code >= kCount) return kInfo[0];
  return kInfo[code];
}
}  // namespace

std::optional<DType> dtype_from_onnx(int32_t code) {
  if (code < 1 || code >= kCount) return std::nullopt;
  return kInfo[code].type;
}

int32_t dtype_to_onnx(DType t) { return static_cast<int32_t>(t); }

std::string dtype_name(DType t) { return info(t).name; }

std::optional<DType> dtype_from_name(const std::string& name) {
  static const std::map<std::string, DType> aliases = {
      {"float", DType::Float32},  {"fp32", DType::Float32},   {"f32", DType::Float32},
      {"half", DType::Float16},   {"fp16", DType::Float16},   {"f16", DType::Float16},
      {"bf16", DType::BFloat16},  {"double", DType::Float64}, {"fp64", DType::Float64},
      {"u8", DType::UInt8},       {"s8", DType::Int8},        {"i8", DType::Int8},
      {"i32", DType::Int32},      {"i64", DType::Int64},      {"long", DType::Int64},
  };
  for (const auto& i : kInfo)
    if (name == i.name && i.type != DType::Undefined) return i.type;
  auto it = aliases.find(name);
  if (it != aliases.end()) return it->second;
  return std::nullopt;
}

int dtype_bits(DType t) { return info(t).bits; }

size_t dtype_storage_bytes(DType t, int64_t n) {
  if (n <= 0) return 0;
  auto bytes = try_storage_bytes(t, n);
  if (!bytes)
    throw OutOfMemory("out of memory: " + std::to_string(n) + " elements of " + dtype_name(t) +
                      " would need more than 2^47 bytes (128 TiB), more than a process can address");
  return static_cast<size_t>(*bytes);
}

bool dtype_is_float(DType t) {
  switch (t) {
    case DType::Float32: case DType::Float16: case DType::Float64: case DType::BFloat16:
    case DType::Float8E4M3FN: case DType::Float8E4M3FNUZ: case DType::Float8E5M2:
    case DType::Float8E5M2FNUZ: case DType::Float4E2M1: case DType::Float8E8M0:
      return true;
    default:
      return false;
  }
}

bool dtype_is_integer(DType t) {
  switch (t) {
    case DType::UInt8: case DType::Int8: case DType::UInt16: case DType::Int16:
    case DType::Int32: case DType::Int64: case DType::UInt32: case DType::UInt64:
    case DType::UInt4: case DType::Int4: case DType::UInt2: case DType::Int2:
      return true;
    default:
      return false;
  }
}

bool dtype_is_signed(DType t) {
  switch (t) {
    case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
    case DType::Int4: case DType::Int2:
      return true;
    case DType::Float8E8M0:  // exponent only: no sign bit
      return false;
    default:
      return dtype_is_float(t);
  }
}

float half_to_float(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      bits = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u)  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (absx > 0x7f800000u ? 0x200u : 0));
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (absx < 0x38800000u) {  // result is subnormal or zero
    if (absx < 0x33000000u) return static_cast<uint16_t>(sign);
    uint32_t mant = (absx & 0x7fffffu) | 0x800000u;
    int shift = 113 - static_cast<int>(absx >> 23) + 13;
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t rounded = absx + 0xfffu + ((absx >> 13) & 1);  // round to nearest even
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

float bfloat16_to_float(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40);  // nan
  x += 0x7fffu + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace octet
