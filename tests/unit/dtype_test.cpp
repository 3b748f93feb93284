// Element types: ONNX codes, names, sizes and classification, and the packing of
// sub-byte elements (ONNX's layout: lowest bits first), with 2-bit and 4-bit round trips.
#include <gtest/gtest.h>

#include <vector>

#include "core/dtype.h"

namespace octet {
namespace {

using B = std::vector<uint8_t>;

// Element i of a packed signed (two's complement) tensor.
int signed_at(const uint8_t* data, int64_t i, int bits) {
  const int v = get_packed(data, i, bits), sign = 1 << (bits - 1);
  return (v ^ sign) - sign;
}

TEST(DType, CodesAndNamesOfTheNewestTypes) {
  EXPECT_EQ(dtype_from_onnx(24), DType::Float8E8M0);
  EXPECT_EQ(dtype_from_onnx(25), DType::UInt2);
  EXPECT_EQ(dtype_from_onnx(26), DType::Int2);
  EXPECT_FALSE(dtype_from_onnx(27).has_value());  // float6e2m3: not implemented
  EXPECT_FALSE(dtype_from_onnx(0).has_value());
  for (DType t : {DType::Float8E8M0, DType::UInt2, DType::Int2}) {
    EXPECT_EQ(dtype_from_onnx(dtype_to_onnx(t)), t);
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t) << dtype_name(t);
  }
  EXPECT_EQ(dtype_name(DType::Float8E8M0), "float8e8m0");
  EXPECT_EQ(dtype_name(DType::UInt2), "uint2");
  EXPECT_EQ(dtype_name(DType::Int2), "int2");
}

TEST(DType, SizesAndClasses) {
  EXPECT_EQ(dtype_bits(DType::Float8E8M0), 8);
  EXPECT_EQ(dtype_bits(DType::Int2), 2);
  EXPECT_EQ(dtype_bits(DType::UInt2), 2);
  // Four 2-bit elements per byte, rounding up.
  for (auto [n, bytes] : std::vector<std::pair<int64_t, size_t>>{{0, 0}, {1, 1}, {4, 1}, {5, 2}, {7, 2}, {8, 2}, {9, 3}})
    EXPECT_EQ(dtype_storage_bytes(DType::Int2, n), bytes) << n;
  EXPECT_EQ(dtype_storage_bytes(DType::Int4, 5), 3u);
  EXPECT_EQ(dtype_storage_bytes(DType::Float8E8M0, 5), 5u);

  EXPECT_TRUE(dtype_is_integer(DType::Int2));
  EXPECT_TRUE(dtype_is_integer(DType::UInt2));
  EXPECT_TRUE(dtype_is_signed(DType::Int2));
  EXPECT_FALSE(dtype_is_signed(DType::UInt2));
  EXPECT_TRUE(dtype_is_float(DType::Float8E8M0));
  EXPECT_FALSE(dtype_is_signed(DType::Float8E8M0));  // exponent only, no sign bit
  EXPECT_FALSE(dtype_is_integer(DType::Float8E8M0));
}

// Packs `values` (already reduced to `bits` bits) into a fresh buffer.
B pack(const std::vector<uint8_t>& values, int bits) {
  B out((values.size() * bits + 7) / 8, 0);
  for (size_t i = 0; i < values.size(); ++i) set_packed(out.data(), static_cast<int64_t>(i), bits, values[i]);
  return out;
}

TEST(DType, Int2PacksFourPerByteLowBitsFirst) {
  // What onnx.numpy_helper._pack_2bitx4 writes for int2 [-2, -1, 0, 1, -2] and uint2
  // [0, 1, 2, 3, 3, 2, 1]: odd counts leave the last byte's high bits zero.
  const std::vector<int> s5 = {-2, -1, 0, 1, -2};
  std::vector<uint8_t> bits5;
  for (int v : s5) bits5.push_back(static_cast<uint8_t>(v & 3));
  const B packed5 = pack(bits5, 2);
  EXPECT_EQ(packed5, (B{0x4E, 0x02}));
  for (size_t i = 0; i < s5.size(); ++i)
    EXPECT_EQ(signed_at(packed5.data(), static_cast<int64_t>(i), 2), s5[i]) << i;

  const std::vector<uint8_t> u7 = {0, 1, 2, 3, 3, 2, 1};
  const B packed7 = pack(u7, 2);
  EXPECT_EQ(packed7, (B{0xE4, 0x1B}));
  for (size_t i = 0; i < u7.size(); ++i) {
    EXPECT_EQ(get_packed(packed7.data(), static_cast<int64_t>(i), 2), u7[i]) << i;
  }
}

TEST(DType, PackedRoundTripsForEveryValueAndOddCounts) {
  for (int bits : {2, 4}) {
    const int levels = 1 << bits;
    for (int64_t n : {1, 5, 7, 9, 16}) {
      std::vector<uint8_t> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * 3 + 1) % levels);
      const B packed = pack(v, bits);
      ASSERT_EQ(packed.size(), dtype_storage_bytes(bits == 2 ? DType::UInt2 : DType::UInt4, n));
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(get_packed(packed.data(), i, bits), v[i]) << bits << " " << i;
      // The padding bits of the last byte stay zero.
      const int used = static_cast<int>(n * bits % 8);
      if (used) {
        EXPECT_EQ(packed.back() >> used, 0) << bits << " bits, n " << n;
      }
    }
  }
  // Signed values: int2 covers -2..1, int4 -8..7.
  for (int v = -2; v <= 1; ++v) {
    uint8_t byte = 0;
    set_packed(&byte, 3, 2, static_cast<uint8_t>(v & 3));
    EXPECT_EQ(signed_at(&byte, 3, 2), v);
    EXPECT_EQ(get_packed(&byte, 3, 2), v & 3);
  }
  for (int v = -8; v <= 7; ++v) {
    uint8_t byte = 0;
    set_packed(&byte, 1, 4, static_cast<uint8_t>(v & 15));
    EXPECT_EQ(signed_at(&byte, 1, 4), v);
  }
}

TEST(DType, SetPackedLeavesTheNeighboursAlone) {
  uint8_t byte = 0xFF;
  set_packed(&byte, 1, 2, 0);
  EXPECT_EQ(byte, 0xF3);
  set_packed(&byte, 3, 2, 0x6);  // only the low two bits of the value are stored
  EXPECT_EQ(byte, 0xB3);
  uint8_t nib[2] = {0x21, 0x43};
  set_packed(nib, 2, 4, 0xA);
  EXPECT_EQ(nib[1], 0x4A);
  EXPECT_EQ(nib[0], 0x21);
}

}  // namespace
}  // namespace octet
