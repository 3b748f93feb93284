// Reference kernels: Concat, Split, Expand, Tile.
#include <limits>

#include "ref_shape_testing.h"

namespace octet {
namespace {

using namespace reftest;
using Shape = std::vector<int64_t>;
using F = std::vector<float>;

Attribute axis(int64_t a) { return Attribute::make_int("axis", a); }

// ---------------------------------------------------------------- Concat

TEST(RefConcat, AlongEachAxis) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4}), b = f32({2, 2}, {5, 6, 7, 8});
  EXPECT_EQ(values<float>(run1("Concat", {a, b}, {axis(0)}, 13)), (F{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(values<float>(run1("Concat", {a, b}, {axis(1)}, 13)), (F{1, 2, 5, 6, 3, 4, 7, 8}));
  EXPECT_EQ(values<float>(run1("Concat", {a, b}, {axis(-1)}, 13)), (F{1, 2, 5, 6, 3, 4, 7, 8}));
  EXPECT_EQ(values<float>(run1("Concat", {a, b}, {axis(-2)}, 13)), (F{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(values<float>(run1("Concat", {f32({1}, {9})}, {axis(0)}, 13)), (F{9}));
}

TEST(RefConcat, RaggedPartsAndEmptyInputs) {
  Tensor a = iota_f32({2, 1, 3}), b = f32({2, 2, 3}, iota(12, 100)), empty(DType::Float32, {2, 0, 3});
  Tensor y = run1("Concat", {a, empty, b}, {axis(1)}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 3}));
  EXPECT_EQ(values<float>(y), (F{0, 1, 2, 100, 101, 102, 103, 104, 105,  //
                                 3, 4, 5, 106, 107, 108, 109, 110, 111}));
  EXPECT_EQ(run1("Concat", {empty, empty}, {axis(1)}, 13).shape(), (Shape{2, 0, 3}));
}

TEST(RefConcat, AnyDtype) {
  EXPECT_EQ(values<int64_t>(run1("Concat", {ints({1}), ints({2, 3})}, {axis(0)})), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(values<bool>(run1("Concat", {boolean({1}, {true}), boolean({1}, {false})}, {axis(0)})),
            (std::vector<bool>{true, false}));
  EXPECT_EQ(floats(run1("Concat", {f16({1}, {0.5f}), f16({2}, {1, 2})}, {axis(0)})), (F{0.5f, 1, 2}));
  Tensor s = run1("Concat", {Tensor::strings({1}, {"a"}), Tensor::strings({2}, {"b", "c"})}, {axis(0)});
  EXPECT_EQ(s.string_data(), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(RefConcat, Errors) {
  Tensor a = iota_f32({2, 2}), b = iota_f32({3, 3});
  expect_node_error([&] { run1("Concat", {a, b}, {axis(0)}, 13); }, "does not match input 0");
  expect_node_error([&] { run1("Concat", {a, iota_f32({2})}, {axis(0)}, 13); }, "does not match");
  expect_node_error([&] { run1("Concat", {a, i64({2, 2}, {1, 2, 3, 4})}, {axis(0)}, 13); }, "does not match");
  expect_node_error([&] { run1("Concat", {a, a}, {axis(2)}, 13); }, "axis 2 is out of range");
  expect_node_error([&] { run1("Concat", {a, a}, {}, 13); }, "'axis' is required");
  expect_node_error([&] { run1("Concat", {Tensor::scalar<float>(1)}, {axis(0)}, 13); }, "scalars");
}

// ---------------------------------------------------------------- Split

TEST(RefSplit, EqualPartsFromTheOutputCount) {
  auto outs = run_op("Split", {iota_f32({6})}, {}, 13, 3);
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(values<float>(outs[0]), (F{0, 1}));
  EXPECT_EQ(values<float>(outs[2]), (F{4, 5}));
  outs = run_op("Split", {iota_f32({2, 4})}, {axis(1)}, 13, 2);
  EXPECT_EQ(values<float>(outs[0]), (F{0, 1, 4, 5}));
  EXPECT_EQ(values<float>(outs[1]), (F{2, 3, 6, 7}));
  expect_node_error([] { run_op("Split", {iota_f32({7})}, {}, 13, 3); }, "cannot be split evenly");
}

TEST(RefSplit, SizesAsInputAttributeAndNumOutputs) {
  auto outs = run_op("Split", {iota_f32({2, 6}), ints({2, 4})}, {axis(-1)}, 13, 2);
  EXPECT_EQ(outs[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(values<float>(outs[1]), (F{2, 3, 4, 5, 8, 9, 10, 11}));
  outs = run_op("Split", {iota_f32({5})}, {Attribute::make_ints("split", {1, 4})}, 11, 2);
  EXPECT_EQ(values<float>(outs[0]), (F{0}));
  EXPECT_EQ(values<float>(outs[1]), (F{1, 2, 3, 4}));
  // num_outputs (opset 18): uneven sizes give ceil-sized parts and a smaller last one.
  outs = run_op("Split", {iota_f32({7})}, {Attribute::make_int("num_outputs", 3)}, 18, 3);
  EXPECT_EQ(values<float>(outs[0]), (F{0, 1, 2}));
  EXPECT_EQ(values<float>(outs[1]), (F{3, 4, 5}));
  EXPECT_EQ(values<float>(outs[2]), (F{6}));
  outs = run_op("Split", {iota_f32({2, 8})}, {axis(1), Attribute::make_int("num_outputs", 3)}, 18, 3);
  EXPECT_EQ(outs[2].shape(), (Shape{2, 2}));
  // 6 into 4: ceil parts of 2 leave an empty last part (as the ONNX reference computes it)
  outs = run_op("Split", {iota_f32({6})}, {Attribute::make_int("num_outputs", 4)}, 18, 4);
  EXPECT_EQ(outs[2].shape(), (Shape{2}));
  EXPECT_EQ(outs[3].shape(), (Shape{0}));
  expect_node_error([] { run_op("Split", {iota_f32({5})}, {Attribute::make_int("num_outputs", 4)}, 18, 4); },
                    "too short");
}

TEST(RefSplit, ZeroSizedPartsAndDtypes) {
  auto outs = run_op("Split", {ints({1, 2, 3}), ints({0, 3, 0})}, {}, 13, 3);
  EXPECT_EQ(outs[0].describe(), "int64[0]");
  EXPECT_EQ(values<int64_t>(outs[1]), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(outs[2].describe(), "int64[0]");
  outs = run_op("Split", {Tensor::strings({2}, {"p", "q"})}, {}, 13, 2);
  EXPECT_EQ(outs[1].string_data()[0], "q");
}

TEST(RefSplit, Errors) {
  Tensor x = iota_f32({6});
  expect_node_error([&] { run_op("Split", {x, ints({2, 2})}, {}, 13, 2); }, "sums to 4");
  expect_node_error([&] { run_op("Split", {x, ints({2, 2, 2})}, {}, 13, 2); }, "has 3 parts");
  expect_node_error([&] { run_op("Split", {x, ints({-1, 7})}, {}, 13, 2); }, "negative");
  expect_node_error([&] { run_op("Split", {x}, {Attribute::make_int("num_outputs", 3)}, 18, 2); }, "num_outputs");
  expect_node_error([&] { run_op("Split", {x}, {axis(1)}, 13, 2); }, "axis 1 is out of range");
}

// ---------------------------------------------------------------- Expand

TEST(RefExpand, BroadcastsBothWays) {
  Tensor x = f32({3, 1}, {1, 2, 3});
  Tensor y = run1("Expand", {x, ints({2, 1, 4})});
  EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
  F want;
  for (int b = 0; b < 2; ++b)
    for (float v : {1, 2, 3}) want.insert(want.end(), 4, v);
  EXPECT_EQ(values<float>(y), want);
  // Shape of lower rank, and 1s that keep the input's dims.
  EXPECT_EQ(run1("Expand", {x, ints({4})}).shape(), (Shape{3, 4}));
  EXPECT_EQ(run1("Expand", {x, ints({1, 1})}).shape(), (Shape{3, 1}));
  EXPECT_EQ(values<float>(run1("Expand", {x, ints({3, 1})})), (F{1, 2, 3}));
  EXPECT_EQ(values<float>(run1("Expand", {Tensor::scalar<float>(7), ints({2, 2})})), (F{7, 7, 7, 7}));
  EXPECT_EQ(run1("Expand", {Tensor::scalar<float>(7), i64({0}, {})}).shape(), Shape{});
  EXPECT_EQ(run1("Expand", {x, ints({0, 3, 2})}).shape(), (Shape{0, 3, 2}));
  EXPECT_EQ(values<bool>(run1("Expand", {boolean({2}, {true, false}), ints({2, 2})})),
            (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(values<int64_t>(run1("Expand", {ints({5}), ints({3})})), (std::vector<int64_t>{5, 5, 5}));
}

TEST(RefExpand, Errors) {
  Tensor x = iota_f32({3, 2});
  expect_node_error([&] { run1("Expand", {x, ints({3, 4})}); }, "cannot broadcast float32[3,2] to [3,4]");
  expect_node_error([&] { run1("Expand", {x, ints({-1, 2})}); }, "negative");
  expect_node_error([&] { run1("Expand", {x, ints({int64_t{1} << 40, int64_t{1} << 40, 1, 1})}); }, "too many elements");
}

// ---------------------------------------------------------------- Tile

TEST(RefTile, RepeatsEachDim) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(values<float>(run1("Tile", {x, ints({1, 2})})), (F{1, 2, 1, 2, 3, 4, 3, 4}));
  EXPECT_EQ(values<float>(run1("Tile", {x, ints({2, 1})})), (F{1, 2, 3, 4, 1, 2, 3, 4}));
  Tensor y = run1("Tile", {x, ints({2, 3})});
  EXPECT_EQ(y.shape(), (Shape{4, 6}));
  EXPECT_EQ(values<float>(y)[6 * 3 + 5], 4.0f);
  EXPECT_EQ(run1("Tile", {x, ints({0, 3})}).shape(), (Shape{0, 6}));
  EXPECT_EQ(values<float>(run1("Tile", {Tensor::scalar<float>(2), i64({0}, {})})), (F{2}));
  Tensor s = run1("Tile", {Tensor::strings({2}, {"a", "b"}), ints({2})});
  EXPECT_EQ(s.string_data(), (std::vector<std::string>{"a", "b", "a", "b"}));
  expect_node_error([&] { run1("Tile", {x, ints({2})}); }, "one entry per dim");
  expect_node_error([&] { run1("Tile", {x, ints({1, -1})}); }, "negative");
  expect_node_error([&] { run1("Tile", {x, ints({1, std::numeric_limits<int64_t>::max()})}); }, "too large");
  expect_node_error([&] { run1("Tile", {x, ints({int64_t{1} << 40, int64_t{1} << 40})}); }, "too many elements");
}

}  // namespace
}  // namespace octet
