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
