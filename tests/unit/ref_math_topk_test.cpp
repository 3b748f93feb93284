// Reference kernel: TopK (order, ties, NaN, k as input or attribute, edge shapes).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ref_math_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;
using I = std::vector<int64_t>;
using F = std::vector<float>;
const float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<Tensor> topk(const Tensor& x, int64_t k, std::vector<Attribute> attrs = {}, int64_t opset = 11) {
  return run({"TopK", {x, i64({1}, {k})}, std::move(attrs), opset, 2});
}
Attribute A(const std::string& name, int64_t v) { return Attribute::make_int(name, v); }

// `v` (small integers) stored as dtype t.
Tensor of_dtype(DType t, std::vector<int64_t> shape, const F& v) {
  switch (t) {
    case DType::Float16: return f16(shape, v);
    case DType::BFloat16: return bf16(shape, v);
    case DType::Float64: return tensor<double>(shape, std::vector<double>(v.begin(), v.end()));
    case DType::Int32: return tensor<int32_t>(shape, std::vector<int32_t>(v.begin(), v.end()));
    case DType::UInt8: return tensor<uint8_t>(shape, std::vector<uint8_t>(v.begin(), v.end()));
    default: return f32(shape, v);
  }
}

TEST(RefMathTopK, LargestAndSmallestAlongAxes) {
  Tensor x = f32({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 11, 10, 9, 8});
  auto out = topk(x, 3);
  EXPECT_EQ(out[0].shape(), (I{3, 3}));
  EXPECT_EQ(floats(out[0]), (F{3, 2, 1, 7, 6, 5, 11, 10, 9}));
  EXPECT_EQ(ints(out[1]), (I{3, 2, 1, 3, 2, 1, 0, 1, 2}));
  out = topk(x, 2, {A("largest", 0)});
  EXPECT_EQ(floats(out[0]), (F{0, 1, 4, 5, 8, 9}));
  EXPECT_EQ(ints(out[1]), (I{0, 1, 0, 1, 3, 2}));
  out = topk(x, 1, {A("axis", 0)});  // along the outer axis: a strided line per column
  EXPECT_EQ(out[0].shape(), (I{1, 4}));
  EXPECT_EQ(floats(out[0]), (F{11, 10, 9, 8}));
  EXPECT_EQ(ints(out[1]), (I{2, 2, 2, 2}));
  out = topk(x, 2, {A("axis", -2), A("largest", 0)});
  EXPECT_EQ(ints(out[1]), (I{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(RefMathTopK, TiesGoToTheLowerIndexEitherWay) {
  Tensor x = i64({2, 5}, {1, 3, 3, 1, 3, 2, 2, 2, 2, 2});
  auto out = topk(x, 4);
  EXPECT_EQ(ints(out[0]), (I{3, 3, 3, 1, 2, 2, 2, 2}));
  EXPECT_EQ(ints(out[1]), (I{1, 2, 4, 0, 0, 1, 2, 3}));
  out = topk(x, 3, {A("largest", 0)});
  EXPECT_EQ(ints(out[0]), (I{1, 1, 3, 2, 2, 2}));
  EXPECT_EQ(ints(out[1]), (I{0, 3, 1, 0, 1, 2}));
}

TEST(RefMathTopK, NaNRanksAboveEveryNumber) {
  Tensor x = f32({5}, {1, kNaN, 5, kNaN, -1});
  auto out = topk(x, 3);
  EXPECT_EQ(ints(out[1]), (I{1, 3, 2}));
  EXPECT_TRUE(std::isnan(floats(out[0])[0]));
  out = topk(x, 4, {A("largest", 0)});
  EXPECT_EQ(ints(out[1]), (I{4, 0, 2, 1}));
}

// A larger line against std::stable_sort of (value, index) pairs.
TEST(RefMathTopK, MatchesAStableSortOnEveryDtype) {
  const int64_t n = 97;
  F v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>((i * 37) % 23);  // many ties
  for (DType t : {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64, DType::Int32, DType::UInt8}) {
    Tensor x = of_dtype(t, {1, n}, v);
    for (int64_t largest : {0, 1}) {
      auto out = topk(x, 40, {A("largest", largest)});
      std::vector<int64_t> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return largest ? v[a] > v[b] : v[a] < v[b]; });
      order.resize(40);
      EXPECT_EQ(out[0].dtype(), t);
      EXPECT_EQ(ints(out[1]), order) << dtype_name(t) << " largest=" << largest;
      F want;
      for (int64_t i : order) want.push_back(v[i]);
      EXPECT_EQ(floats(out[0]), want) << dtype_name(t);
    }
  }
}

TEST(RefMathTopK, EdgeShapesAndOldOpsets) {
  auto out = topk(f32({1}, {4}), 1);
  EXPECT_EQ(floats(out[0]), (F{4}));
  EXPECT_EQ(ints(out[1]), (I{0}));
  out = topk(f32({2, 3}, {1, 2, 3, 4, 5, 6}), 0);  // k = 0: empty outputs
  EXPECT_EQ(out[0].shape(), (I{2, 0}));
  EXPECT_EQ(out[1].shape(), (I{2, 0}));
  out = topk(Tensor(DType::Float32, {0, 3}), 2);  // no lines at all
  EXPECT_EQ(out[0].shape(), (I{0, 2}));
  // opset 1: k is an attribute; opset 10: an input, without largest/sorted.
  out = run({"TopK", {f32({4}, {3, 1, 4, 1})}, {A("k", 2)}, 1, 2});
  EXPECT_EQ(floats(out[0]), (F{4, 3}));
  out = run({"TopK", {f32({4}, {3, 1, 4, 1}), i64({1}, {2})}, {}, 10, 2});
  EXPECT_EQ(ints(out[1]), (I{2, 0}));
  // only the indices wanted
  out = run({"TopK", {f32({3}, {1, 3, 2}), i64({1}, {1})}, {}, 11, 2, "", {false, true}});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(ints(out[0]), (I{1}));
}

TEST(RefMathTopK, Errors) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_node_error([&] { topk(x, 4); }, "k = 4");
  expect_node_error([&] { run({"TopK", {x, i64({2}, {1, 1})}, {}, 11, 2}); }, "one element");
  expect_node_error([&] { run({"TopK", {x, tensor<int32_t>({1}, {1})}, {}, 11, 2}); }, "int64");
  expect_node_error([&] { topk(x, 1, {A("axis", 2)}); }, "axis 2");
  expect_node_error([&] { run({"TopK", {tensor<bool>({2}, {true, false}), i64({1}, {1})}, {}, 11, 2}); }, "bool");
}

}  // namespace
}  // namespace octet
