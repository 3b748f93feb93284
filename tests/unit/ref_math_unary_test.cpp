// Reference kernels: one-input math, activations, Clip, Identity, Dropout.
#include <chrono>
#include <cstdio>
#include <cmath>
#include <limits>

#include "ref_math_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

TEST(RefMathUnary, FloatFunctionsOnHandValues) {
  expect_near(floats(run1("Sqrt", {f32({3}, {0, 4, 2.25f})})), {0, 2, 1.5f});
  expect_near(floats(run1("Sqrt", {f32({1}, {-1})})), {kNaN});
  expect_near(floats(run1("Reciprocal", {f32({3}, {2, -0.5f, 0})})), {0.5f, -2, kInf});
  expect_near(floats(run1("Exp", {f32({3}, {0, 1, -kInf})})), {1, 2.7182818f, 0});
  expect_near(floats(run1("Log", {f32({3}, {1, 2.7182818f, 0})})), {0, 1, -kInf});
  expect_near(floats(run1("Erf", {f32({3}, {0, 1, -2})})), {0, 0.84270079f, -0.99532227f});
  expect_near(floats(run1("Tanh", {f32({2}, {0, 1})})), {0, 0.76159416f});
  expect_near(floats(run1("Floor", {f32({3}, {1.5f, -1.5f, 2})})), {1, -2, 2});
  expect_near(floats(run1("Ceil", {f32({3}, {1.5f, -1.5f, 2})})), {2, -1, 2});
  // Round is half to even.
  expect_near(floats(run1("Round", {f32({5}, {0.5f, 1.5f, 2.5f, -0.5f, -2.6f})})), {0, 2, 2, -0.0f, -3});
  expect_near(floats(run1("Sign", {f32({4}, {-3, 0, 2, kNaN})})), {-1, 0, 1, kNaN});
}

TEST(RefMathUnary, SigmoidIsStableAtTheExtremes) {
  expect_near(floats(run1("Sigmoid", {f32({5}, {0, 2, -2, 100, -100})})),
              {0.5f, 0.88079708f, 0.11920292f, 1, 0});
}

TEST(RefMathUnary, ReluKeepsNaNAndWorksOnSignedInts) {
  expect_near(floats(run1("Relu", {f32({4}, {-1, 0, 3, kNaN})})), {0, 0, 3, kNaN});
  EXPECT_EQ(ints(run1("Relu", {tensor<int8_t>({3}, {-128, 0, 127})})), (std::vector<int64_t>{0, 0, 127}));
  expect_node_error([] { run1("Relu", {tensor<uint8_t>({1}, {1})}); }, "uint8");
}

TEST(RefMathUnary, GeluExactAndTanh) {
  const Tensor x = f32({4}, {-1, 0, 1, 3});
  expect_near(floats(run1("Gelu", {x}, {}, 20)), {-0.15865525f, 0, 0.84134475f, 2.9959502f});
  expect_near(floats(run1("Gelu", {x}, {Attribute::make_string("approximate", "tanh")}, 20)),
              {-0.15880801f, 0, 0.84119199f, 2.9963626f});
  expect_node_error([&] { run1("Gelu", {x}, {Attribute::make_string("approximate", "fast")}, 20); },
                    "approximate");
}

TEST(RefMathUnary, IntegerAbsAndNegWrap) {
  EXPECT_EQ(ints(run1("Abs", {tensor<int8_t>({3}, {-128, -5, 7})})), (std::vector<int64_t>{-128, 5, 7}));
  EXPECT_EQ(ints(run1("Neg", {tensor<int32_t>({3}, {INT32_MIN, -5, 7})})),
            (std::vector<int64_t>{INT32_MIN, 5, -7}));
  EXPECT_EQ(ints(run1("Abs", {tensor<uint16_t>({2}, {0, 65535})})), (std::vector<int64_t>{0, 65535}));
  expect_node_error([] { run1("Neg", {tensor<uint8_t>({1}, {1})}); }, "uint8");
}

TEST(RefMathUnary, Float16AndBFloat16ComputeInFloatAndRoundOnce) {
  Tensor y = run1("Sqrt", {f16({3}, {2, 4, 0.25f})});
  EXPECT_EQ(y.dtype(), DType::Float16);
  // sqrt(2) = 1.41421356 rounds to fp16 1.4140625.
  EXPECT_EQ(floats(y), (std::vector<float>{1.4140625f, 2, 0.5f}));
  Tensor z = run1("Exp", {bf16({2}, {1, 0})});
  EXPECT_EQ(z.dtype(), DType::BFloat16);
  EXPECT_EQ(floats(z), (std::vector<float>{2.71875f, 1}));  // e in bfloat16
}

TEST(RefMathUnary, ShapesAreKeptForScalarsAndEmptyTensors) {
  Tensor s = run1("Exp", {f32({}, {0})});
  EXPECT_EQ(s.shape(), (std::vector<int64_t>{}));
  EXPECT_EQ(floats(s), (std::vector<float>{1}));
  Tensor e = run1("Tanh", {f32({2, 0, 3}, {})});
  EXPECT_EQ(e.shape(), (std::vector<int64_t>{2, 0, 3}));
}

TEST(RefMathUnary, UnsupportedDtypeNamesOpAndDtypes) {
  expect_node_error([] { run1("Sqrt", {tensor<int32_t>({1}, {4})}); },
                    "int32, which Sqrt does not support (supported: float32, float16, bfloat16, float64)");
}

TEST(RefMathUnary, NotIsNaNIsInf) {
  EXPECT_EQ(ints(run1("Not", {tensor<bool>({2}, {true, false})})), (std::vector<int64_t>{0, 1}));
  expect_node_error([] { run1("Not", {f32({1}, {1})}); }, "float32");
  EXPECT_EQ(ints(run1("IsNaN", {f32({3}, {kNaN, 1, kInf})})), (std::vector<int64_t>{1, 0, 0}));
  const Tensor x = f32({4}, {-kInf, kInf, kNaN, 0});
  EXPECT_EQ(ints(run1("IsInf", {x})), (std::vector<int64_t>{1, 1, 0, 0}));
  EXPECT_EQ(ints(run1("IsInf", {x}, {Attribute::make_int("detect_negative", 0)})),
            (std::vector<int64_t>{0, 1, 0, 0}));
}

TEST(RefMathUnary, ParameterizedActivations) {
  const Tensor x = f32({3}, {-2, 0.25f, 2});
  expect_near(floats(run1("LeakyRelu", {x})), {-0.02f, 0.25f, 2});
  expect_near(floats(run1("LeakyRelu", {x}, {Attribute::make_float("alpha", 0.5f)})), {-1, 0.25f, 2});
  expect_near(floats(run1("Elu", {x})), {-0.86466472f, 0.25f, 2});
  expect_near(floats(run1("Selu", {x})), {-1.5201665f, 0.26267526f, 2.1014020f});
  expect_near(floats(run1("HardSigmoid", {x})), {0.1f, 0.55f, 0.9f});
  expect_near(floats(run1("HardSwish", {x})), {-0.33333334f, 0.13541667f, 1.6666666f});
  expect_near(floats(run1("ThresholdedRelu", {x})), {0, 0, 2});
  expect_near(floats(run1("Celu", {x})), {-0.86466472f, 0.25f, 2});
  expect_near(floats(run1("Softplus", {f32({3}, {-2, 0, 100})})), {0.12692801f, 0.69314718f, 100});
  expect_near(floats(run1("Softsign", {x})), {-0.6666667f, 0.2f, 0.6666667f});
  expect_near(floats(run1("Mish", {x})), {-0.25250148f, 0.16957241f, 1.9439590f});
  expect_near(floats(run1("Shrink", {x}, {Attribute::make_float("bias", 0.5f)})), {-1.5f, 0, 1.5f});
}

TEST(RefMathClip, InputsFromOpset11) {
  const Tensor x = f32({5}, {-3, -1, 0, 1, kNaN});
  expect_near(floats(run1("Clip", {x, f32({}, {-2}), f32({}, {0.5f})}, {}, 13)), {-2, -1, 0, 0.5f, kNaN});
  expect_near(floats(run1("Clip", {x, std::nullopt, f32({}, {0.5f})}, {}, 13)), {-3, -1, 0, 0.5f, kNaN});
  expect_near(floats(run1("Clip", {x, f32({}, {-2})}, {}, 13)), {-2, -1, 0, 1, kNaN});
  expect_near(floats(run1("Clip", {x}, {}, 13)), {-3, -1, 0, 1, kNaN});
  // min > max: everything becomes max.
  expect_near(floats(run1("Clip", {x, f32({}, {2}), f32({}, {1})}, {}, 13)), {1, 1, 1, 1, kNaN});
}

TEST(RefMathClip, AttributesBeforeOpset11) {
  const Tensor x = f32({3}, {-3, 0, 3});
  expect_near(floats(run1("Clip", {x}, {Attribute::make_float("min", -1), Attribute::make_float("max", 2)}, 6)),
              {-1, 0, 2});
  expect_near(floats(run1("Clip", {x}, {Attribute::make_float("max", 2)}, 6)), {-3, 0, 2});
}

TEST(RefMathClip, IntegerTypesAndBadBounds) {
  const Tensor x = tensor<int8_t>({4}, {-128, -5, 5, 127});
  EXPECT_EQ(ints(run1("Clip", {x, tensor<int8_t>({}, {-10})}, {}, 13)), (std::vector<int64_t>{-10, -5, 5, 127}));
  EXPECT_EQ(ints(run1("Clip", {x, std::nullopt, tensor<int8_t>({}, {0})}, {}, 13)),
            (std::vector<int64_t>{-128, -5, 0, 0}));
  expect_node_error([&] { run1("Clip", {x, tensor<int8_t>({2}, {0, 1})}, {}, 13); }, "min must be a scalar");
  expect_node_error([&] { run1("Clip", {x, f32({}, {0})}, {}, 13); }, "min is float32");
}

TEST(RefMathPassThrough, IdentitySharesTheInputBuffer) {
  const Tensor x = f32({2}, {1, 2});
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 21;
  g->add_input("x", TensorType(DType::Float32, DimVector{2}));
  g->add_node("Identity", {"x"}, {"y"}, {}, "", kNodeName);
  g->mark_output(g->value("y"));
  const Tensor y = Session(g).run({{"x", x}})[0].second;
  EXPECT_EQ(y.buffer(), x.buffer());
  EXPECT_EQ(floats(y), (std::vector<float>{1, 2}));
}

TEST(RefMathPassThrough, DropoutAtInferenceIsIdentityWithTrueMask) {
  const Tensor x = f32({2, 2}, {1, -2, 3, 4});
  auto outs = run({"Dropout", {x, f32({}, {0.3f})}, {}, 13, 2});
  EXPECT_EQ(floats(outs[0]), floats(x));
  EXPECT_EQ(outs[1].dtype(), DType::Bool);
  EXPECT_EQ(ints(outs[1]), (std::vector<int64_t>{1, 1, 1, 1}));
  // training_mode with ratio 0 is still the identity; with a ratio it would be random.
  auto zero = run({"Dropout", {x, f32({}, {0}), tensor<bool>({}, {true})}, {}, 13, 2});
  EXPECT_EQ(floats(zero[0]), floats(x));
  expect_node_error([&] { run1("Dropout", {x, f32({}, {0.5f}), tensor<bool>({}, {true})}, {}, 13); },
                    "training_mode");
  // Opset 7-9: the mask has the input's type; opset 10-11 it is bool.
  auto old = run({"Dropout", {x}, {Attribute::make_float("ratio", 0.5f)}, 7, 2});
  EXPECT_EQ(old[1].dtype(), DType::Float32);
  EXPECT_EQ(floats(old[1]), (std::vector<float>{1, 1, 1, 1}));
  EXPECT_EQ(run({"Dropout", {x}, {}, 10, 2})[1].dtype(), DType::Bool);
}

TEST(RefMathUnary, MillionElements) {
  // A model-sized input; the time is printed for information only (speed is measured in
  // benchmarks, never asserted in unit tests).
  std::vector<float> v(1 << 20);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 1000) / 100.0f - 5.0f;
  const auto start = std::chrono::steady_clock::now();
  Tensor y = run1("Gelu", {f32({1024, 1024}, v)}, {}, 20);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(y.numel(), 1 << 20);
  std::printf("[ timing   ] Gelu over 2^20 floats: %.3f s\n", seconds);
}

}  // namespace
}  // namespace octet
