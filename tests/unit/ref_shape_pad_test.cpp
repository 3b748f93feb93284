// Reference kernel: Pad.
#include <limits>

#include "ref_shape_testing.h"

namespace octet {
namespace {

using namespace reftest;
using Shape = std::vector<int64_t>;
using F = std::vector<float>;

Attribute mode(const std::string& m) { return Attribute::make_string("mode", m); }

TEST(RefPad, ConstantWithValue) {
  Tensor x = f32({2, 2}, {1, 2, 3, 4});
  Tensor y = run1("Pad", {x, ints({1, 0, 0, 1}), f32({}, {9})}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{3, 3}));
  EXPECT_EQ(values<float>(y), (F{9, 9, 9, 1, 2, 9, 3, 4, 9}));
  y = run1("Pad", {x, ints({0, 1, 0, 0})}, {}, 13);  // default value 0
  EXPECT_EQ(values<float>(y), (F{0, 1, 2, 0, 3, 4}));
  y = run1("Pad", {x, ints({0, 1, 0, 0}), std::nullopt}, {mode("constant")}, 13);
  EXPECT_EQ(values<float>(y), (F{0, 1, 2, 0, 3, 4}));
}

TEST(RefPad, ReflectEdgeWrap) {
  Tensor x = f32({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  Tensor pads = ints({0, 2, 0, 0});
  EXPECT_EQ(values<float>(run1("Pad", {x, pads}, {mode("reflect")}, 13)),
            (F{1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f, 4.5f, 5.7f}));
  EXPECT_EQ(values<float>(run1("Pad", {x, pads}, {mode("edge")}, 13)),
            (F{1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f, 4.5f, 4.5f, 5.7f}));
  EXPECT_EQ(values<float>(run1("Pad", {x, ints({2, 1, 1, 1})}, {mode("wrap")}, 19)),
            (F{3.4f, 2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f,
               3.4f, 2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f}));
  // 1-D: reflect mirrors without repeating the edge; pads longer than the axis keep going.
  Tensor v = f32({3}, {1, 2, 3});
  EXPECT_EQ(values<float>(run1("Pad", {v, ints({2, 2})}, {mode("reflect")}, 13)), (F{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(values<float>(run1("Pad", {v, ints({4, 0})}, {mode("reflect")}, 13)), (F{1, 2, 3, 2, 1, 2, 3}));
  EXPECT_EQ(values<float>(run1("Pad", {v, ints({1, 4})}, {mode("wrap")}, 19)), (F{3, 1, 2, 3, 1, 2, 3, 1}));
  EXPECT_EQ(values<float>(run1("Pad", {v, ints({2, 1})}, {mode("edge")}, 13)), (F{1, 1, 1, 2, 3, 3}));
}

TEST(RefPad, NegativePadsCropFirst) {
  Tensor v = f32({5}, {1, 2, 3, 4, 5});
  EXPECT_EQ(values<float>(run1("Pad", {v, ints({-1, -2})}, {}, 13)), (F{2, 3}));
  EXPECT_EQ(values<float>(run1("Pad", {v, ints({-1, 2})}, {mode("edge")}, 13)), (F{2, 3, 4, 5, 5, 5}));
  // cropped first, then reflected within what is kept (numpy.pad of the slice)
  EXPECT_EQ(values<float>(run1("Pad", {v, ints({1, -2})}, {mode("reflect")}, 13)), (F{2, 1, 2, 3}));
  EXPECT_EQ(run1("Pad", {v, ints({-5, 0})}, {}, 13).shape(), (Shape{0}));
  expect_node_error([&] { run1("Pad", {v, ints({-3, -3})}, {}, 13); }, "remove more than");
}

TEST(RefPad, AxesInputFromOpset18) {
  Tensor x = iota_f32({2, 3});
  Tensor y = run1("Pad", {x, ints({1, 1}), f32({}, {-1}), ints({-1})}, {}, 18);
  EXPECT_EQ(y.shape(), (Shape{2, 5}));
  EXPECT_EQ(values<float>(y), (F{-1, 0, 1, 2, -1, -1, 3, 4, 5, -1}));
  y = run1("Pad", {x, ints({1, 0}), std::nullopt, ints({0})}, {}, 18);
  EXPECT_EQ(y.shape(), (Shape{3, 3}));
  expect_node_error([&] { run1("Pad", {x, ints({1, 1, 1, 1}), std::nullopt, ints({1, -1})}, {}, 18); }, "repeat axis 1");
  expect_node_error([&] { run1("Pad", {x, ints({1, 1, 1})}, {}, 18); }, "2 entries per padded axis");
}

TEST(RefPad, AttributesBeforeOpset11AndDtypes) {
  Tensor y = run1("Pad", {f32({2}, {1, 2})},
                  {Attribute::make_ints("pads", {1, 1}), Attribute::make_float("value", 1.5f)}, 2);
  EXPECT_EQ(values<float>(y), (F{1.5f, 1, 2, 1.5f}));
  y = run1("Pad", {f16({2}, {1, 2})}, {Attribute::make_ints("pads", {0, 1}), Attribute::make_float("value", 0.5f)}, 2);
  EXPECT_EQ(floats(y), (F{1, 2, 0.5f}));
  EXPECT_EQ(values<int64_t>(run1("Pad", {ints({4, 5}), ints({1, 0}), i64({}, {-7})}, {}, 13)),
            (std::vector<int64_t>{-7, 4, 5}));
  EXPECT_EQ(values<bool>(run1("Pad", {boolean({1}, {true}), ints({0, 2})}, {mode("edge")}, 13)),
            (std::vector<bool>{true, true, true}));
  Tensor s = run1("Pad", {Tensor::strings({1}, {"s"}), ints({1, 0})}, {}, 13);
  EXPECT_EQ(s.string_data(), (std::vector<std::string>{"", "s"}));
}

TEST(RefPad, EdgeShapesAndErrors) {
  Tensor empty(DType::Float32, {0, 2});
  EXPECT_EQ(run1("Pad", {empty, ints({1, 0, 0, 0})}, {}, 13).shape(), (Shape{1, 2}));
  EXPECT_EQ(run1("Pad", {empty, ints({0, 1, 0, 0})}, {mode("edge")}, 13).shape(), (Shape{0, 3}));
  expect_node_error([&] { run1("Pad", {empty, ints({1, 0, 0, 0})}, {mode("reflect")}, 13); }, "no elements");
  EXPECT_EQ(values<float>(run1("Pad", {Tensor::scalar<float>(3), i64({0}, {})}, {}, 13)), (F{3}));
  Tensor x = iota_f32({2});
  expect_node_error([&] { run1("Pad", {x, ints({1, 1})}, {mode("mirror")}, 13); }, "unknown mode 'mirror'");
  const int64_t big = std::numeric_limits<int64_t>::max();
  expect_node_error([&] { run1("Pad", {x, ints({big, 1})}, {}, 13); }, "too large");
  expect_node_error([&] { run1("Pad", {x, ints({-big - 1, 0})}, {}, 13); }, "remove more than");
  expect_node_error([&] { run1("Pad", {x, ints({1, 1}), i64({}, {1})}, {}, 13); }, "constant_value");
}

}  // namespace
}  // namespace octet
