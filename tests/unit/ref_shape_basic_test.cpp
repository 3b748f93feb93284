// Reference kernels: Shape, Size, Identity, Constant, ConstantOfShape, Range.
#include <cmath>
#include <limits>

#include "ref_shape_testing.h"

namespace octet {
namespace {

using namespace reftest;

// ---------------------------------------------------------------- Shape / Size

TEST(RefShape, ShapeOfTensorsScalarsAndEmpties) {
  EXPECT_EQ(values<int64_t>(run1("Shape", {iota_f32({2, 3, 4})})), (std::vector<int64_t>{2, 3, 4}));
  Tensor scalar = run1("Shape", {Tensor::scalar<float>(1)});
  EXPECT_EQ(scalar.shape(), (std::vector<int64_t>{0}));
  EXPECT_EQ(values<int64_t>(run1("Shape", {Tensor(DType::Bool, {0, 5})})), (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(values<int64_t>(run1("Shape", {Tensor::strings({2}, {"a", "b"})})), (std::vector<int64_t>{2}));
}

TEST(RefShape, ShapeStartEndClampLikeTheSpec) {
  Tensor x = iota_f32({2, 3, 4});
  auto shape = [&](Attrs a) { return values<int64_t>(run1("Shape", {x}, a, 15)); };
  using V = std::vector<int64_t>;
  EXPECT_EQ(shape({Attribute::make_int("start", 1)}), (V{3, 4}));
  EXPECT_EQ(shape({Attribute::make_int("end", 1)}), (V{2}));
  EXPECT_EQ(shape({Attribute::make_int("start", -1)}), (V{4}));
  EXPECT_EQ(shape({Attribute::make_int("end", -1)}), (V{2, 3}));
  EXPECT_EQ(shape({Attribute::make_int("start", 1), Attribute::make_int("end", 2)}), (V{3}));
  EXPECT_EQ(shape({Attribute::make_int("start", -10)}), (V{2, 3, 4}));  // clipped to 0
  EXPECT_EQ(shape({Attribute::make_int("end", 10)}), (V{2, 3, 4}));     // clipped to rank
  EXPECT_EQ(shape({Attribute::make_int("start", 2), Attribute::make_int("end", 1)}), V{});
}

TEST(RefShape, SizeCountsElements) {
  Tensor s = run1("Size", {iota_f32({2, 3, 4})});
  EXPECT_EQ(s.dtype(), DType::Int64);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(values<int64_t>(s)[0], 24);
  EXPECT_EQ(values<int64_t>(run1("Size", {Tensor(DType::Int64, {3, 0})}))[0], 0);
  EXPECT_EQ(values<int64_t>(run1("Size", {Tensor::scalar<int64_t>(5)}))[0], 1);
}

// ---------------------------------------------------------------- Identity

TEST(RefShape, IdentitySharesTheBytes) {
  Tensor x = f16({2, 2}, {1, 2, 3, 4});
  Tensor y = run1("Identity", {x});
  EXPECT_EQ(y.raw(), x.raw());
  EXPECT_EQ(y.describe(), "float16[2,2]");
  Tensor s = run1("Identity", {Tensor::strings({2}, {"x", "y"})});
  EXPECT_EQ(s.string_data(), (std::vector<std::string>{"x", "y"}));
}

// ---------------------------------------------------------------- Constant

TEST(RefShape, ConstantFromEachValueAttribute) {
  Tensor t = run1("Constant", {}, {Attribute::make_tensor("value", i64({2}, {7, 8}))});
  EXPECT_EQ(values<int64_t>(t), (std::vector<int64_t>{7, 8}));
  t = run1("Constant", {}, {Attribute::make_float("value_float", 2.5f)});
  EXPECT_EQ(t.describe(), "float32[]");
  EXPECT_EQ(values<float>(t)[0], 2.5f);
  t = run1("Constant", {}, {Attribute::make_floats("value_floats", {1, 2, 3})});
  EXPECT_EQ(t.describe(), "float32[3]");
  t = run1("Constant", {}, {Attribute::make_int("value_int", -4)});
  EXPECT_EQ(t.describe(), "int64[]");
  EXPECT_EQ(values<int64_t>(t)[0], -4);
  t = run1("Constant", {}, {Attribute::make_ints("value_ints", {})});
  EXPECT_EQ(t.describe(), "int64[0]");
  t = run1("Constant", {}, {Attribute::make_string("value_string", "hi")});
  EXPECT_EQ(t.describe(), "string[]");
  EXPECT_EQ(t.string_data()[0], "hi");
  Attribute strs;
  strs.name = "value_strings";
  strs.kind = Attribute::Kind::Strings;
  strs.strings = {"a", "bc"};
  t = run1("Constant", {}, {strs});
  EXPECT_EQ(t.string_data(), (std::vector<std::string>{"a", "bc"}));
}

TEST(RefShape, ConstantNeedsExactlyOneValue) {
  expect_node_error([] { run1("Constant", {}, {}); }, "exactly one");
  expect_node_error(
      [] { run1("Constant", {}, {Attribute::make_int("value_int", 1), Attribute::make_float("value_float", 1)}); },
      "exactly one");
}

// ---------------------------------------------------------------- ConstantOfShape

TEST(RefShape, ConstantOfShapeDefaultsToFloatZero) {
  Tensor t = run1("ConstantOfShape", {ints({2, 3})});
  EXPECT_EQ(t.describe(), "float32[2,3]");
  EXPECT_EQ(values<float>(t), std::vector<float>(6, 0.0f));
}

TEST(RefShape, ConstantOfShapeTakesTypeAndValueFromTheAttribute) {
  Tensor t = run1("ConstantOfShape", {ints({3})}, {Attribute::make_tensor("value", i64({1}, {7}))});
  EXPECT_EQ(values<int64_t>(t), (std::vector<int64_t>{7, 7, 7}));
  t = run1("ConstantOfShape", {ints({2, 2})}, {Attribute::make_tensor("value", boolean({1}, {true}))});
  EXPECT_EQ(values<bool>(t), (std::vector<bool>{true, true, true, true}));
  t = run1("ConstantOfShape", {ints({5})}, {Attribute::make_tensor("value", f16({1}, {1.5f}))});
  EXPECT_EQ(t.dtype(), DType::Float16);
  EXPECT_EQ(floats(t), std::vector<float>(5, 1.5f));
  // A large fill (attention-mask sized) stays correct at the ends.
  t = run1("ConstantOfShape", {ints({1, 1, 300, 301})}, {Attribute::make_tensor("value", f32({1}, {-1}))});
  EXPECT_EQ(t.numel(), 300 * 301);
  EXPECT_EQ(values<float>(t).front(), -1.0f);
  EXPECT_EQ(values<float>(t).back(), -1.0f);
}

TEST(RefShape, ConstantOfShapeEdgeShapes) {
  Tensor scalar = run1("ConstantOfShape", {i64({0}, {})}, {Attribute::make_tensor("value", i32({1}, {3}))});
  EXPECT_EQ(scalar.describe(), "int32[]");
  EXPECT_EQ(values<int32_t>(scalar)[0], 3);
  Tensor empty = run1("ConstantOfShape", {ints({0})}, {Attribute::make_tensor("value", i64({1}, {1}))});
  EXPECT_EQ(empty.describe(), "int64[0]");
  expect_node_error([] { run1("ConstantOfShape", {ints({2, -1})}); }, "negative");
  expect_node_error(
      [] { run1("ConstantOfShape", {ints({2})}, {Attribute::make_tensor("value", f32({2}, {1, 2}))}); },
      "one element");
}

// ---------------------------------------------------------------- Range

TEST(RefShape, RangeIntegers) {
  EXPECT_EQ(values<int64_t>(run1("Range", {Tensor::scalar<int64_t>(3), Tensor::scalar<int64_t>(9),
                                           Tensor::scalar<int64_t>(3)})),
            (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(values<int32_t>(run1("Range", {Tensor::scalar<int32_t>(10), Tensor::scalar<int32_t>(4),
                                           Tensor::scalar<int32_t>(-2)})),
            (std::vector<int32_t>{10, 8, 6}));
  Tensor r = run1("Range", {Tensor::scalar<int16_t>(0), Tensor::scalar<int16_t>(5), Tensor::scalar<int16_t>(2)});
  EXPECT_EQ(values<int16_t>(r), (std::vector<int16_t>{0, 2, 4}));
  // limit behind start: empty, not negative
  EXPECT_EQ(run1("Range", {Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(1), Tensor::scalar<int64_t>(1)})
                .describe(),
            "int64[0]");
  // extreme values do not overflow the count
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  r = run1("Range", {Tensor::scalar<int64_t>(lo), Tensor::scalar<int64_t>(hi), Tensor::scalar<int64_t>(hi)});
  EXPECT_EQ(values<int64_t>(r), (std::vector<int64_t>{lo, -1, hi - 1}));
}

TEST(RefShape, RangeFloats) {
  Tensor r = run1("Range", {Tensor::scalar<float>(1), Tensor::scalar<float>(2.5f), Tensor::scalar<float>(0.5f)});
  EXPECT_EQ(values<float>(r), (std::vector<float>{1, 1.5f, 2}));
  r = run1("Range", {Tensor::scalar<float>(0), Tensor::scalar<float>(1), Tensor::scalar<float>(0.3f)});
  EXPECT_EQ(r.numel(), 4);  // ceil(1 / 0.3) = 4: 0, 0.3, 0.6, 0.9
  r = run1("Range", {Tensor::scalar<double>(1), Tensor::scalar<double>(-1), Tensor::scalar<double>(-0.5)});
  EXPECT_EQ(values<double>(r), (std::vector<double>{1, 0.5, 0, -0.5}));
  r = run1("Range", {f16({}, {1}), f16({}, {3}), f16({}, {0.5f})}, {}, 27);
  EXPECT_EQ(r.dtype(), DType::Float16);
  EXPECT_EQ(floats(r), (std::vector<float>{1, 1.5f, 2, 2.5f}));
  r = run1("Range", {bf16({}, {0}), bf16({}, {3}), bf16({}, {1})}, {Attribute::make_int("stash_type", 11)}, 27);
  EXPECT_EQ(floats(r), (std::vector<float>{0, 1, 2}));
}

TEST(RefShape, RangeErrors) {
  expect_node_error([] {
    run1("Range", {Tensor::scalar<int64_t>(0), Tensor::scalar<int64_t>(5), Tensor::scalar<int64_t>(0)});
  }, "delta must not be 0");
  expect_node_error([] {
    run1("Range", {Tensor::scalar<float>(0), Tensor::scalar<float>(5), Tensor::scalar<float>(0)});
  }, "delta must not be 0");
  expect_node_error([] {
    run1("Range", {Tensor::scalar<int64_t>(0), Tensor::scalar<int32_t>(5), Tensor::scalar<int64_t>(1)});
  }, "limit");
  expect_node_error([] { run1("Range", {ints({0, 1}), ints({5}), ints({1})}); }, "must be a scalar");
  expect_node_error([] {
    float inf = std::numeric_limits<float>::infinity();
    run1("Range", {Tensor::scalar<float>(0), Tensor::scalar<float>(inf), Tensor::scalar<float>(1)});
  }, "no finite range");
}

}  // namespace
}  // namespace octet
