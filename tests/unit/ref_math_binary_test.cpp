// Reference kernels: broadcasting binary ops, comparisons, logic, bitwise ops, the
// variadic Min/Max/Sum/Mean and Where.
#include <cmath>
#include <limits>

#include "ref_math_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;
using I = std::vector<int64_t>;
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(RefMathBinary, BroadcastsBothWays) {
  Tensor y = run1("Add", {f32({2, 1}, {1, 2}), f32({3}, {10, 20, 30})});
  EXPECT_EQ(y.shape(), (I{2, 3}));
  EXPECT_EQ(floats(y), (std::vector<float>{11, 21, 31, 12, 22, 32}));
  Tensor z = run1("Sub", {f32({3}, {10, 20, 30}), f32({2, 1}, {1, 2})});
  EXPECT_EQ(z.shape(), (I{2, 3}));
  EXPECT_EQ(floats(z), (std::vector<float>{9, 19, 29, 8, 18, 28}));
  // Size-1 dims in the middle, and a rank-0 operand.
  Tensor m = run1("Mul", {f32({2, 1, 2}, {1, 2, 3, 4}), f32({1, 2, 1}, {10, 100})});
  EXPECT_EQ(m.shape(), (I{2, 2, 2}));
  EXPECT_EQ(floats(m), (std::vector<float>{10, 20, 100, 200, 30, 40, 300, 400}));
  Tensor s = run1("Div", {f32({}, {1}), f32({2}, {2, 4})});
  EXPECT_EQ(s.shape(), (I{2}));
  EXPECT_EQ(floats(s), (std::vector<float>{0.5f, 0.25f}));
  Tensor r0 = run1("Add", {f32({}, {1}), f32({}, {2})});
  EXPECT_EQ(r0.shape(), (I{}));
  EXPECT_EQ(floats(r0), (std::vector<float>{3}));
}

TEST(RefMathBinary, EmptyTensorsBroadcast) {
  EXPECT_EQ(run1("Add", {f32({0, 3}, {}), f32({3}, {1, 2, 3})}).shape(), (I{0, 3}));
  EXPECT_EQ(run1("Mul", {f32({2, 0}, {}), f32({2, 1}, {1, 2})}).shape(), (I{2, 0}));
  EXPECT_EQ(run1("Less", {f32({1, 0}, {}), f32({4, 1}, {1, 2, 3, 4})}).shape(), (I{4, 0}));
}

TEST(RefMathBinary, ErrorsNameTheNode) {
  expect_node_error([] { run1("Add", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), f32({4}, {1, 2, 3, 4})}); },
                    "cannot broadcast input shapes [2,3], [4]");
  expect_node_error([] { run1("Add", {f32({1}, {1}), i64({1}, {1})}); }, "different dtypes: float32 and int64");
  expect_node_error([] { run1("Add", {tensor<bool>({1}, {true}), tensor<bool>({1}, {true})}); }, "bool");
}

TEST(RefMathBinary, IntegerArithmeticWrapsAndDivTruncates) {
  EXPECT_EQ(ints(run1("Add", {tensor<int8_t>({2}, {100, -100}), tensor<int8_t>({2}, {100, -100})})), (I{-56, 56}));
  EXPECT_EQ(ints(run1("Sub", {tensor<uint8_t>({1}, {0}), tensor<uint8_t>({1}, {1})})), (I{255}));
  EXPECT_EQ(ints(run1("Mul", {tensor<int32_t>({1}, {INT32_MAX}), tensor<int32_t>({1}, {2})})), (I{-2}));
  EXPECT_EQ(ints(run1("Mul", {i64({1}, {INT64_MAX}), i64({1}, {2})})), (I{-2}));
  EXPECT_EQ(ints(run1("Div", {tensor<int32_t>({5}, {7, -7, 7, -7, INT32_MIN}),
                              tensor<int32_t>({5}, {2, 2, -2, -2, -1})})),
            (I{3, -3, -3, 3, INT32_MIN}));
  EXPECT_EQ(ints(run1("Div", {tensor<uint16_t>({1}, {65535}), tensor<uint16_t>({1}, {2})})), (I{32767}));
  expect_node_error([] { run1("Div", {i64({2}, {1, 2}), i64({2}, {1, 0})}); }, "integer division by zero");
  expect_near(floats(run1("Div", {f32({2}, {1, -1}), f32({2}, {0, 0})})), {kInf, -kInf});
}

TEST(RefMathBinary, HalfPrecisionRoundsOnce) {
  Tensor y = run1("Add", {f16({2}, {1, 2048}), f16({2}, {0.5f, 1})});
  EXPECT_EQ(y.dtype(), DType::Float16);
  EXPECT_EQ(floats(y), (std::vector<float>{1.5f, 2048}));  // 2049 ties to even
  Tensor z = run1("Mul", {bf16({2}, {3, 1.5f}), bf16({1}, {0.5f})});
  EXPECT_EQ(z.dtype(), DType::BFloat16);
  EXPECT_EQ(floats(z), (std::vector<float>{1.5f, 0.75f}));
}

TEST(RefMathBinary, PowMixesBaseAndExponentTypes) {
  expect_near(floats(run1("Pow", {f32({3}, {2, 3, 4}), i64({3}, {3, -1, 0})})), {8, 1.0f / 3, 1});
  Tensor ib = run1("Pow", {tensor<int32_t>({3}, {2, 3, 4}), f32({3}, {0.5f, 2, 1.5f})});
  EXPECT_EQ(ib.dtype(), DType::Int32);
  EXPECT_EQ(ints(ib), (I{1, 9, 8}));
  EXPECT_EQ(ints(run1("Pow", {i64({5}, {2, -2, 3, 2, -1}), i64({5}, {10, 3, 0, -1, -3})})), (I{1024, -8, 1, 0, -1}));
  EXPECT_EQ(floats(run1("Pow", {f16({1}, {2}), tensor<uint8_t>({1}, {10})})), (std::vector<float>{1024}));
  expect_near(floats(run1("Pow", {f32({2, 1}, {2, 3}), f32({}, {2})})), {4, 9});
  expect_node_error([] { run1("Pow", {tensor<uint8_t>({1}, {2}), tensor<uint8_t>({1}, {2})}); }, "base");
}

TEST(RefMathBinary, ModFollowsDivisorSignOrDividendSign) {
  const Tensor a = tensor<int32_t>({4}, {-4, 7, -7, 4});
  const Tensor b = tensor<int32_t>({4}, {3, -3, -3, 3});
  EXPECT_EQ(ints(run1("Mod", {a, b})), (I{2, -2, -1, 1}));
  EXPECT_EQ(ints(run1("Mod", {a, b}, {Attribute::make_int("fmod", 1)})), (I{-1, 1, -1, 1}));
  const Tensor x = f32({3}, {-4.5f, 7.5f, 4});
  const Tensor y = f32({3}, {2, -2, -2});
  expect_near(floats(run1("Mod", {x, y}, {Attribute::make_int("fmod", 1)})), {-0.5f, 1.5f, 0});
  expect_near(floats(run1("Mod", {x, y})), {1.5f, -0.5f, -0.0f});
  EXPECT_TRUE(std::signbit(floats(run1("Mod", {x, y}))[2]));  // zero takes the divisor's sign
  EXPECT_EQ(ints(run1("Mod", {tensor<uint8_t>({2}, {7, 250}), tensor<uint8_t>({1}, {4})})), (I{3, 2}));
  expect_node_error([&] { run1("Mod", {a, tensor<int32_t>({1}, {0})}); }, "modulo by zero");
}

TEST(RefMathBinary, PReluBroadcastsSlopeToX) {
  expect_near(floats(run1("PRelu", {f32({2, 2}, {-1, 2, -3, 4}), f32({2}, {0.1f, 0.5f})})), {-0.1f, 2, -0.3f, 4});
  expect_node_error([] { run1("PRelu", {f32({2}, {-1, 2}), f32({2, 2}, {1, 2, 3, 4})}); }, "does not broadcast");
}

TEST(RefMathCompare, ComparisonsBroadcastToBool) {
  const Tensor a = f32({2, 1}, {1, kNaN});
  const Tensor b = f32({3}, {0, 1, 2});
  Tensor lt = run1("Less", {a, b});
  EXPECT_EQ(lt.dtype(), DType::Bool);
  EXPECT_EQ(ints(lt), (I{0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(ints(run1("LessOrEqual", {a, b})), (I{0, 1, 1, 0, 0, 0}));
  EXPECT_EQ(ints(run1("Greater", {a, b})), (I{1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(ints(run1("GreaterOrEqual", {a, b})), (I{1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(ints(run1("Equal", {a, b})), (I{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(ints(run1("Equal", {tensor<bool>({2}, {true, false}), tensor<bool>({}, {false})})), (I{0, 1}));
  EXPECT_EQ(ints(run1("Less", {tensor<uint64_t>({1}, {UINT64_MAX}), tensor<uint64_t>({1}, {1})})), (I{0}));
  EXPECT_EQ(ints(run1("Equal", {Tensor::strings({2}, {"a", "b"}), Tensor::strings({}, {"b"})})), (I{0, 1}));
}

TEST(RefMathCompare, LogicAndBitwise) {
  const Tensor p = tensor<bool>({2, 1}, {true, false});
  const Tensor q = tensor<bool>({2}, {true, false});
  EXPECT_EQ(ints(run1("And", {p, q})), (I{1, 0, 0, 0}));
  EXPECT_EQ(ints(run1("Or", {p, q})), (I{1, 1, 1, 0}));
  EXPECT_EQ(ints(run1("Xor", {p, q})), (I{0, 1, 1, 0}));
  expect_node_error([] { run1("And", {f32({1}, {1}), f32({1}, {1})}); }, "float32");
  EXPECT_EQ(ints(run1("BitwiseAnd", {tensor<int8_t>({2}, {-1, 12}), tensor<int8_t>({2}, {5, 10})})), (I{5, 8}));
  EXPECT_EQ(ints(run1("BitwiseOr", {tensor<uint8_t>({1}, {12}), tensor<uint8_t>({1}, {3})})), (I{15}));
  EXPECT_EQ(ints(run1("BitwiseXor", {tensor<int32_t>({1}, {12}), tensor<int32_t>({1}, {10})})), (I{6}));
  EXPECT_EQ(ints(run1("BitwiseNot", {tensor<uint8_t>({2}, {0, 15})})), (I{255, 240}));
}

TEST(RefMathCompare, BitShift) {
  const auto right = std::vector<Attribute>{Attribute::make_string("direction", "RIGHT")};
  const auto left = std::vector<Attribute>{Attribute::make_string("direction", "LEFT")};
  EXPECT_EQ(ints(run1("BitShift", {tensor<uint8_t>({3}, {16, 4, 1}), tensor<uint8_t>({3}, {1, 2, 8})}, right)),
            (I{8, 1, 0}));
  EXPECT_EQ(ints(run1("BitShift", {tensor<uint8_t>({2}, {1, 255}), tensor<uint8_t>({1}, {1})}, left)), (I{2, 254}));
  // Signed (opset 28): arithmetic right shift; out-of-range shifts leave the sign fill.
  EXPECT_EQ(ints(run1("BitShift", {tensor<int8_t>({4}, {-16, -1, 5, -128}), tensor<int8_t>({4}, {2, 10, -1, 1})},
                      right, 28)),
            (I{-4, -1, 0, -64}));
  EXPECT_EQ(ints(run1("BitShift", {tensor<int8_t>({2}, {64, -1}), tensor<int8_t>({2}, {1, 7})}, left, 28)),
            (I{-128, -128}));
  expect_node_error([] { run1("BitShift", {tensor<uint8_t>({1}, {1}), tensor<uint8_t>({1}, {1})}); }, "direction");
}

TEST(RefMathVariadic, MinMaxBroadcastAllInputsAndPropagateNaN) {
  const Tensor a = f32({2, 1}, {1, 5});
  const Tensor b = f32({3}, {0, 3, kNaN});
  const Tensor c = f32({}, {4});
  Tensor mx = run1("Max", {a, b, c});
  EXPECT_EQ(mx.shape(), (I{2, 3}));
  expect_near(floats(mx), {4, 4, kNaN, 5, 5, kNaN});
  expect_near(floats(run1("Min", {a, b, c})), {0, 1, kNaN, 0, 3, kNaN});
  EXPECT_EQ(ints(run1("Max", {tensor<uint8_t>({2}, {1, 200}), tensor<uint8_t>({2}, {100, 2})})), (I{100, 200}));
  EXPECT_EQ(floats(run1("Min", {f32({2}, {3, -1})})), (std::vector<float>{3, -1}));  // one input
}

TEST(RefMathVariadic, SumAndMean) {
  const Tensor a = f32({2}, {1, 2});
  const Tensor b = f32({2, 1}, {10, 20});
  const Tensor c = f32({}, {100});
  expect_near(floats(run1("Sum", {a, b, c})), {111, 112, 121, 122});
  expect_near(floats(run1("Mean", {a, b, c})), {37, 37.333333f, 40.333333f, 40.666667f});
  Tensor h = run1("Mean", {f16({1}, {1}), f16({1}, {2})});
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(floats(h), (std::vector<float>{1.5f}));
  expect_node_error([] { run1("Sum", {i64({1}, {1}), i64({1}, {1})}); }, "int64");
}

TEST(RefMathVariadic, WhereBroadcastsThreeWays) {
  const Tensor cond = tensor<bool>({2, 1}, {true, false});
  Tensor y = run1("Where", {cond, i64({1, 3}, {1, 2, 3}), i64({}, {-1})});
  EXPECT_EQ(y.shape(), (I{2, 3}));
  EXPECT_EQ(ints(y), (I{1, 2, 3, -1, -1, -1}));
  Tensor h = run1("Where", {tensor<bool>({2}, {false, true}), f16({2}, {1, 2}), f16({2}, {3, 4})});
  EXPECT_EQ(floats(h), (std::vector<float>{3, 2}));
  Tensor s = run1("Where", {tensor<bool>({2}, {false, true}), Tensor::strings({}, {"x"}), Tensor::strings({2}, {"a", "b"})});
  EXPECT_EQ(s.string_data(), (std::vector<std::string>{"a", "x"}));
  expect_node_error([&] { run1("Where", {f32({1}, {1}), f32({1}, {1}), f32({1}, {1})}); }, "condition");
  expect_node_error([&] { run1("Where", {cond, f32({1}, {1}), i64({1}, {1})}); }, "different dtypes");
}

}  // namespace
}  // namespace octet
