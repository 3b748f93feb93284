// Reference kernels: Reshape, Flatten, Squeeze, Unsqueeze, Transpose.
#include <algorithm>
#include <numeric>

#include "ref_shape_testing.h"

namespace octet {
namespace {

using namespace reftest;
using Shape = std::vector<int64_t>;

// ---------------------------------------------------------------- Reshape

TEST(RefReshape, InfersMinusOneAndCopiesZeros) {
  Tensor x = iota_f32({2, 3, 4});
  Tensor y = run1("Reshape", {x, ints({4, -1})});
  EXPECT_EQ(y.shape(), (Shape{4, 6}));
  EXPECT_EQ(values<float>(y), iota(24));
  EXPECT_EQ(run1("Reshape", {x, ints({0, -1})}).shape(), (Shape{2, 12}));
  EXPECT_EQ(run1("Reshape", {x, ints({0, 0, 2, 2})}).shape(), (Shape{2, 3, 2, 2}));
  EXPECT_EQ(run1("Reshape", {x, ints({-1})}).shape(), (Shape{24}));
  EXPECT_EQ(run1("Reshape", {Tensor::scalar<float>(3), ints({1, 1})}).shape(), (Shape{1, 1}));
  EXPECT_EQ(run1("Reshape", {f32({1}, {3}), i64({0}, {})}).shape(), Shape{});  // to a scalar
}

TEST(RefReshape, IsZeroCopyForEveryDtype) {
  Tensor x = f16({2, 3}, iota(6));
  Tensor y = run1("Reshape", {x, ints({3, 2})});
  EXPECT_EQ(y.raw(), x.raw());
  EXPECT_EQ(y.describe(), "float16[3,2]");
  // Also when the data is an initializer (possibly a read-only mapping).
  Tensor z = run_op("Reshape", {x, ints({6})}, {}, 18, 1, /*as_initializers=*/true)[0];
  EXPECT_EQ(floats(z), iota(6));
  Tensor b = run1("Reshape", {boolean({4}, {true, false, false, true}), ints({2, 2})});
  EXPECT_EQ(values<bool>(b), (std::vector<bool>{true, false, false, true}));
  Tensor s = run1("Reshape", {Tensor::strings({2, 2}, {"a", "b", "c", "d"}), ints({4})});
  EXPECT_EQ(s.describe(), "string[4]");
  EXPECT_EQ(s.string_data()[3], "d");
}

TEST(RefReshape, AllowZeroMakesZeroLiteral) {
  Tensor empty(DType::Float32, {0, 3});
  // Without allowzero, 0 copies the input dim: [0,3] -> [3, 3] is a size mismatch.
  expect_node_error([&] { run1("Reshape", {empty, ints({3, 0})}, {}, 14); }, "cannot reshape");
  Tensor y = run1("Reshape", {empty, ints({3, 0})}, {Attribute::make_int("allowzero", 1)}, 14);
  EXPECT_EQ(y.shape(), (Shape{3, 0}));
  // 0 copies the dim when allowzero = 0
  EXPECT_EQ(run1("Reshape", {empty, ints({0, 3})}, {}, 14).shape(), (Shape{0, 3}));
  expect_node_error([&] {
    run1("Reshape", {empty, ints({0, -1})}, {Attribute::make_int("allowzero", 1)}, 14);
  }, "both 0 and -1");
}

TEST(RefReshape, Errors) {
  Tensor x = iota_f32({2, 3});
  expect_node_error([&] { run1("Reshape", {x, ints({4, -1})}); }, "cannot reshape float32[2,3] to [4,-1]");
  expect_node_error([&] { run1("Reshape", {x, ints({-1, -1})}); }, "more than one -1");
  expect_node_error([&] { run1("Reshape", {x, ints({5})}); }, "cannot reshape");
  expect_node_error([&] { run1("Reshape", {x, ints({6, 1, 0})}); }, "copies dim 2 (0) but the input float32[2,3] has rank 2");
  expect_node_error([&] { run1("Reshape", {x, ints({-2, 3})}); }, "invalid dim -2");
  expect_node_error([&] { run1("Reshape", {x, f32({2}, {2, 3})}); }, "integer");
  expect_node_error([&] { run1("Reshape", {x, ints({int64_t{1} << 40, int64_t{1} << 40, -1})}); }, "too many elements");
  expect_node_error([&] { run1("Reshape", {x}); }, "input 1");
}

TEST(RefReshape, Opset1TakesTheShapeAttribute) {
  Tensor y = run1("Reshape", {iota_f32({2, 3})}, {Attribute::make_ints("shape", {3, 2})}, 1);
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
}

// ---------------------------------------------------------------- Flatten

TEST(RefFlatten, EveryAxis) {
  Tensor x = iota_f32({2, 3, 4, 5});
  auto flat = [&](int64_t axis) { return run1("Flatten", {x}, {Attribute::make_int("axis", axis)}, 13).shape(); };
  EXPECT_EQ(flat(0), (Shape{1, 120}));
  EXPECT_EQ(flat(1), (Shape{2, 60}));
  EXPECT_EQ(flat(2), (Shape{6, 20}));
  EXPECT_EQ(flat(3), (Shape{24, 5}));
  EXPECT_EQ(flat(4), (Shape{120, 1}));
  EXPECT_EQ(flat(-1), (Shape{24, 5}));
  EXPECT_EQ(flat(-4), (Shape{1, 120}));
  EXPECT_EQ(run1("Flatten", {x}).shape(), (Shape{2, 60}));  // default axis 1
  EXPECT_EQ(run1("Flatten", {Tensor::scalar<float>(1)}, {Attribute::make_int("axis", 0)}).shape(), (Shape{1, 1}));
  Tensor y = run1("Flatten", {x});
  EXPECT_EQ(y.raw(), x.raw());
  expect_node_error([&] { flat(5); }, "axis 5 is out of range");
  expect_node_error([&] { flat(-5); }, "axis -5 is out of range");
}

// ---------------------------------------------------------------- Squeeze / Unsqueeze

TEST(RefSqueeze, AxesAsInputFromOpset13) {
  Tensor x = iota_f32({1, 3, 1, 5});
  EXPECT_EQ(run1("Squeeze", {x, ints({0})}, {}, 13).shape(), (Shape{3, 1, 5}));
  EXPECT_EQ(run1("Squeeze", {x, ints({0, -2})}, {}, 13).shape(), (Shape{3, 5}));
  EXPECT_EQ(run1("Squeeze", {x}, {}, 13).shape(), (Shape{3, 5}));  // all size-1 dims
  EXPECT_EQ(run1("Squeeze", {x, std::nullopt}, {}, 13).shape(), (Shape{3, 5}));
  EXPECT_EQ(run1("Squeeze", {f32({1, 1}, {4})}, {}, 13).shape(), Shape{});
  Tensor y = run1("Squeeze", {x, ints({2})}, {}, 13);
  EXPECT_EQ(y.raw(), x.raw());
  EXPECT_EQ(values<float>(y), iota(15));
}

TEST(RefSqueeze, AxesAsAttributeBeforeOpset13) {
  Tensor x = iota_f32({1, 3, 1});
  EXPECT_EQ(run1("Squeeze", {x}, {Attribute::make_ints("axes", {-1})}, 11).shape(), (Shape{1, 3}));
  EXPECT_EQ(run1("Squeeze", {x}, {}, 11).shape(), (Shape{3}));
}

TEST(RefSqueeze, Errors) {
  Tensor x = iota_f32({1, 3});
  expect_node_error([&] { run1("Squeeze", {x, ints({1})}, {}, 13); }, "size is not 1");
  expect_node_error([&] { run1("Squeeze", {x, ints({2})}, {}, 13); }, "axis 2 is out of range");
  expect_node_error([&] { run1("Squeeze", {x, ints({0, -2})}, {}, 13); }, "repeat");
}

TEST(RefUnsqueeze, AxesIndexTheOutput) {
  Tensor x = iota_f32({3, 4});
  EXPECT_EQ(run1("Unsqueeze", {x, ints({0})}, {}, 13).shape(), (Shape{1, 3, 4}));
  EXPECT_EQ(run1("Unsqueeze", {x, ints({2})}, {}, 13).shape(), (Shape{3, 4, 1}));
  EXPECT_EQ(run1("Unsqueeze", {x, ints({0, 3})}, {}, 13).shape(), (Shape{1, 3, 4, 1}));
  EXPECT_EQ(run1("Unsqueeze", {x, ints({3, 0})}, {}, 13).shape(), (Shape{1, 3, 4, 1}));  // unsorted
  EXPECT_EQ(run1("Unsqueeze", {x, ints({-1})}, {}, 13).shape(), (Shape{3, 4, 1}));
  EXPECT_EQ(run1("Unsqueeze", {x, ints({1, 4, -3})}, {}, 13).shape(), (Shape{3, 1, 1, 4, 1}));
  EXPECT_EQ(run1("Unsqueeze", {Tensor::scalar<int64_t>(7), ints({0})}, {}, 13).shape(), (Shape{1}));
  EXPECT_EQ(run1("Unsqueeze", {x}, {Attribute::make_ints("axes", {1})}, 11).shape(), (Shape{3, 1, 4}));
  Tensor y = run1("Unsqueeze", {x, ints({0})}, {}, 13);
  EXPECT_EQ(y.raw(), x.raw());
}

TEST(RefUnsqueeze, Errors) {
  Tensor x = iota_f32({3});
  expect_node_error([&] { run1("Unsqueeze", {x, ints({2})}, {}, 13); }, "axis 2 is out of range for rank 2");
  expect_node_error([&] { run1("Unsqueeze", {x, ints({0, 0})}, {}, 13); }, "repeat");
  expect_node_error([&] { run1("Unsqueeze", {x}, {}, 13); }, "input 1");
  expect_node_error([&] { run1("Unsqueeze", {x}, {}, 11); }, "'axes' is required");
}

// ---------------------------------------------------------------- Transpose

// Naive transpose for checking: out[idx] = in[idx permuted back].
std::vector<float> naive_transpose(const std::vector<float>& in, const Shape& shape, const Shape& perm) {
  const size_t r = shape.size();
  Shape out_shape(r);
  for (size_t i = 0; i < r; ++i) out_shape[i] = shape[perm[i]];
  std::vector<float> out(in.size());
  for (size_t flat = 0; flat < in.size(); ++flat) {
    Shape idx(r);  // output index
    size_t rest = flat;
    for (size_t d = r; d-- > 0;) {
      idx[d] = static_cast<int64_t>(rest % out_shape[d]);
      rest /= out_shape[d];
    }
    int64_t src = 0;
    Shape in_idx(r);
    for (size_t i = 0; i < r; ++i) in_idx[perm[i]] = idx[i];
    for (size_t d = 0; d < r; ++d) src = src * shape[d] + in_idx[d];
    out[flat] = in[src];
  }
  return out;
}

TEST(RefTranspose, DefaultReversesDims) {
  Tensor y = run1("Transpose", {iota_f32({2, 3})});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(RefTranspose, AllPermutationsOfARaggedTensor) {
  const Shape shape = {7, 13, 5};
  Tensor x = iota_f32(shape);
  Shape perm = {0, 1, 2};
  do {
    Tensor y = run1("Transpose", {x}, {Attribute::make_ints("perm", perm)});
    EXPECT_EQ(y.shape(), (Shape{shape[perm[0]], shape[perm[1]], shape[perm[2]]}));
    EXPECT_EQ(values<float>(y), naive_transpose(iota(7 * 13 * 5), shape, perm));
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(RefTranspose, RankFourAttentionLayout) {
  const Shape shape = {2, 5, 3, 4};  // [batch, seq, heads, head_dim] -> [batch, heads, seq, head_dim]
  Tensor y = run1("Transpose", {iota_f32(shape)}, {Attribute::make_ints("perm", {0, 2, 1, 3})});
  EXPECT_EQ(y.shape(), (Shape{2, 3, 5, 4}));
  EXPECT_EQ(values<float>(y), naive_transpose(iota(120), shape, {0, 2, 1, 3}));
}

TEST(RefTranspose, EveryDtypeAndEdgeShape) {
  Tensor b = run1("Transpose", {boolean({2, 2}, {true, true, false, false})});
  EXPECT_EQ(values<bool>(b), (std::vector<bool>{true, false, true, false}));
  Tensor h = run1("Transpose", {f16({1, 3}, {1, 2, 3})});
  EXPECT_EQ(h.describe(), "float16[3,1]");
  EXPECT_EQ(floats(h), (std::vector<float>{1, 2, 3}));
  Tensor l = run1("Transpose", {i64({2, 1, 2}, {1, 2, 3, 4})}, {Attribute::make_ints("perm", {2, 1, 0})});
  EXPECT_EQ(values<int64_t>(l), (std::vector<int64_t>{1, 3, 2, 4}));
  Tensor s = run1("Transpose", {Tensor::strings({2, 2}, {"a", "b", "c", "d"})});
  EXPECT_EQ(s.string_data(), (std::vector<std::string>{"a", "c", "b", "d"}));
  EXPECT_EQ(run1("Transpose", {Tensor(DType::Float32, {0, 3})}).shape(), (Shape{3, 0}));
  Tensor scalar = run1("Transpose", {Tensor::scalar<float>(5)});
  EXPECT_EQ(values<float>(scalar), (std::vector<float>{5}));
  // 4-bit elements move nibble by nibble: [[1,2],[3,4]] packed as 0x21, 0x43.
  Tensor q(DType::Int4, {2, 2});
  q.mutable_raw()[0] = 0x21;
  q.mutable_raw()[1] = 0x43;
  Tensor qt = run1("Transpose", {q});
  EXPECT_EQ(qt.raw()[0], 0x31);
  EXPECT_EQ(qt.raw()[1], 0x42);
}

TEST(RefTranspose, BadPermIsAnError) {
  Tensor x = iota_f32({2, 3});
  expect_node_error([&] { run1("Transpose", {x}, {Attribute::make_ints("perm", {0, 0})}); }, "not a permutation");
  expect_node_error([&] { run1("Transpose", {x}, {Attribute::make_ints("perm", {0})}); }, "not a permutation");
  expect_node_error([&] { run1("Transpose", {x}, {Attribute::make_ints("perm", {0, 2})}); }, "not a permutation");
}

}  // namespace
}  // namespace octet
