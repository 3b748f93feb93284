// Data movement on packed 2-bit tensors (int2/uint2, four elements per byte): every
// element lands where the index math says, whatever its position inside a byte, and the
// padding bits of the last byte stay zero. Odd counts and unaligned offsets throughout.
#include <limits>

#include "ref_shape_testing.h"

namespace octet {
namespace {

using namespace reftest;
using Shape = std::vector<int64_t>;
using V = std::vector<int>;

Tensor packed(DType t, Shape shape, const V& v) {
  Tensor out(t, std::move(shape));
  EXPECT_EQ(static_cast<int64_t>(v.size()), out.numel());
  const int bits = dtype_bits(t);
  for (size_t i = 0; i < v.size(); ++i)
    set_packed(out.mutable_raw(), static_cast<int64_t>(i), bits, static_cast<uint8_t>(v[i] & ((1 << bits) - 1)));
  return out;
}

// The values, after checking that the bits past the last element are zero.
V unpacked(const Tensor& t) {
  const int used = static_cast<int>(t.numel() * dtype_bits(t.dtype()) % 8);
  if (used) {
    EXPECT_EQ(t.raw()[t.bytes() - 1] >> used, 0) << "padding bits of " << t.describe();
  }
  V out;
  const int bits = dtype_bits(t.dtype()), sign = dtype_is_signed(t.dtype()) ? 1 << (bits - 1) : 0;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back((get_packed(t.raw(), i, bits) ^ sign) - sign);
  return out;
}

const V kSeven = {-2, -1, 0, 1, 1, 0, -1};

TEST(RefShapeTwoBit, ReshapeFlattenSqueezeShareTheBytes) {
  const Tensor x = packed(DType::Int2, {7}, kSeven);
  Tensor r = run1("Reshape", {x, ints({7, 1})});
  EXPECT_EQ(r.describe(), "int2[7,1]");
  EXPECT_EQ(r.buffer(), x.buffer());
  EXPECT_EQ(unpacked(r), kSeven);
  Tensor f = run1("Flatten", {packed(DType::UInt2, {1, 7, 1}, {0, 1, 2, 3, 3, 2, 1})}, {Attribute::make_int("axis", 2)});
  EXPECT_EQ(f.describe(), "uint2[7,1]");
  EXPECT_EQ(unpacked(f), (V{0, 1, 2, 3, 3, 2, 1}));
  EXPECT_EQ(unpacked(run1("Unsqueeze", {x, ints({0})})), kSeven);
  EXPECT_EQ(unpacked(run1("Identity", {x})), kSeven);
}

TEST(RefShapeTwoBit, ConcatAndSplitAtUnalignedOffsets) {
  const Tensor a = packed(DType::Int2, {5}, {-2, -1, 0, 1, -2});
  const Tensor b = packed(DType::Int2, {3}, {1, 1, -1});
  Tensor c = run1("Concat", {a, b}, {Attribute::make_int("axis", 0)});
  EXPECT_EQ(c.describe(), "int2[8]");
  EXPECT_EQ(unpacked(c), (V{-2, -1, 0, 1, -2, 1, 1, -1}));
  // Along axis 1: rows of 3 and 2 interleave into rows of 5 (ten elements, three bytes).
  Tensor d = run1("Concat", {packed(DType::UInt2, {2, 3}, {0, 1, 2, 3, 2, 1}), packed(DType::UInt2, {2, 2}, {3, 3, 0, 0})},
                  {Attribute::make_int("axis", 1)});
  EXPECT_EQ(d.describe(), "uint2[2,5]");
  EXPECT_EQ(d.bytes(), 3u);
  EXPECT_EQ(unpacked(d), (V{0, 1, 2, 3, 3, 3, 2, 1, 0, 0}));
  auto parts = run_op("Split", {packed(DType::Int2, {7}, kSeven), ints({3, 4})}, {}, 18, 2);
  EXPECT_EQ(unpacked(parts.at(0)), (V{-2, -1, 0}));
  EXPECT_EQ(unpacked(parts.at(1)), (V{1, 1, 0, -1}));
}

TEST(RefShapeTwoBit, GatherRowsAndColumns) {
  const Tensor x = packed(DType::Int2, {4, 3}, {-2, -1, 0, 1, 1, 0, -1, -2, -2, 0, 1, -1});
  Tensor rows = run1("Gather", {x, ints({3, 0, -1})});
  EXPECT_EQ(rows.describe(), "int2[3,3]");
  EXPECT_EQ(unpacked(rows), (V{0, 1, -1, -2, -1, 0, 0, 1, -1}));
  Tensor cols = run1("Gather", {packed(DType::UInt2, {2, 3}, {0, 1, 2, 3, 2, 1}), ints({2, 0})},
                     {Attribute::make_int("axis", 1)});
  EXPECT_EQ(unpacked(cols), (V{2, 0, 1, 3}));
}

TEST(RefShapeTwoBit, SliceWithSteps) {
  const Tensor x = packed(DType::Int2, {7}, kSeven);
  auto slice = [&](Shape starts, Shape ends, Shape steps) {
    return run1("Slice", {x, ints(starts), ints(ends), ints({0}), ints(steps)}, {}, 13);
  };
  EXPECT_EQ(unpacked(slice({1}, {7}, {2})), (V{-1, 1, 0}));
  EXPECT_EQ(unpacked(slice({-1}, {std::numeric_limits<int64_t>::min()}, {-3})), (V{-1, 1, -2}));
  EXPECT_EQ(unpacked(slice({2}, {7}, {1})), (V{0, 1, 1, 0, -1}));
  EXPECT_EQ(slice({3}, {3}, {1}).numel(), 0);
}

TEST(RefShapeTwoBit, TransposeTileExpandPad) {
  Tensor t = run1("Transpose", {packed(DType::Int2, {2, 3}, {-2, -1, 0, 1, 1, -1})});
  EXPECT_EQ(t.describe(), "int2[3,2]");
  EXPECT_EQ(unpacked(t), (V{-2, 1, -1, 1, 0, -1}));
  Tensor tile = run1("Tile", {packed(DType::UInt2, {3}, {1, 2, 3}), ints({3})});
  EXPECT_EQ(tile.bytes(), 3u);
  EXPECT_EQ(unpacked(tile), (V{1, 2, 3, 1, 2, 3, 1, 2, 3}));
  Tensor e = run1("Expand", {packed(DType::Int2, {1, 3}, {1, -2, -1}), ints({3, 3})});
  EXPECT_EQ(unpacked(e), (V{1, -2, -1, 1, -2, -1, 1, -2, -1}));
  // Pad with the default zero and with an int2 constant.
  const Tensor x = packed(DType::Int2, {3}, {1, -2, -1});
  EXPECT_EQ(unpacked(run1("Pad", {x, ints({1, 2})})), (V{0, 1, -2, -1, 0, 0}));
  EXPECT_EQ(unpacked(run1("Pad", {x, ints({2, 3}), packed(DType::Int2, {}, {-2})})),
            (V{-2, -2, 1, -2, -1, -2, -2, -2}));
}

}  // namespace
}  // namespace octet
