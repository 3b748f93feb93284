// Reference kernels: Slice, Gather, GatherElements.
#include <limits>

#include "ref_shape_testing.h"

namespace octet {
namespace {

using namespace reftest;
using Shape = std::vector<int64_t>;
using F = std::vector<float>;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

// ---------------------------------------------------------------- Slice

Tensor slice(const Tensor& x, Shape starts, Shape ends, std::optional<Shape> axes = std::nullopt,
             std::optional<Shape> steps = std::nullopt) {
  Inputs in = {x, ints(starts), ints(ends)};
  in.push_back(axes ? std::optional<Tensor>(ints(*axes)) : std::nullopt);
  if (steps) in.push_back(ints(*steps));
  return run1("Slice", in, {}, 13);
}

TEST(RefSlice, BasicAndNegativeBounds) {
  Tensor x = iota_f32({3, 4});
  Tensor y = slice(x, {1, 0}, {2, 3});
  EXPECT_EQ(y.shape(), (Shape{1, 3}));
  EXPECT_EQ(values<float>(y), (F{4, 5, 6}));
  EXPECT_EQ(values<float>(slice(x, {0, -3}, {-1, -1})), (F{1, 2, 5, 6}));
  EXPECT_EQ(values<float>(slice(x, {1}, {kMax}, Shape{1})), (F{1, 2, 3, 5, 6, 7, 9, 10, 11}));
  EXPECT_EQ(values<float>(slice(x, {-1}, {kMax}, Shape{-2})), (F{8, 9, 10, 11}));  // negative axis
  EXPECT_EQ(values<float>(slice(x, {2}, {3})), (F{8, 9, 10, 11}));               // default axes
}

TEST(RefSlice, OutOfRangeBoundsClamp) {
  Tensor x = iota_f32({5});
  EXPECT_EQ(values<float>(slice(x, {-100}, {100})), iota(5));
  EXPECT_EQ(values<float>(slice(x, {10}, {20})), F{});  // start past the end: empty
  EXPECT_EQ(values<float>(slice(x, {1}, {1000})), (F{1, 2, 3, 4}));
  EXPECT_EQ(values<float>(slice(x, {kMin}, {kMax})), iota(5));
  EXPECT_EQ(values<float>(slice(x, {3}, {1})), F{});  // start after end, positive step
}

TEST(RefSlice, StepsPositiveAndNegative) {
  Tensor x = iota_f32({7});
  EXPECT_EQ(values<float>(slice(x, {0}, {7}, Shape{0}, Shape{2})), (F{0, 2, 4, 6}));
  EXPECT_EQ(values<float>(slice(x, {1}, {7}, Shape{0}, Shape{3})), (F{1, 4}));
  EXPECT_EQ(values<float>(slice(x, {-1}, {kMin}, Shape{0}, Shape{-1})), (F{6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(values<float>(slice(x, {kMax}, {kMin}, Shape{0}, Shape{-3})), (F{6, 3, 0}));
  EXPECT_EQ(values<float>(slice(x, {5}, {1}, Shape{0}, Shape{-2})), (F{5, 3}));
  EXPECT_EQ(values<float>(slice(x, {20}, {-20}, Shape{0}, Shape{-1})), (F{6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(values<float>(slice(x, {1}, {5}, Shape{0}, Shape{-1})), F{});
  // INT64_MAX as the end of a backward slice clamps to dim-1 like any other value (spec
  // and ONNX reference); onnxruntime instead reads it as "to the beginning".
  EXPECT_EQ(values<float>(slice(x, {0}, {kMax}, Shape{0}, Shape{-1})), F{});
  EXPECT_EQ(values<float>(slice(x, {3}, {kMax}, Shape{0}, Shape{-1})), F{});
  EXPECT_EQ(values<float>(slice(x, {0}, {7}, Shape{0}, Shape{kMax})), (F{0}));
  EXPECT_EQ(values<float>(slice(x, {6}, {kMin}, Shape{0}, Shape{kMin})), (F{6}));
  // As ONNX's test_slice_neg_steps: x[20:0:-1, 10:0:-3, 4:1:-2] of a [20,10,5] tensor.
  Tensor y = slice(iota_f32({20, 10, 5}), {20, 10, 4}, {0, 0, 1}, Shape{0, 1, 2}, Shape{-1, -3, -2});
  EXPECT_EQ(y.shape(), (Shape{19, 3, 2}));
  EXPECT_EQ(values<float>(y)[0], static_cast<float>(19 * 50 + 9 * 5 + 4));
}

TEST(RefSlice, RaggedMultiAxisMatchesNaive) {
  const Shape shape = {7, 13, 5};
  Tensor y = slice(iota_f32(shape), {6, 1, -1}, {0, 12, -6}, Shape{0, 1, 2}, Shape{-2, 4, -2});
  // axis 0: 6,4,2; axis 1: 1,5,9; axis 2: 4,2,0
  EXPECT_EQ(y.shape(), (Shape{3, 3, 3}));
  F want;
  for (int a : {6, 4, 2})
    for (int b : {1, 5, 9})
      for (int c : {4, 2, 0}) want.push_back(static_cast<float>(a * 65 + b * 5 + c));
  EXPECT_EQ(values<float>(y), want);
}

TEST(RefSlice, EmptyInputsDtypesAndOldOpsets) {
  Tensor empty(DType::Float32, {0, 3});
  EXPECT_EQ(slice(empty, {0}, {kMax}).shape(), (Shape{0, 3}));
  EXPECT_EQ(slice(empty, {-1}, {kMin}, Shape{0}, Shape{-1}).shape(), (Shape{0, 3}));
  Tensor h = slice(f16({4}, {1, 2, 3, 4}), {1}, {3});
  EXPECT_EQ(h.dtype(), DType::Float16);
  EXPECT_EQ(floats(h), (F{2, 3}));
  EXPECT_EQ(values<bool>(slice(boolean({3}, {true, false, true}), {2}, {kMin}, Shape{0}, Shape{-2})),
            (std::vector<bool>{true, true}));
  Tensor s = slice(Tensor::strings({3}, {"a", "b", "c"}), {1}, {3});
  EXPECT_EQ(s.string_data(), (std::vector<std::string>{"b", "c"}));
  // int32 starts/ends
  Tensor y = run1("Slice", {iota_f32({4}), i32({1}, {1}), i32({1}, {3})}, {}, 13);
  EXPECT_EQ(values<float>(y), (F{1, 2}));
  // Slice-1: attributes
  y = run1("Slice", {iota_f32({3, 4})},
           {Attribute::make_ints("starts", {1}), Attribute::make_ints("ends", {3}), Attribute::make_ints("axes", {1})}, 9);
  EXPECT_EQ(values<float>(y), (F{1, 2, 5, 6, 9, 10}));
}

TEST(RefSlice, Errors) {
  Tensor x = iota_f32({3, 4});
  expect_node_error([&] { slice(x, {0}, {1}, Shape{0}, Shape{0}); }, "step for axis 0 is 0");
  expect_node_error([&] { slice(x, {0, 0}, {1, 1}, Shape{1, -1}); }, "repeat axis 1");
  expect_node_error([&] { slice(x, {0}, {1}, Shape{2}); }, "axis 2 is out of range");
  expect_node_error([&] { slice(x, {0, 0}, {1}); }, "different lengths");
}

// ---------------------------------------------------------------- Gather

TEST(RefGather, Axis0AndAxis1) {
  Tensor data = f32({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  Tensor y = run1("Gather", {data, i64({2, 2}, {0, 1, 1, 2})}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values<float>(y), (F{1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f}));
  Tensor d2 = f32({3, 3}, {1.0f, 1.2f, 1.9f, 2.3f, 3.4f, 3.9f, 4.5f, 5.7f, 5.9f});
  y = run1("Gather", {d2, i64({1, 2}, {0, 2})}, {Attribute::make_int("axis", 1)}, 13);
  EXPECT_EQ(y.shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(values<float>(y), (F{1.0f, 1.9f, 2.3f, 3.9f, 4.5f, 5.9f}));
  y = run1("Gather", {d2, i64({1, 2}, {0, 2})}, {Attribute::make_int("axis", -1)}, 13);
  EXPECT_EQ(values<float>(y), (F{1.0f, 1.9f, 2.3f, 3.9f, 4.5f, 5.9f}));
}

TEST(RefGather, NegativeScalarAndEmptyIndices) {
  Tensor data = iota_f32({10});
  EXPECT_EQ(values<float>(run1("Gather", {data, ints({0, -9, -10, -1})}, {}, 13)), (F{0, 1, 0, 9}));
  Tensor y = run1("Gather", {iota_f32({3, 4}), Tensor::scalar<int64_t>(-1)}, {Attribute::make_int("axis", 1)}, 13);
  EXPECT_EQ(y.shape(), (Shape{3}));
  EXPECT_EQ(values<float>(y), (F{3, 7, 11}));
  y = run1("Gather", {iota_f32({3, 4}), Tensor::scalar<int32_t>(2)}, {}, 13);
  EXPECT_EQ(values<float>(y), (F{8, 9, 10, 11}));
  EXPECT_EQ(run1("Gather", {iota_f32({3, 4}), i64({0}, {})}, {}, 13).shape(), (Shape{0, 4}));
  EXPECT_EQ(run1("Gather", {Tensor(DType::Float32, {0, 4}), i64({0}, {})}, {}, 13).shape(), (Shape{0, 4}));
}

TEST(RefGather, EmbeddingLookupOnEveryDtype) {
  // [vocab 5, hidden 3] table, [batch 2, seq 2] ids (the first op of every transformer)
  Tensor ids = i64({2, 2}, {4, 0, 2, 2});
  Tensor table = f16({5, 3}, iota(15));
  Tensor y = run1("Gather", {table, ids}, {}, 13);
  EXPECT_EQ(y.describe(), "float16[2,2,3]");
  EXPECT_EQ(floats(y), (F{12, 13, 14, 0, 1, 2, 6, 7, 8, 6, 7, 8}));
  EXPECT_EQ(values<int64_t>(run1("Gather", {ints({7, 8, 9}), ints({2, 0})}, {}, 13)), (std::vector<int64_t>{9, 7}));
  EXPECT_EQ(values<bool>(run1("Gather", {boolean({2}, {false, true}), ints({1, 1})}, {}, 13)),
            (std::vector<bool>{true, true}));
  Tensor s = run1("Gather", {Tensor::strings({3}, {"x", "y", "z"}), ints({2})}, {}, 13);
  EXPECT_EQ(s.string_data(), (std::vector<std::string>{"z"}));
}

TEST(RefGather, OutOfRangeIndexIsAnErrorNotARead) {
  Tensor data = iota_f32({3, 2});
  expect_node_error([&] { run1("Gather", {data, ints({0, 3})}, {}, 13); }, "index 3 is out of range for axis 0 of size 3");
  expect_node_error([&] { run1("Gather", {data, ints({-4})}, {}, 13); }, "index -4 is out of range");
  expect_node_error([&] { run1("Gather", {data, ints({2})}, {Attribute::make_int("axis", 1)}, 13); }, "index 2");
  expect_node_error([&] { run1("Gather", {Tensor(DType::Float32, {0, 2}), ints({0})}, {}, 13); }, "out of range");
  expect_node_error([&] { run1("Gather", {data, ints({0})}, {Attribute::make_int("axis", 2)}, 13); }, "axis 2 is out of range");
  expect_node_error([&] { run1("Gather", {data, f32({1}, {0})}, {}, 13); }, "integer");
}

// ---------------------------------------------------------------- GatherElements

TEST(RefGatherElements, SpecExamples) {
  Tensor data = f32({2, 2}, {1, 2, 3, 4});
  Tensor y = run1("GatherElements", {data, i64({2, 2}, {0, 0, 1, 0})}, {Attribute::make_int("axis", 1)}, 13);
  EXPECT_EQ(values<float>(y), (F{1, 1, 4, 3}));
  Tensor d3 = f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  y = run1("GatherElements", {d3, i64({2, 3}, {1, 2, 0, 2, 0, 0})}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(y), (F{4, 8, 3, 7, 2, 3}));
  y = run1("GatherElements", {d3, i32({2, 3}, {-1, -2, 0, -2, 0, 0})}, {}, 13);
  EXPECT_EQ(values<float>(y), (F{7, 5, 3, 4, 2, 3}));
  // smaller index dims than data outside the axis, axis -1
  y = run1("GatherElements", {d3, i64({1, 2}, {2, 1})}, {Attribute::make_int("axis", -1)}, 13);
  EXPECT_EQ(values<float>(y), (F{3, 2}));
  EXPECT_EQ(run1("GatherElements", {d3, i64({0, 3}, {})}, {}, 13).shape(), (Shape{0, 3}));
}

TEST(RefGatherElements, Errors) {
  Tensor d = iota_f32({2, 3});
  expect_node_error([&] { run1("GatherElements", {d, i64({1, 1}, {2})}, {}, 13); }, "index 2 is out of range");
  expect_node_error([&] { run1("GatherElements", {d, ints({0})}, {}, 13); }, "must have the rank");
  expect_node_error([&] { run1("GatherElements", {d, i64({1, 4}, {0, 0, 0, 0})}, {}, 13); }, "exceed data");
}

}  // namespace
}  // namespace octet
