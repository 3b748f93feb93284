// Reference kernels: Softmax family, LayerNormalization, RMSNormalization, CumSum/CumProd,
// Trilu.
#include <cmath>
#include <limits>

#include "ref_math_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;
using I = std::vector<int64_t>;
using F = std::vector<float>;

TEST(RefMathSoftmax, AlongOneAxisFromOpset13) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 1, 1, 1});
  expect_near(floats(run1("Softmax", {x}, {}, 13)),
              {0.09003057f, 0.24472847f, 0.66524096f, 1 / 3.0f, 1 / 3.0f, 1 / 3.0f});
  expect_near(floats(run1("Softmax", {x}, {Attribute::make_int("axis", 0)}, 13)),
              {0.5f, 0.7310586f, 0.8807971f, 0.5f, 0.2689414f, 0.1192029f});
  expect_near(floats(run1("LogSoftmax", {x}, {}, 13)),
              {-2.40760596f, -1.40760596f, -0.40760596f, -1.0986123f, -1.0986123f, -1.0986123f});
  expect_near(floats(run1("Softmax", {f32({2}, {1000, 1000})}, {}, 13)), {0.5f, 0.5f});
  EXPECT_EQ(floats(run1("Hardmax", {f32({3}, {1, 3, 3})}, {}, 13)), (F{0, 1, 0}));
}

TEST(RefMathSoftmax, FlattensTo2DBeforeOpset13) {
  const Tensor x = f32({2, 2, 2}, {0, 1, 2, 3, 0, 0, 0, 0});
  // Opset 11, default axis 1: each batch's 4 values form one row.
  expect_near(floats(run1("Softmax", {x}, {}, 11)),
              {0.0320586f, 0.08714432f, 0.23688282f, 0.64391426f, 0.25f, 0.25f, 0.25f, 0.25f});
  // Opset 13, axis 1: only dim 1 is normalized.
  expect_near(floats(run1("Softmax", {x}, {Attribute::make_int("axis", 1)}, 13)),
              {0.1192029f, 0.1192029f, 0.8807971f, 0.8807971f, 0.5f, 0.5f, 0.5f, 0.5f});
}

TEST(RefMathSoftmax, Float16EmptyAndErrors) {
  Tensor h = run1("Softmax", {f16({2}, {0, 0})}, {}, 13);
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(floats(h), (F{0.5f, 0.5f}));
  EXPECT_EQ(run1("Softmax", {f32({0, 3}, {})}, {}, 13).shape(), (I{0, 3}));
  expect_node_error([] { run1("Softmax", {f32({2}, {1, 2})}, {Attribute::make_int("axis", 1)}, 13); },
                    "axis 1 is out of range for rank 1");
  expect_node_error([] { run1("Softmax", {i64({2}, {1, 2})}, {}, 13); }, "int64");
}

TEST(RefMathNorm, LayerNormalizationWithStatistics) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 2, 4, 6});
  auto outs = run({"LayerNormalization", {x, f32({3}, {1, 1, 2}), f32({3}, {0, 0.5f, 0})},
                   {Attribute::make_float("epsilon", 0)}, 17, 3});
  expect_near(floats(outs[0]), {-1.2247449f, 0.5f, 2.4494897f, -1.2247449f, 0.5f, 2.4494897f});
  EXPECT_EQ(outs[1].shape(), (I{2, 1}));
  expect_near(floats(outs[1]), {2, 4});
  expect_near(floats(outs[2]), {1.2247449f, 0.6123724f});
}

TEST(RefMathNorm, LayerNormalizationOverAllAxesAndHalf) {
  auto outs = run({"LayerNormalization", {f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {1, 1, 1, 1})},
                   {Attribute::make_int("axis", 0), Attribute::make_float("epsilon", 0)}, 17, 2});
  expect_near(floats(outs[0]), {-1.3416408f, -0.4472136f, 0.4472136f, 1.3416408f});
  EXPECT_EQ(outs[1].shape(), (I{1, 1}));
  // float16 X: Y is float16, Mean is in the stash type (float32 by default).
  auto h = run({"LayerNormalization", {f16({1, 2}, {1, 3}), f16({2}, {1, 1})}, {}, 17, 2});
  EXPECT_EQ(h[0].dtype(), DType::Float16);
  EXPECT_EQ(h[1].dtype(), DType::Float32);
  expect_near(floats(h[0]), {-1, 1}, 1e-3, 0);
  expect_near(floats(h[1]), {2});
  // Only Y wanted (the optional outputs unnamed).
  auto y_only = run({"LayerNormalization", {f32({2}, {1, 3}), f32({2}, {1, 1})}, {}, 17, 3, "", {true, false, false}});
  EXPECT_EQ(y_only.size(), 1u);
}

TEST(RefMathNorm, LayerNormalizationErrors) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_node_error([&] { run1("LayerNormalization", {x, f32({4}, {1, 1, 1, 1})}, {}, 17); }, "does not broadcast");
  expect_node_error([&] { run1("LayerNormalization", {x, f32({3}, {1, 1, 1})}, {Attribute::make_int("axis", 2)}, 17); },
                    "out of range");
  expect_node_error([&] { run1("LayerNormalization", {x, f16({3}, {1, 1, 1})}, {}, 17); }, "Scale is float16");
}

TEST(RefMathNorm, RMSNormalization) {
  Tensor y = run1("RMSNormalization", {f32({1, 4}, {1, 2, 3, 4}), f32({4}, {1, 1, 1, 2})},
                  {Attribute::make_float("epsilon", 0)}, 23);
  expect_near(floats(y), {0.3651484f, 0.7302967f, 1.0954451f, 2.9211870f});
  Tensor b = run1("RMSNormalization", {bf16({2, 1}, {2, -4}), bf16({1}, {1})}, {Attribute::make_float("epsilon", 0)}, 23);
  EXPECT_EQ(b.dtype(), DType::BFloat16);
  EXPECT_EQ(floats(b), (F{1, -1}));
}

TEST(RefMathScan, CumSumModes) {
  const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor axis1 = i64({}, {1});
  EXPECT_EQ(floats(run1("CumSum", {x, axis1}, {}, 14)), (F{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(floats(run1("CumSum", {x, axis1}, {Attribute::make_int("exclusive", 1)}, 14)), (F{0, 1, 3, 0, 4, 9}));
  EXPECT_EQ(floats(run1("CumSum", {x, axis1}, {Attribute::make_int("reverse", 1)}, 14)), (F{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(floats(run1("CumSum", {x, axis1},
                        {Attribute::make_int("reverse", 1), Attribute::make_int("exclusive", 1)}, 14)),
            (F{5, 3, 0, 11, 6, 0}));
  EXPECT_EQ(floats(run1("CumSum", {x, tensor<int32_t>({}, {-2})}, {}, 14)), (F{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(ints(run1("CumSum", {tensor<int32_t>({3}, {INT32_MAX, 1, 1}), i64({}, {0})}, {}, 14)),
            (I{INT32_MAX, INT32_MIN, INT32_MIN + 1}));
  EXPECT_EQ(floats(run1("CumProd", {x, axis1}, {}, 26)), (F{1, 2, 6, 4, 20, 120}));
  expect_node_error([&] { run1("CumSum", {x, i64({}, {2})}, {}, 14); }, "out of range");
  expect_node_error([&] { run1("CumSum", {x, f32({}, {1})}, {}, 14); }, "axis must be int32 or int64");
}

TEST(RefMathScan, Trilu) {
  std::vector<float> v{1, 2, 3, 4, 5, 6, 7, 8, 9};
  const Tensor x = f32({3, 3}, v);
  EXPECT_EQ(floats(run1("Trilu", {x}, {}, 14)), (F{1, 2, 3, 0, 5, 6, 0, 0, 9}));
  EXPECT_EQ(floats(run1("Trilu", {x}, {Attribute::make_int("upper", 0)}, 14)), (F{1, 0, 0, 4, 5, 0, 7, 8, 9}));
  EXPECT_EQ(floats(run1("Trilu", {x, i64({}, {1})}, {}, 14)), (F{0, 2, 3, 0, 0, 6, 0, 0, 0}));
  EXPECT_EQ(floats(run1("Trilu", {x, i64({}, {-1})}, {Attribute::make_int("upper", 0)}, 14)),
            (F{0, 0, 0, 4, 0, 0, 7, 8, 0}));
  EXPECT_EQ(ints(run1("Trilu", {i64({3, 2}, {1, 2, 3, 4, 5, 6})}, {Attribute::make_int("upper", 0)}, 14)),
            (I{1, 0, 3, 4, 5, 6}));
  Tensor batched = run1("Trilu", {tensor<bool>({2, 2, 2}, {true, true, true, true, true, true, true, true})}, {}, 14);
  EXPECT_EQ(ints(batched), (I{1, 1, 0, 1, 1, 1, 0, 1}));
  EXPECT_EQ(floats(run1("Trilu", {f16({1, 2}, {1, 2}), i64({}, {5})}, {}, 14)), (F{0, 0}));
  expect_node_error([] { run1("Trilu", {f32({3}, {1, 2, 3})}, {}, 14); }, "rank >= 2");
}

}  // namespace
}  // namespace octet
