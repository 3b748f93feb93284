// Reference kernels: Cast and CastLike across numeric types, bool, float8 and int4.
#include <cmath>
#include <limits>

#include "ref_math_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;
using I = std::vector<int64_t>;
using B = std::vector<uint8_t>;
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

Tensor cast(const Tensor& x, DType to, std::vector<Attribute> extra = {}) {
  extra.push_back(Attribute::make_int("to", dtype_to_onnx(to)));
  Tensor y = run1("Cast", {x}, extra);
  EXPECT_EQ(y.dtype(), to);
  EXPECT_EQ(y.shape(), x.shape());
  return y;
}

TEST(RefMathCast, FloatToIntegerTruncatesTowardZero) {
  EXPECT_EQ(ints(cast(f32({4}, {1.9f, -1.9f, 2.5f, -0.5f}), DType::Int32)), (I{1, -1, 2, 0}));
  EXPECT_EQ(ints(cast(f16({2}, {3.75f, -3.75f}), DType::Int64)), (I{3, -3}));
  // Out of range is undefined in ONNX; octet keeps the low bits of the truncated value
  // (numpy's behaviour) and maps NaN to 0.
  EXPECT_EQ(ints(cast(f32({3}, {300.7f, -1, kNaN}), DType::UInt8)), (I{44, 255, 0}));
}

TEST(RefMathCast, IntegerToIntegerKeepsLowBits) {
  EXPECT_EQ(ints(cast(tensor<int16_t>({2}, {200, -129}), DType::Int8)), (I{-56, 127}));
  EXPECT_EQ(ints(cast(tensor<int8_t>({1}, {-1}), DType::UInt16)), (I{65535}));
  EXPECT_EQ(ints(cast(i64({1}, {int64_t{1} << 40}), DType::Int32)), (I{0}));
  EXPECT_EQ(ints(cast(tensor<uint64_t>({1}, {UINT64_MAX}), DType::Int64)), (I{-1}));
}

TEST(RefMathCast, BoolConversions) {
  EXPECT_EQ(ints(cast(tensor<int32_t>({3}, {0, 36, -1}), DType::Bool)), (I{0, 1, 1}));
  EXPECT_EQ(ints(cast(f32({4}, {0.0f, -0.0f, 0.1f, kNaN}), DType::Bool)), (I{0, 0, 1, 1}));
  EXPECT_EQ(floats(cast(tensor<bool>({2}, {true, false}), DType::Float16)), (std::vector<float>{1, 0}));
  EXPECT_EQ(ints(cast(tensor<bool>({2}, {true, false}), DType::Int64)), (I{1, 0}));
}

TEST(RefMathCast, FloatNarrowingRoundsOnceToNearestEven) {
  // 65520 is half-way between fp16's max 65504 and 65536: rounds to inf.
  expect_near(floats(cast(f32({3}, {65520.0f, 1.0f + 0x1p-11f, -kInf}), DType::Float16)), {kInf, 1, -kInf});
  // Just above the fp16 tie: rounding to float first would make it a tie and round down.
  Tensor d = tensor<double>({2}, {1.0 + 0x1p-11 + 0x1p-40, 1.0 + 0x1p-8 + 0x1p-40});
  EXPECT_EQ(floats(cast(d, DType::Float16))[0], 1.0f + 0x1p-10f);
  EXPECT_EQ(floats(cast(d, DType::BFloat16))[1], 1.0f + 0x1p-7f);
  EXPECT_EQ(floats(cast(i64({1}, {(int64_t{1} << 53) + 1}), DType::Float32))[0], 9007199254740992.0f);
  EXPECT_EQ(doubles(cast(bf16({1}, {1.5f}), DType::Float64)), (std::vector<double>{1.5}));
}

TEST(RefMathCast, SameTypeSharesTheBuffer) {
  const Tensor x = f32({2}, {1, 2});
  EXPECT_EQ(cast(x, DType::Float32).buffer(), x.buffer());
}

TEST(RefMathCast, Float8SaturatesOrNot) {
  const Tensor x = f32({8}, {1.0f, 448, 500, -1000, 0.0001f, kNaN, kInf, 0.001953125f});
  EXPECT_EQ(bytes_of(cast(x, DType::Float8E4M3FN)), (B{0x38, 0x7E, 0x7E, 0xFE, 0x00, 0x7F, 0x7E, 0x01}));
  EXPECT_EQ(bytes_of(cast(x, DType::Float8E4M3FN, {Attribute::make_int("saturate", 0)})),
            (B{0x38, 0x7E, 0x7F, 0xFF, 0x00, 0x7F, 0x7F, 0x01}));
  const Tensor y = f32({4}, {1.0f, kInf, -1e6f, -0.0f});
  EXPECT_EQ(bytes_of(cast(y, DType::Float8E5M2)), (B{0x3C, 0x7B, 0xFB, 0x80}));
  EXPECT_EQ(bytes_of(cast(y, DType::Float8E5M2, {Attribute::make_int("saturate", 0)})), (B{0x3C, 0x7C, 0xFC, 0x80}));
  // FNUZ: no negative zero, NaN is 0x80.
  EXPECT_EQ(bytes_of(cast(f32({3}, {1.0f, -0.0f, kNaN}), DType::Float8E4M3FNUZ)), (B{0x40, 0x00, 0x80}));
  expect_near(floats(cast(raw_tensor(DType::Float8E4M3FN, {3}, {0x38, 0x01, 0xFF}), DType::Float32)),
              {1.0f, 0.001953125f, kNaN});
  expect_near(floats(cast(raw_tensor(DType::Float8E5M2, {2}, {0x7C, 0xFB}), DType::Float16)), {kInf, -57344});
}

TEST(RefMathCast, Int4PacksLowNibbleFirst) {
  Tensor q = cast(f32({3}, {-9, -8, 7.9f}), DType::Int4);
  EXPECT_EQ(bytes_of(q), (B{0x87, 0x07}));  // -9 keeps its low bits: 7
  EXPECT_EQ(ints(cast(q, DType::Int8)), (I{7, -8, 7}));
  EXPECT_EQ(floats(cast(raw_tensor(DType::UInt4, {3}, {0x21, 0x0F}), DType::Float32)), (std::vector<float>{1, 2, 15}));
  EXPECT_EQ(bytes_of(cast(tensor<uint8_t>({2}, {17, 2}), DType::UInt4)), (B{0x21}));
  Tensor f4 = cast(f32({4}, {0.5f, 1.75f, -7, 3}), DType::Float4E2M1);
  EXPECT_EQ(floats(cast(f4, DType::Float32)), (std::vector<float>{0.5f, 2, -6, 3}));
}

TEST(RefMathCast, Int2WrapsAndPacksFourPerByte) {
  // The backend tests' values: -3..3 keep their low two bits (-3 -> 1, 2 -> -2 as int2).
  const Tensor x = f32({7, 1}, {-3, -2, -1, 0, 1, 2, 3});
  Tensor q = cast(x, DType::Int2);
  EXPECT_EQ(bytes_of(q), (B{0x39, 0x39}));  // 1, -2, -1, 0 | 1, -2, -1
  EXPECT_EQ(ints(cast(q, DType::Int8)), (I{1, -2, -1, 0, 1, -2, -1}));
  EXPECT_EQ(floats(cast(q, DType::Float16)), (std::vector<float>{1, -2, -1, 0, 1, -2, -1}));
  Tensor u = cast(x, DType::UInt2);
  EXPECT_EQ(bytes_of(u), (B{0x39, 0x39}));  // 1, 2, 3, 0 | 1, 2, 3: the same bits
  EXPECT_EQ(floats(cast(u, DType::Float32)), (std::vector<float>{1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(ints(cast(u, DType::UInt8)), (I{1, 2, 3, 0, 1, 2, 3}));
  // Integers keep their low bits; fractions truncate first.
  EXPECT_EQ(bytes_of(cast(tensor<uint8_t>({2}, {5, 255}), DType::UInt2)), (B{0x0D}));
  EXPECT_EQ(bytes_of(cast(f32({3}, {1.9f, -1.9f, 0.5f}), DType::Int2)), (B{0x0D}));  // 1, -1, 0
  // Between packed types: int2 [-2, 1] -> int4 nibbles 0xE, 0x1; int4 [7, -8] -> int2 [-1, 0].
  EXPECT_EQ(bytes_of(cast(raw_tensor(DType::Int2, {2}, {0x06}), DType::Int4)), (B{0x1E}));
  EXPECT_EQ(bytes_of(cast(raw_tensor(DType::Int4, {2}, {0x87}), DType::Int2)), (B{0x03}));
  // Bool and back.
  EXPECT_EQ(ints(cast(raw_tensor(DType::Int2, {3}, {0x2C}), DType::Bool)), (I{0, 1, 1}));
  EXPECT_EQ(bytes_of(cast(tensor<bool>({3}, {true, false, true}), DType::UInt2)), (B{0x11}));
}

Tensor to_e8m0(const Tensor& x, const std::string& mode = "", int saturate = -1) {
  std::vector<Attribute> attrs;
  if (!mode.empty()) attrs.push_back(Attribute::make_string("round_mode", mode));
  if (saturate >= 0) attrs.push_back(Attribute::make_int("saturate", saturate));
  return cast(x, DType::Float8E8M0, attrs);
}

TEST(RefMathCast, Float8E8M0RoundsToAPowerOfTwo) {
  // The backend test: round up (the default) and saturate.
  const Tensor t = f32({2, 4}, {0.0f, 0.124f, 0.25f, 0.5f, 1.1f, 2.0f, 4.0f, 8.0f});
  EXPECT_EQ(bytes_of(to_e8m0(t)), (B{0x00, 0x7C, 0x7D, 0x7E, 0x80, 0x80, 0x81, 0x82}));
  EXPECT_EQ(bytes_of(to_e8m0(f16({2, 4}, {0.0f, 0.124f, 0.25f, 0.5f, 1.1f, 2.0f, 4.0f, 8.0f}))),
            (B{0x00, 0x7C, 0x7D, 0x7E, 0x80, 0x80, 0x81, 0x82}));
  // up: away from zero; down: toward zero; nearest: the nearer power, 1.5 * 2^k rounding up.
  const Tensor x = f32({8}, {1, 1.1f, 1.49f, 1.5f, 2.9f, 3, 0.75f, 0.124f});
  EXPECT_EQ(bytes_of(to_e8m0(x, "up")), (B{0x7F, 0x80, 0x80, 0x80, 0x81, 0x81, 0x7F, 0x7C}));
  EXPECT_EQ(bytes_of(to_e8m0(x, "down")), (B{0x7F, 0x7F, 0x7F, 0x7F, 0x80, 0x80, 0x7E, 0x7B}));
  EXPECT_EQ(bytes_of(to_e8m0(x, "nearest")), (B{0x7F, 0x7F, 0x7F, 0x80, 0x80, 0x81, 0x7F, 0x7C}));
  // Integers and doubles go through the same rounding; negatives use their magnitude
  // (the spec leaves them unspecified; the ONNX reference does the same).
  EXPECT_EQ(bytes_of(to_e8m0(i64({3}, {1, 96, -4}), "nearest")), (B{0x7F, 0x86, 0x81}));
  EXPECT_EQ(bytes_of(to_e8m0(tensor<double>({2}, {0x1p-127, 0x1p127}), "down")), (B{0x00, 0xFE}));
}

TEST(RefMathCast, Float8E8M0SaturatesOrGivesNaN) {
  const double tiny = 0x1p-140, huge = 0x1p140;
  const Tensor x = tensor<double>({7}, {0.0, kInf, kNaN, tiny, huge, 0x1.8p127, -0.0});
  // Saturate (default): 0 and values below 2^-127 give 2^-127; inf and values above 2^127
  // give 2^127; 1.5 * 2^127 rounds up past the top and saturates too.
  EXPECT_EQ(bytes_of(to_e8m0(x)), (B{0x00, 0xFE, 0xFF, 0x00, 0xFE, 0xFE, 0x00}));
  EXPECT_EQ(bytes_of(to_e8m0(x, "down")), (B{0x00, 0xFE, 0xFF, 0x00, 0xFE, 0xFE, 0x00}));
  // Without saturation all of those are NaN; 1.5 * 2^127 rounded down is still in range.
  EXPECT_EQ(bytes_of(to_e8m0(x, "nearest", 0)), (B{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));
  EXPECT_EQ(bytes_of(to_e8m0(x, "down", 0)), (B{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE, 0xFF}));
  // float32's largest value rounds up to 2^128.
  const Tensor big = f32({1}, {std::numeric_limits<float>::max()});
  EXPECT_EQ(bytes_of(to_e8m0(big)), (B{0xFE}));
  EXPECT_EQ(bytes_of(to_e8m0(big, "up", 0)), (B{0xFF}));
  EXPECT_EQ(bytes_of(to_e8m0(big, "down", 0)), (B{0xFE}));
}

TEST(RefMathCast, Float8E8M0Decodes) {
  const Tensor e = raw_tensor(DType::Float8E8M0, {6}, {0x00, 0x7E, 0x7F, 0x80, 0xFE, 0xFF});
  Tensor f = cast(e, DType::Float32);
  expect_near(floats(f), {0x1p-127f, 0.5f, 1, 2, 0x1p127f, kNaN}, 0, 0);
  EXPECT_EQ(floats(f)[0], 0x1p-127f);  // a float32 subnormal, exactly
  // float16 has neither end: 2^-127 underflows to 0, 2^127 overflows to inf.
  expect_near(floats(cast(e, DType::Float16)), {0, 0.5f, 1, 2, kInf, kNaN});
  EXPECT_EQ(doubles(cast(e, DType::Float64))[4], 0x1p127);
  EXPECT_EQ(ints(cast(raw_tensor(DType::Float8E8M0, {2}, {0x7F, 0x85}), DType::Int32)), (I{1, 64}));
  // Round trips: every finite encoding decodes and re-encodes to itself in any mode.
  std::vector<uint8_t> all(255);
  for (int i = 0; i < 255; ++i) all[i] = static_cast<uint8_t>(i);
  const Tensor every = raw_tensor(DType::Float8E8M0, {255}, all);
  for (const char* mode : {"up", "down", "nearest"}) {
    EXPECT_EQ(bytes_of(to_e8m0(cast(every, DType::Float32), mode, 0)), all) << mode;
    EXPECT_EQ(bytes_of(to_e8m0(cast(every, DType::Float64), mode)), all) << mode;
  }
  // To another float8: 2^-127 is below float8e4m3fn's range (0), 2^127 saturates (448).
  EXPECT_EQ(bytes_of(cast(raw_tensor(DType::Float8E8M0, {3}, {0x00, 0x7F, 0xFE}), DType::Float8E4M3FN)),
            (B{0x00, 0x38, 0x7E}));
}

TEST(RefMathCast, RoundModeOnlyMattersForFloat8E8M0) {
  const Tensor x = f32({2}, {3, -2.5f});
  const std::vector<Attribute> down = {Attribute::make_string("round_mode", "down")};
  EXPECT_EQ(ints(cast(x, DType::Int8, down)), (I{3, -2}));
  // CastLike takes round_mode too (opset 24).
  Tensor y = run1("CastLike", {f32({2}, {3, 0.3f}), raw_tensor(DType::Float8E8M0, {0}, {})}, down, 25);
  EXPECT_EQ(y.dtype(), DType::Float8E8M0);
  EXPECT_EQ(bytes_of(y), (B{0x80, 0x7D}));
  expect_node_error([] { to_e8m0(f32({1}, {1}), "zero"); }, "round_mode is 'zero'");
}

TEST(RefMathCast, CastLikeTakesTheSecondInputsType) {
  Tensor y = run1("CastLike", {f32({2}, {1.5f, -2.5f}), tensor<int8_t>({0}, {})});
  EXPECT_EQ(y.dtype(), DType::Int8);
  EXPECT_EQ(ints(y), (I{1, -2}));
}

TEST(RefMathCast, Errors) {
  expect_node_error([] { run1("Cast", {f32({1}, {1})}); }, "'to' is required");
  expect_node_error([] { run1("Cast", {f32({1}, {1})}, {Attribute::make_int("to", 8)}); }, "string");
  expect_node_error([] { run1("Cast", {f32({1}, {1})}, {Attribute::make_int("to", 99)}); }, "99");
}

}  // namespace
}  // namespace octet
