// Reference kernels: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear.
#include <cmath>
#include <limits>

#include "ref_math_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;
using I = std::vector<int64_t>;
using F = std::vector<float>;
using B = std::vector<uint8_t>;
const float kNaN = std::numeric_limits<float>::quiet_NaN();

Attribute axis(int64_t a) { return Attribute::make_int("axis", a); }
Attribute block(int64_t b) { return Attribute::make_int("block_size", b); }

TEST(RefMathQuantize, PerTensorRoundsHalfToEvenAndSaturates) {
  // The ONNX spec's example.
  Tensor y = run1("QuantizeLinear", {f32({6}, {0, 2, 3, 1000, -254, -1000}), f32({}, {2}),
                                     tensor<uint8_t>({}, {128})});
  EXPECT_EQ(y.dtype(), DType::UInt8);
  EXPECT_EQ(ints(y), (I{128, 129, 130, 255, 1, 0}));
  Tensor h = run1("QuantizeLinear", {f32({5}, {1, 5, -1, -3, kNaN}), f32({}, {2}), tensor<int8_t>({}, {0})});
  EXPECT_EQ(ints(h), (I{0, 2, 0, -2, 0}));  // 0.5, 2.5, -0.5, -1.5; NaN -> zero point
  // No zero point: uint8; output_dtype picks another type.
  EXPECT_EQ(run1("QuantizeLinear", {f32({1}, {1}), f32({}, {1})}).dtype(), DType::UInt8);
  Tensor o = run1("QuantizeLinear", {f32({2}, {-300, 3}), f32({}, {1})},
                  {Attribute::make_int("output_dtype", dtype_to_onnx(DType::Int8))});
  EXPECT_EQ(o.dtype(), DType::Int8);
  EXPECT_EQ(ints(o), (I{-128, 3}));
}

TEST(RefMathQuantize, PerAxisAndBlocked) {
  Tensor y = run1("QuantizeLinear", {f32({1, 3, 2}, {1, 2, 4, 8, 16, 32}), f32({3}, {1, 2, 4}),
                                     tensor<uint8_t>({3}, {0, 10, 20})});
  EXPECT_EQ(ints(y), (I{1, 2, 12, 14, 24, 28}));
  Tensor b = run1("QuantizeLinear", {f32({2, 4}, {1, 2, 3, 4, 8, 16, 24, 32}), f32({2, 2}, {1, 2, 4, 8}),
                                     tensor<int8_t>({2, 2}, {0, 0, 0, 0})},
                  {axis(1), block(2)});
  EXPECT_EQ(ints(b), (I{1, 2, 2, 2, 2, 4, 3, 4}));
  // A block size that does not divide the axis: the last block is short.
  Tensor t = run1("QuantizeLinear", {f32({1, 5}, {1, 1, 1, 1, 1}), f32({1, 3}, {1, 0.5f, 0.25f}),
                                     tensor<uint8_t>({1, 3}, {0, 0, 0})},
                  {axis(1), block(2)});
  EXPECT_EQ(ints(t), (I{1, 1, 2, 2, 4}));
  // Per-axis along a negative axis.
  EXPECT_EQ(ints(run1("QuantizeLinear", {f32({2, 2}, {2, 2, 2, 2}), f32({2}, {1, 2}), tensor<uint8_t>({2}, {0, 0})},
                      {axis(-1)})),
            (I{2, 1, 2, 1}));
}

TEST(RefMathQuantize, FourAndSixteenBitOutputs) {
  Tensor q = run1("QuantizeLinear", {f32({5}, {-9, -1.5f, 7.4f, 100, 0}), f32({}, {1}), raw_tensor(DType::Int4, {}, {0})});
  EXPECT_EQ(q.dtype(), DType::Int4);
  EXPECT_EQ(bytes_of(q), (B{0xE8, 0x77, 0x00}));  // -8, -2, 7, 7, 0: low nibble first
  Tensor u = run1("QuantizeLinear", {f32({3}, {-1, 3, 99}), f32({}, {1}), raw_tensor(DType::UInt4, {}, {2})});
  EXPECT_EQ(bytes_of(u), (B{0x51, 0x0F}));  // 1, 5, 15
  EXPECT_EQ(ints(run1("QuantizeLinear", {f32({2}, {-1, 70000}), f32({}, {1}), tensor<uint16_t>({}, {0})})),
            (I{0, 65535}));
  EXPECT_EQ(ints(run1("QuantizeLinear", {f32({2}, {-40000, 3.5f}), f32({}, {1}), tensor<int16_t>({}, {0})})),
            (I{-32768, 4}));
}

// int2/uint2 need opset 25 (checked by inference, see ops_math_test.cpp).
Tensor quantize25(std::vector<std::optional<Tensor>> in, std::vector<Attribute> attrs = {}) {
  return run1("QuantizeLinear", std::move(in), std::move(attrs), 25);
}
Tensor dequantize25(std::vector<std::optional<Tensor>> in, std::vector<Attribute> attrs = {}) {
  return run1("DequantizeLinear", std::move(in), std::move(attrs), 25);
}

TEST(RefMathQuantize, TwoBitOutputsSaturateAndPack) {
  // int2 saturates to [-2, 1]: -3, -1.5, 0.5, 1.5, 7, NaN -> -2, -2, 0, 1, 1, 0 (half to even).
  Tensor q = quantize25({f32({6}, {-3, -1.5f, 0.5f, 1.5f, 7, kNaN}), f32({}, {1}), raw_tensor(DType::Int2, {}, {0})});
  EXPECT_EQ(q.dtype(), DType::Int2);
  EXPECT_EQ(bytes_of(q), (B{0x4A, 0x01}));
  // uint2 saturates to [0, 3], here around zero point 1.
  Tensor u = quantize25({f32({5}, {-2, 0, 1.4f, 2.5f, 9}), f32({}, {1}), raw_tensor(DType::UInt2, {}, {1})});
  EXPECT_EQ(bytes_of(u), (B{0xE4, 0x03}));  // 0, 1, 2, 3, 3
  // output_dtype alone picks the type too.
  Tensor o = quantize25({f32({3}, {1, -1, -5}), f32({}, {1})},
                        {Attribute::make_int("output_dtype", dtype_to_onnx(DType::Int2))});
  EXPECT_EQ(o.dtype(), DType::Int2);
  EXPECT_EQ(bytes_of(o), (B{0x2D}));  // 1, -1, -2
}

TEST(RefMathQuantize, TwoBitPerAxisAndBlocked) {
  // Per axis (the backend tests' layout) and blocked, checked against the ONNX reference.
  Tensor a = quantize25({f32({2, 3}, {1, 2, 3, 4, 5, 6.5f}), f32({2}, {1, 2}), raw_tensor(DType::UInt2, {2}, {0})},
                        {axis(0)});
  EXPECT_EQ(bytes_of(a), (B{0xB9, 0x0E}));  // 1, 2, 3 | 2, 2, 3
  Tensor b = quantize25({f32({2, 4}, {1, -1, 2, -2, 0.5f, 1, 4, -8}), f32({2, 2}, {1, 2, 0.5f, 4}),
                         raw_tensor(DType::Int2, {2, 2}, {0})},
                        {axis(1), block(2)});
  EXPECT_EQ(bytes_of(b), (B{0xDD, 0x95}));  // 1, -1, 1, -1 | 1, 1, 1, -2
}

TEST(RefMathQuantize, Float8E8M0Scale) {
  // MX-style power-of-two scale (opset 24): x / 2 in float32.
  Tensor q = run1("QuantizeLinear", {f32({3}, {3, -6, 1}), raw_tensor(DType::Float8E8M0, {}, {0x80}),
                                     tensor<int8_t>({}, {0})},
                  {}, 24);
  EXPECT_EQ(ints(q), (I{2, -3, 0}));  // 1.5 -> 2, -3, 0.5 -> 0
  Tensor b = quantize25({f32({1, 4}, {1, 1, 1, 1}), raw_tensor(DType::Float8E8M0, {1, 2}, {0x7E, 0x80}),
                         raw_tensor(DType::Int2, {1, 2}, {0})},
                        {axis(1), block(2)});
  EXPECT_EQ(bytes_of(b), (B{0x05}));  // 1 / 0.5 = 2 -> 1 (saturated), 1 / 2 = 0.5 -> 0
}

TEST(RefMathQuantize, DivisionHappensInTheScalesPrecision) {
  // 2.5004 / 1 is 2.5004 in float32 (rounds to 3) but 2.5 in float16 (rounds to 2).
  const Tensor x = f32({1}, {2.5004f});
  EXPECT_EQ(ints(run1("QuantizeLinear", {x, f32({}, {1}), tensor<uint8_t>({}, {0})})), (I{3}));
  EXPECT_EQ(ints(run1("QuantizeLinear", {x, f16({}, {1}), tensor<uint8_t>({}, {0})})), (I{2}));
  EXPECT_EQ(ints(run1("QuantizeLinear", {x, f16({}, {1}), tensor<uint8_t>({}, {0})},
                      {Attribute::make_int("precision", dtype_to_onnx(DType::Float32))}, 25)),
            (I{3}));
  EXPECT_EQ(ints(run1("QuantizeLinear", {f16({2}, {3, -3}), f16({}, {2}), tensor<int8_t>({}, {0})})), (I{2, -2}));
  EXPECT_EQ(ints(run1("QuantizeLinear", {tensor<int32_t>({2}, {7, -9}), f32({}, {2}), tensor<int8_t>({}, {1})})),
            (I{5, -3}));
}

TEST(RefMathQuantize, Float8Outputs) {
  const Tensor x = f32({3}, {1, 500, -2});
  Tensor y = run1("QuantizeLinear", {x, f32({}, {1}), raw_tensor(DType::Float8E4M3FN, {1}, {0})});
  EXPECT_EQ(y.dtype(), DType::Float8E4M3FN);
  EXPECT_EQ(bytes_of(y), (B{0x38, 0x7E, 0xC0}));
  Tensor n = run1("QuantizeLinear", {x, f32({}, {1}), raw_tensor(DType::Float8E4M3FN, {1}, {0})},
                  {Attribute::make_int("saturate", 0)});
  EXPECT_EQ(bytes_of(n), (B{0x38, 0x7F, 0xC0}));
}

TEST(RefMathQuantize, Errors) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_node_error([&] { run1("QuantizeLinear", {x, f32({3}, {1, 1, 1}), tensor<uint8_t>({2}, {0, 0})}); },
                    "differs from y_scale");
  expect_node_error([&] { run1("QuantizeLinear", {x, f32({2}, {1, 1})}); }, "per-axis scale must be 1-D of length 3");
  expect_node_error([&] { run1("QuantizeLinear", {x, f32({2, 3}, {1, 1, 1, 1, 1, 1})}, {axis(1), block(2)}); },
                    "blocked scale shape [2,3]");
  expect_node_error([&] { run1("QuantizeLinear", {x, f32({}, {1}), tensor<int32_t>({}, {0})}); },
                    "cannot quantize to int32");
  expect_node_error(
      [&] {
        run1("QuantizeLinear", {x, f32({}, {1}), tensor<uint8_t>({}, {0})},
             {Attribute::make_int("output_dtype", dtype_to_onnx(DType::Int8))});
      },
      "output_dtype int8 differs");
  expect_node_error([&] { run1("QuantizeLinear", {x, f32({3}, {1, 1, 1})}, {axis(2)}); }, "quantization axis 2");
}

TEST(RefMathDequantize, PerTensorPerAxisBlocked) {
  EXPECT_EQ(floats(run1("DequantizeLinear", {tensor<uint8_t>({4}, {0, 3, 128, 255}), f32({}, {2}),
                                             tensor<uint8_t>({}, {128})})),
            (F{-256, -250, 0, 254}));
  EXPECT_EQ(floats(run1("DequantizeLinear", {tensor<int8_t>({2, 2}, {1, 2, 3, 4}), f32({2}, {1, 10}),
                                             tensor<int8_t>({2}, {0, 1})},
                        {axis(0)})),
            (F{1, 2, 20, 30}));
  EXPECT_EQ(floats(run1("DequantizeLinear", {tensor<int32_t>({2}, {-3, 5}), f32({}, {0.5f})})), (F{-1.5f, 2.5f}));
  Tensor b = run1("DequantizeLinear", {raw_tensor(DType::Int4, {1, 4}, {0x78, 0xF1}), f32({1, 2}, {1, 0.5f})},
                  {axis(1), block(2)});
  EXPECT_EQ(floats(b), (F{-8, 7, 0.5f, -0.5f}));
  EXPECT_EQ(floats(run1("DequantizeLinear", {raw_tensor(DType::UInt4, {3}, {0x21, 0x0F}), f32({}, {1}),
                                             raw_tensor(DType::UInt4, {}, {1})})),
            (F{0, 1, 14}));
  EXPECT_EQ(floats(run1("DequantizeLinear", {tensor<uint16_t>({1}, {65535}), f32({}, {1}), tensor<uint16_t>({}, {0})})),
            (F{65535}));
}

TEST(RefMathDequantize, TwoBitPerTensorPerAxisBlocked) {
  // The backend tests: x - zero point, times the scale.
  EXPECT_EQ(floats(dequantize25({raw_tensor(DType::UInt2, {4}, {0xE4}), f32({}, {2}), raw_tensor(DType::UInt2, {1}, {1})})),
            (F{-2, 0, 2, 4}));
  EXPECT_EQ(floats(dequantize25({raw_tensor(DType::Int2, {4}, {0xB4}), f32({}, {2}), raw_tensor(DType::Int2, {1}, {1})})),
            (F{-2, 0, -4, -6}));  // int2 [0, 1, -1, -2]
  // int2 [-2, -1, 0, 1, -2] (five elements, two bytes) around zero point -1.
  EXPECT_EQ(floats(dequantize25({raw_tensor(DType::Int2, {5}, {0x4E, 0x02}), f32({}, {0.5f}),
                                 raw_tensor(DType::Int2, {}, {0x03})})),
            (F{-0.5f, 0, 0.5f, 1, -0.5f}));
  // Per axis: rows scaled by 1 and 10.
  EXPECT_EQ(floats(dequantize25({raw_tensor(DType::Int2, {2, 2}, {0xB4}), f32({2}, {1, 10})}, {axis(0)})),
            (F{0, 1, -10, -20}));
  // Blocked along axis 1 with a short last block: uint2 [0, 1, 2, 3 | 3, 2], zero points 1, 2.
  Tensor b = dequantize25({raw_tensor(DType::UInt2, {1, 6}, {0xE4, 0x0B}), f32({1, 2}, {1, 10}),
                           raw_tensor(DType::UInt2, {1, 2}, {0x09})},
                          {axis(1), block(4)});
  EXPECT_EQ(floats(b), (F{-1, 0, 1, 2, 10, 0}));
}

TEST(RefMathDequantize, Float8E8M0ScaleNeedsOutputDtype) {
  const Attribute to_f32 = Attribute::make_int("output_dtype", dtype_to_onnx(DType::Float32));
  Tensor y = dequantize25({tensor<int8_t>({2}, {3, -2}), raw_tensor(DType::Float8E8M0, {}, {0x7E})}, {to_f32});
  EXPECT_EQ(y.dtype(), DType::Float32);
  EXPECT_EQ(floats(y), (F{1.5f, -1}));
  Tensor h = dequantize25({raw_tensor(DType::Int2, {3}, {0x1E}), raw_tensor(DType::Float8E8M0, {}, {0x81})},
                          {Attribute::make_int("output_dtype", dtype_to_onnx(DType::Float16))});
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(floats(h), (F{-8, -4, 4}));  // [-2, -1, 1] * 4
  expect_node_error([] { dequantize25({tensor<int8_t>({1}, {1}), raw_tensor(DType::Float8E8M0, {}, {0x7F})}); },
                    "output_dtype must say the output type");
}

TEST(RefMathDequantize, OutputTypeFollowsScaleOrOutputDtype) {
  Tensor h = run1("DequantizeLinear", {tensor<uint8_t>({2}, {10, 20}), f16({}, {0.5f})});
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(floats(h), (F{5, 10}));
  Tensor f = run1("DequantizeLinear", {tensor<uint8_t>({1}, {10}), f16({}, {0.5f})},
                  {Attribute::make_int("output_dtype", dtype_to_onnx(DType::Float32))}, 23);
  EXPECT_EQ(f.dtype(), DType::Float32);
  Tensor e = run1("DequantizeLinear", {raw_tensor(DType::Float8E4M3FN, {2}, {0x38, 0x01}), f32({}, {2})});
  EXPECT_EQ(floats(e), (F{2, 0.00390625f}));
}

TEST(RefMathDequantize, Errors) {
  expect_node_error([] { run1("DequantizeLinear", {f32({1}, {1}), f32({}, {1})}); }, "x has dtype float32");
  expect_node_error([] { run1("DequantizeLinear", {tensor<uint8_t>({1}, {1}), f32({}, {1}), tensor<int8_t>({}, {0})}); },
                    "x_zero_point is int8 but x is uint8");
  expect_node_error([] { run1("DequantizeLinear", {tensor<uint8_t>({1}, {1}), i64({}, {1})}); }, "x_scale");
}

TEST(RefMathDynamicQuantize, FollowsTheOnnxFormula) {
  auto outs = run({"DynamicQuantizeLinear", {f32({6}, {0, 2, -3, -2.5f, 1.34f, 0.5f})}, {}, 11, 3});
  EXPECT_EQ(ints(outs[0]), (I{153, 255, 0, 26, 221, 179}));
  expect_near(floats(outs[1]), {0.019607844f});
  EXPECT_EQ(outs[1].shape(), (I{}));
  EXPECT_EQ(ints(outs[2]), (I{153}));
  auto pos = run({"DynamicQuantizeLinear", {f32({3}, {1, 2, 3})}, {}, 11, 3});
  EXPECT_EQ(ints(pos[0]), (I{85, 170, 255}));
  EXPECT_EQ(ints(pos[2]), (I{0}));
  // All zeros: the ONNX reference uses scale 1/255 (the spec's formula would divide by 0).
  auto zero = run({"DynamicQuantizeLinear", {f32({2}, {0, 0})}, {}, 11, 3});
  EXPECT_EQ(ints(zero[0]), (I{0, 0}));
  expect_near(floats(zero[1]), {1.0f / 255});
  EXPECT_EQ(ints(zero[2]), (I{0}));
}

}  // namespace
}  // namespace octet
