// Reference kernels: MatMulInteger, QLinearMatMul, ConvInteger, com.microsoft MatMulNBits.
#include "ref_math_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;
using I = std::vector<int64_t>;
using F = std::vector<float>;
using U8 = std::vector<uint8_t>;

Tensor u8(std::vector<int64_t> shape, U8 v) { return tensor<uint8_t>(std::move(shape), std::move(v)); }

const Tensor& a23() {
  static const Tensor a = u8({2, 3}, {1, 2, 3, 4, 5, 6});
  return a;
}
const Tensor& b32() {
  static const Tensor b = u8({3, 2}, {1, 2, 3, 4, 5, 6});
  return b;
}

TEST(RefMathMatMulInteger, ZeroPointsPerTensorRowAndColumn) {
  Tensor y = run1("MatMulInteger", {a23(), b32(), u8({}, {1}), u8({}, {1})}, {}, 10);
  EXPECT_EQ(y.dtype(), DType::Int32);
  EXPECT_EQ(y.shape(), (I{2, 2}));
  EXPECT_EQ(ints(y), (I{10, 13, 28, 40}));
  // Per-row zero point of A ([M]) and per-column of B ([N]).
  EXPECT_EQ(ints(run1("MatMulInteger", {a23(), b32(), u8({2}, {1, 4}), u8({}, {1})}, {}, 10)), (I{10, 13, 10, 13}));
  EXPECT_EQ(ints(run1("MatMulInteger", {a23(), b32(), std::nullopt, u8({2}, {1, 2})}, {}, 10)), (I{16, 16, 34, 34}));
  EXPECT_EQ(ints(run1("MatMulInteger", {a23(), b32()}, {}, 10)), (I{22, 28, 49, 64}));
}

TEST(RefMathMatMulInteger, MixedSignsOneDAndBatchBroadcast) {
  EXPECT_EQ(ints(run1("MatMulInteger", {tensor<int8_t>({1, 2}, {-1, 2}), u8({2, 1}, {255, 1})}, {}, 10)), (I{-253}));
  Tensor v = run1("MatMulInteger", {u8({3}, {1, 1, 1}), b32()}, {}, 10);
  EXPECT_EQ(v.shape(), (I{2}));
  EXPECT_EQ(ints(v), (I{9, 12}));
  Tensor bt = run1("MatMulInteger", {u8({2, 1, 3}, {1, 0, 0, 0, 0, 1}), b32()}, {}, 10);
  EXPECT_EQ(bt.shape(), (I{2, 1, 2}));
  EXPECT_EQ(ints(bt), (I{1, 2, 5, 6}));
  expect_node_error([] { run1("MatMulInteger", {a23(), a23()}, {}, 10); }, "inner dimensions");
  expect_node_error([] { run1("MatMulInteger", {a23(), b32(), tensor<int8_t>({}, {0})}, {}, 10); }, "zero point is int8");
  expect_node_error([] { run1("MatMulInteger", {a23(), b32(), u8({3}, {0, 0, 0})}, {}, 10); }, "does not fit");
}

TEST(RefMathQLinearMatMul, SpecExample) {
  const Tensor a = u8({2, 4}, {208, 236, 0, 238, 3, 214, 255, 29});
  const Tensor b = u8({4, 3}, {152, 51, 244, 60, 26, 255, 0, 127, 246, 127, 254, 247});
  Tensor y = run1("QLinearMatMul", {a, f32({}, {0.0066f}), u8({}, {113}), b, f32({}, {0.00705f}), u8({}, {114}),
                                    f32({}, {0.0107f}), u8({}, {118})},
                  {}, 10);
  EXPECT_EQ(y.dtype(), DType::UInt8);
  EXPECT_EQ(ints(y), (I{168, 115, 255, 1, 66, 151}));
  // Per-row a_scale and int8 output.
  Tensor z = run1("QLinearMatMul", {u8({2, 1}, {2, 2}), f32({2}, {1, 2}), u8({}, {0}), u8({1, 1}, {3}), f32({}, {1}),
                                    u8({}, {0}), f32({}, {4}), tensor<int8_t>({}, {-1})},
                  {}, 10);
  EXPECT_EQ(ints(z), (I{1, 2}));  // 6/4 = 1.5 -> 2, 12/4 = 3; minus 1
}

TEST(RefMathConvInteger, SpecExamplesAndPadding) {
  const Tensor x = u8({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  const Tensor w = u8({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor y = run1("ConvInteger", {x, w, u8({}, {1})}, {}, 10);
  EXPECT_EQ(y.dtype(), DType::Int32);
  EXPECT_EQ(y.shape(), (I{1, 1, 2, 2}));
  EXPECT_EQ(ints(y), (I{12, 16, 24, 28}));
  Tensor p = run1("ConvInteger", {x, w, u8({}, {1})}, {Attribute::make_ints("pads", {1, 1, 1, 1})}, 10);
  EXPECT_EQ(p.shape(), (I{1, 1, 4, 4}));
  EXPECT_EQ(ints(p), (I{1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}));
  Tensor s = run1("ConvInteger", {x, w, u8({}, {1})},
                  {Attribute::make_ints("pads", {1, 1, 1, 1}), Attribute::make_ints("strides", {2, 2})}, 10);
  EXPECT_EQ(ints(s), (I{1, 5, 11, 28}));
}

TEST(RefMathConvInteger, GroupsPerChannelZeroPointsAndAutoPad) {
  const Tensor x = u8({1, 2, 1, 1}, {3, 5});
  EXPECT_EQ(ints(run1("ConvInteger", {x, u8({2, 1, 1, 1}, {2, 3})}, {Attribute::make_int("group", 2)}, 10)), (I{6, 15}));
  EXPECT_EQ(ints(run1("ConvInteger", {x, u8({2, 1, 1, 1}, {2, 3}), std::nullopt, u8({2}, {1, 1})},
                      {Attribute::make_int("group", 2)}, 10)),
            (I{3, 10}));
  const Tensor x1 = u8({1, 1, 4}, {1, 2, 3, 4});
  const Tensor w1 = u8({1, 1, 3}, {1, 1, 1});
  EXPECT_EQ(ints(run1("ConvInteger", {x1, w1}, {Attribute::make_string("auto_pad", "SAME_UPPER")}, 10)), (I{3, 6, 9, 7}));
  const auto stride2 = Attribute::make_ints("strides", {2});
  EXPECT_EQ(ints(run1("ConvInteger", {x1, w1}, {Attribute::make_string("auto_pad", "SAME_UPPER"), stride2}, 10)), (I{6, 7}));
  EXPECT_EQ(ints(run1("ConvInteger", {x1, w1}, {Attribute::make_string("auto_pad", "SAME_LOWER"), stride2}, 10)), (I{3, 9}));
  EXPECT_EQ(ints(run1("ConvInteger", {x1, w1}, {Attribute::make_string("auto_pad", "VALID")}, 10)), (I{6, 9}));
  Tensor d = run1("ConvInteger", {u8({1, 1, 5}, {1, 2, 3, 4, 5}), u8({1, 1, 2}, {1, 1})},
                  {Attribute::make_ints("dilations", {2})}, 10);
  EXPECT_EQ(ints(d), (I{4, 6, 8}));
  expect_node_error([&] { run1("ConvInteger", {x, u8({2, 1, 1, 1}, {2, 3})}, {}, 10); }, "group");
}

// MatMulNBits weights: N rows of k_blocks blocks of `blob` bytes.
Tensor nbits_b(int64_t n, int64_t k_blocks, int64_t blob, U8 bytes) { return u8({n, k_blocks, blob}, std::move(bytes)); }
std::vector<Attribute> nbits_attrs(int64_t K, int64_t N, int64_t bits = 4, int64_t block = 16) {
  return {Attribute::make_int("K", K), Attribute::make_int("N", N), Attribute::make_int("bits", bits),
          Attribute::make_int("block_size", block)};
}
Tensor run_nbits(std::vector<std::optional<Tensor>> inputs, std::vector<Attribute> attrs) {
  return run({"MatMulNBits", std::move(inputs), std::move(attrs), 21, 1, "com.microsoft"}).at(0);
}

TEST(RefMathMatMulNBits, DefaultAndPackedZeroPoints) {
  std::vector<float> a(16);
  for (int i = 0; i < 16; ++i) a[i] = static_cast<float>(i + 1);  // sum 136
  const Tensor A = f32({1, 16}, a);
  const Tensor B = nbits_b(1, 1, 8, U8(8, 0x99));  // every weight is 9
  // Default zero point 8: weights are (9 - 8) * 0.5.
  EXPECT_EQ(floats(run_nbits({A, B, f32({1}, {0.5f})}, nbits_attrs(16, 1))), (F{68}));
  // Packed zero point 7 (low nibble of the row's byte), plus bias.
  EXPECT_EQ(floats(run_nbits({A, B, f32({1}, {0.5f}), u8({1}, {0x07}), std::nullopt, f32({1}, {2})}, nbits_attrs(16, 1))),
            (F{138}));  // (9 - 7) * 0.5 = 1 per weight
  // Weights 0..15 in order (low nibble first), zero point 8: sum(j - 8) = -8.
  const Tensor ramp = nbits_b(1, 1, 8, {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE});
  EXPECT_EQ(floats(run_nbits({f32({16}, std::vector<float>(16, 1)), ramp, f32({1}, {1})}, nbits_attrs(16, 1))), (F{-8}));
}

TEST(RefMathMatMulNBits, TailBlockFloatZeroPointsHalfAndEightBits) {
  const Tensor ones = f32({2, 20}, std::vector<float>(40, 1));
  // K = 20: two blocks of 16, the second uses 4 values. N = 1.
  const Tensor B = nbits_b(1, 2, 8, U8(16, 0x99));
  Tensor y = run_nbits({ones, B, f32({2}, {1, 2})}, nbits_attrs(20, 1));
  EXPECT_EQ(y.shape(), (I{2, 1}));
  EXPECT_EQ(floats(y), (F{24, 24}));  // 16 * 1 + 4 * 2
  // Unpacked float zero points: (9 - 8.5) * 1 * 16 + (9 - 9) * 2 * 4.
  EXPECT_EQ(floats(run_nbits({ones, B, f32({2}, {1, 2}), f32({1, 2}, {8.5f, 9})}, nbits_attrs(20, 1))), (F{8, 8}));
  Tensor h = run_nbits({f16({1, 16}, std::vector<float>(16, 1)), nbits_b(1, 1, 8, U8(8, 0x99)), f16({1}, {0.25f})},
                       nbits_attrs(16, 1));
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(floats(h), (F{4}));
  // 8 bits: one byte per weight, default zero point 128; N = 2.
  U8 b8(32, 130);
  for (int i = 16; i < 32; ++i) b8[i] = 126;
  EXPECT_EQ(floats(run_nbits({f32({16}, std::vector<float>(16, 1)), nbits_b(2, 1, 16, b8), f32({2}, {1, 1})},
                             nbits_attrs(16, 2, 8))),
            (F{32, -32}));
}

TEST(RefMathMatMulNBits, Errors) {
  const Tensor A = f32({1, 16}, std::vector<float>(16, 1));
  const Tensor B = nbits_b(1, 1, 8, U8(8, 0));
  expect_node_error([&] { run_nbits({A, B, f32({1}, {1})}, nbits_attrs(16, 1, 3)); }, "bits=3");
  expect_node_error([&] { run_nbits({A, B, f32({2}, {1, 1})}, nbits_attrs(16, 1)); }, "scales must be");
  expect_node_error([&] { run_nbits({A, B, f32({1}, {1})}, nbits_attrs(32, 1)); }, "last dim must be K=32");
  expect_node_error([&] { run_nbits({A, B, f32({1}, {1}), std::nullopt, tensor<int32_t>({16}, std::vector<int32_t>(16, 0))},
                                    nbits_attrs(16, 1)); },
                    "g_idx");
}

}  // namespace
}  // namespace octet
