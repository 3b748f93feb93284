// Reference kernels: Reduce* and ArgMax/ArgMin.
#include <cmath>
#include <limits>

#include "ref_math_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;
using I = std::vector<int64_t>;
using F = std::vector<float>;
const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

Attribute keepdims(int64_t v) { return Attribute::make_int("keepdims", v); }

const Tensor& x23() {
  static const Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  return x;
}

TEST(RefMathReduce, AxesFromInputFromOpset13ForReduceSum) {
  Tensor y = run1("ReduceSum", {x23(), i64({1}, {1})}, {}, 13);
  EXPECT_EQ(y.shape(), (I{2, 1}));
  EXPECT_EQ(floats(y), (F{6, 15}));
  Tensor z = run1("ReduceSum", {x23(), i64({1}, {-2})}, {keepdims(0)}, 13);
  EXPECT_EQ(z.shape(), (I{3}));
  EXPECT_EQ(floats(z), (F{5, 7, 9}));
  // No axes: all of them.
  Tensor all = run1("ReduceSum", {x23()}, {keepdims(0)}, 13);
  EXPECT_EQ(all.shape(), (I{}));
  EXPECT_EQ(floats(all), (F{21}));
  EXPECT_EQ(run1("ReduceSum", {x23(), i64({0}, {})}, {}, 13).shape(), (I{1, 1}));
  // noop_with_empty_axes: identity.
  Tensor same = run1("ReduceSum", {x23()}, {Attribute::make_int("noop_with_empty_axes", 1)}, 13);
  EXPECT_EQ(same.shape(), (I{2, 3}));
  EXPECT_EQ(floats(same), floats(x23()));
  // Opset 11: the attribute.
  EXPECT_EQ(floats(run1("ReduceSum", {x23()}, {Attribute::make_ints("axes", {0})}, 11)), (F{5, 7, 9}));
}

TEST(RefMathReduce, AxesAttributeUntilOpset17ForTheOthers) {
  EXPECT_EQ(floats(run1("ReduceMean", {x23()}, {Attribute::make_ints("axes", {0})}, 17)), (F{2.5f, 3.5f, 4.5f}));
  EXPECT_EQ(floats(run1("ReduceMean", {x23(), i64({1}, {0})}, {}, 18)), (F{2.5f, 3.5f, 4.5f}));
  EXPECT_EQ(floats(run1("ReduceMax", {x23(), i64({2}, {1, 0})}, {keepdims(0)}, 18)), (F{6}));
  EXPECT_EQ(floats(run1("ReduceMin", {x23()}, {Attribute::make_ints("axes", {1})}, 13)), (F{1, 4}));
}

TEST(RefMathReduce, EachReduction) {
  const Tensor x = f32({1, 3}, {-1, 2, -3});
  const Tensor axes = i64({1}, {1});
  EXPECT_EQ(floats(run1("ReduceProd", {x, axes}, {}, 18)), (F{6}));
  EXPECT_EQ(floats(run1("ReduceL1", {x, axes}, {}, 18)), (F{6}));
  EXPECT_EQ(floats(run1("ReduceL2", {f32({2}, {3, 4})}, {}, 18)), (F{5}));
  EXPECT_EQ(floats(run1("ReduceSumSquare", {f32({2}, {3, 4})}, {}, 18)), (F{25}));
  expect_near(floats(run1("ReduceLogSum", {f32({2}, {1, 2})}, {}, 18)), {std::log(3.0f)});
  // LogSumExp stays finite for large inputs and ignores -inf.
  expect_near(floats(run1("ReduceLogSumExp", {f32({2}, {1000, 1000})}, {}, 18)), {1000 + std::log(2.0f)});
  expect_near(floats(run1("ReduceLogSumExp", {f32({2}, {-kInf, 0})}, {}, 18)), {0});
  EXPECT_TRUE(std::isnan(floats(run1("ReduceMax", {f32({3}, {1, kNaN, 3})}, {}, 18))[0]));
  EXPECT_TRUE(std::isnan(floats(run1("ReduceMin", {f32({3}, {kNaN, 1, 3})}, {}, 18))[0]));
}

TEST(RefMathReduce, EmptySetGivesTheIdentity) {
  const Tensor x = f32({2, 0}, {});
  const Tensor axes = i64({1}, {1});
  EXPECT_EQ(floats(run1("ReduceSum", {x, axes}, {}, 18)), (F{0, 0}));
  EXPECT_EQ(floats(run1("ReduceProd", {x, axes}, {}, 18)), (F{1, 1}));
  EXPECT_EQ(floats(run1("ReduceMax", {x, axes}, {}, 18)), (F{-kInf, -kInf}));
  EXPECT_EQ(floats(run1("ReduceMin", {x, axes}, {}, 18)), (F{kInf, kInf}));
  EXPECT_EQ(floats(run1("ReduceLogSumExp", {x, axes}, {}, 18)), (F{-kInf, -kInf}));
  EXPECT_TRUE(std::isnan(floats(run1("ReduceMean", {x, axes}, {}, 18))[0]));
  EXPECT_EQ(ints(run1("ReduceMax", {tensor<int32_t>({0}, {})}, {}, 18)), (I{INT32_MIN}));
  // Reducing the non-empty axis of an empty tensor gives an empty result.
  EXPECT_EQ(run1("ReduceSum", {x, i64({1}, {0})}, {}, 18).shape(), (I{1, 0}));
}

TEST(RefMathReduce, IntegerReductions) {
  EXPECT_EQ(ints(run1("ReduceMean", {tensor<int32_t>({2, 2}, {1, 2, -1, -2}), i64({1}, {1})}, {}, 18)), (I{1, -1}));
  EXPECT_EQ(ints(run1("ReduceSum", {tensor<int32_t>({2}, {INT32_MAX, 1})}, {}, 18)), (I{INT32_MIN}));
  EXPECT_EQ(ints(run1("ReduceProd", {i64({3}, {-2, 3, 4})}, {}, 18)), (I{-24}));
  EXPECT_EQ(ints(run1("ReduceL2", {i64({2}, {3, 4})}, {}, 18)), (I{5}));
  EXPECT_EQ(ints(run1("ReduceMax", {tensor<bool>({3}, {false, true, false})}, {}, 20)), (I{1}));
  EXPECT_EQ(ints(run1("ReduceMin", {tensor<uint8_t>({3}, {7, 3, 200})}, {}, 18)), (I{3}));
  expect_node_error([] { run1("ReduceSum", {tensor<int8_t>({1}, {1})}, {}, 18); }, "int8");
}

TEST(RefMathReduce, LongReductionsAccumulateInDouble) {
  std::vector<float> v(4097, 0.1f);
  const Tensor x = f32({4097}, v);
  expect_near(floats(run1("ReduceSum", {x}, {}, 18)), {4097 * 0.1f}, 1e-7, 0);
  expect_near(floats(run1("ReduceMean", {x}, {}, 18)), {0.1f}, 1e-7, 0);
  // fp16: 2048 + 1 + 1 = 2050 exactly; adding in fp16 would stall at 2048.
  Tensor h = run1("ReduceSum", {f16({3}, {2048, 1, 1})}, {}, 18);
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(floats(h), (F{2050}));
}

TEST(RefMathReduce, BadAxes) {
  expect_node_error([] { run1("ReduceSum", {x23(), i64({1}, {2})}, {}, 18); }, "reduction axis 2 is out of range");
  expect_node_error([] { run1("ReduceMean", {x23(), i64({2}, {1, -1})}, {}, 18); }, "repeated");
  expect_node_error([] { run1("ReduceMean", {x23(), tensor<int32_t>({1}, {1})}, {}, 18); }, "axes must be int64");
}

TEST(RefMathArg, ArgMaxArgMinTiesAndKeepdims) {
  const Tensor x = f32({2, 3}, {1, 3, 3, 5, 2, 5});
  const auto axis1 = Attribute::make_int("axis", 1);
  Tensor a = run1("ArgMax", {x}, {axis1});
  EXPECT_EQ(a.dtype(), DType::Int64);
  EXPECT_EQ(a.shape(), (I{2, 1}));
  EXPECT_EQ(ints(a), (I{1, 0}));
  EXPECT_EQ(ints(run1("ArgMax", {x}, {axis1, Attribute::make_int("select_last_index", 1)})), (I{2, 2}));
  Tensor b = run1("ArgMax", {x}, {keepdims(0)});
  EXPECT_EQ(b.shape(), (I{3}));
  EXPECT_EQ(ints(b), (I{1, 0, 1}));
  EXPECT_EQ(ints(run1("ArgMin", {x}, {Attribute::make_int("axis", -1)})), (I{0, 1}));
  EXPECT_EQ(ints(run1("ArgMin", {tensor<int8_t>({4}, {3, -1, 4, -1})}, {Attribute::make_int("select_last_index", 1)})),
            (I{3}));
  // NaN is the extreme for both (np.argmax / np.argmin).
  EXPECT_EQ(ints(run1("ArgMax", {f32({3}, {1, kNaN, 3})})), (I{1}));
  EXPECT_EQ(ints(run1("ArgMin", {f32({3}, {1, kNaN, 0})})), (I{1}));
  EXPECT_EQ(ints(run1("ArgMax", {f16({2}, {1, 2})})), (I{1}));
  expect_node_error([] { run1("ArgMax", {f32({2, 0}, {})}, {Attribute::make_int("axis", 1)}); }, "size 0");
  expect_node_error([&] { run1("ArgMax", {x}, {Attribute::make_int("axis", 2)}); }, "out of range");
}

}  // namespace
}  // namespace octet
