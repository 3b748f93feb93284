// Reference kernels: GatherND, ScatterND, ScatterElements (and Scatter). Each is checked
// against a naive loop written from the spec's pseudo-code, on edge shapes.
#include <cmath>
#include <limits>

#include "ref_shape_testing.h"

namespace octet {
namespace {

using namespace reftest;
using Shape = std::vector<int64_t>;
using F = std::vector<float>;
using I64 = std::vector<int64_t>;

Attribute batch_dims(int64_t b) { return Attribute::make_int("batch_dims", b); }
Attribute reduction(const std::string& r) { return Attribute::make_string("reduction", r); }
Attribute axis(int64_t a) { return Attribute::make_int("axis", a); }

// ---------------------------------------------------------------- GatherND

TEST(RefGatherND, SpecExamples) {
  // The five examples of the operator's documentation.
  Tensor d22 = i32({2, 2}, {0, 1, 2, 3});
  Tensor y = run1("GatherND", {d22, i64({2, 2}, {0, 0, 1, 1})}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{2}));
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{0, 3}));
  y = run1("GatherND", {d22, i64({2, 1}, {1, 0})}, {}, 13);
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{2, 3, 0, 1}));
  Tensor d222 = i32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  y = run1("GatherND", {d222, i64({2, 2}, {0, 1, 1, 0})}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{2, 3, 4, 5}));
  y = run1("GatherND", {d222, i64({2, 1, 2}, {0, 1, 1, 0})}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 1, 2}));
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{2, 3, 4, 5}));
  y = run1("GatherND", {d222, i64({2, 1}, {1, 0})}, {batch_dims(1)}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{2, 3, 4, 5}));
}

// out[b0, b1, t, :] = data[b0, b1, idx[b0, b1, t, 0], idx[b0, b1, t, 1], :], written out.
TEST(RefGatherND, TwoBatchDimsNegativeIndicesMatchNaive) {
  const Shape ds = {2, 3, 4, 5, 6};
  Tensor data = iota_f32(ds);
  I64 idx;
  for (int i = 0; i < 2 * 3 * 7; ++i) idx.insert(idx.end(), {(i * 5) % 4 - 4 + (i % 2) * 4, (i * 3) % 5 - (i % 3 == 0) * 5});
  Tensor y = run1("GatherND", {data, i64({2, 3, 7, 2}, idx)}, {batch_dims(2)}, 13);
  ASSERT_EQ(y.shape(), (Shape{2, 3, 7, 6}));
  F want;
  for (int64_t b0 = 0; b0 < 2; ++b0)
    for (int64_t b1 = 0; b1 < 3; ++b1)
      for (int64_t t = 0; t < 7; ++t) {
        const int64_t at = ((b0 * 3 + b1) * 7 + t) * 2;
        const int64_t i = (idx[at] + 4) % 4, j = (idx[at + 1] + 5) % 5;
        for (int64_t c = 0; c < 6; ++c) want.push_back(static_cast<float>((((b0 * 3 + b1) * 4 + i) * 5 + j) * 6 + c));
      }
  EXPECT_EQ(values<float>(y), want);
}

TEST(RefGatherND, EdgeShapesAndDtypes) {
  // rank-1 data, a single index tuple of rank 1: a scalar out.
  Tensor y = run1("GatherND", {iota_f32({5}), i64({1}, {-1})}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{}));
  EXPECT_EQ(values<float>(y), (F{4}));
  // size-1 dims, k = 0 (each tuple takes the whole tensor), empty index lists.
  y = run1("GatherND", {iota_f32({1, 3}), i64({2, 0}, {})}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 1, 3}));
  EXPECT_EQ(values<float>(y), (F{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(run1("GatherND", {iota_f32({3, 4}), i64({0, 1}, {})}, {}, 13).shape(), (Shape{0, 4}));
  EXPECT_EQ(run1("GatherND", {Tensor(DType::Float32, {2, 0}), i64({3, 1}, {0, 1, -1})}, {}, 13).shape(),
            (Shape{3, 0}));
  // The attention-mask pattern of torch's dynamo export: bool data, [b, 1, 1, s, 2] indices.
  Tensor mask = boolean({2, 3}, {true, true, false, true, false, false});
  y = run1("GatherND", {mask, i64({2, 1, 1, 3, 2}, {0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2})}, {}, 13);
  EXPECT_EQ(y.shape(), (Shape{2, 1, 1, 3}));
  EXPECT_EQ(values<bool>(y), (std::vector<bool>{true, true, false, true, false, false}));
  Tensor s = run1("GatherND", {Tensor::strings({2, 2}, {"a", "b", "c", "d"}), i64({1, 2}, {1, 0})}, {}, 13);
  EXPECT_EQ(s.string_data(), (std::vector<std::string>{"c"}));
  EXPECT_EQ(floats(run1("GatherND", {f16({2, 2}, {1, 2, 3, 4}), i64({1, 1}, {1})}, {}, 13)), (F{3, 4}));
}

TEST(RefGatherND, BadIndicesAreErrorsNotReads) {
  Tensor data = iota_f32({2, 3});
  expect_node_error([&] { run1("GatherND", {data, i64({1, 2}, {1, 3})}, {}, 13); },
                    "index 3 is out of range for axis 1 of size 3");
  expect_node_error([&] { run1("GatherND", {data, i64({1, 2}, {-3, 0})}, {}, 13); }, "index -3 is out of range");
  expect_node_error([&] { run1("GatherND", {data, i64({1, 3}, {0, 0, 0})}, {}, 13); }, "address 3 dims");
  expect_node_error([&] { run1("GatherND", {data, i64({3, 1}, {0, 0, 0})}, {batch_dims(1)}, 13); },
                    "batch dim 0");
  expect_node_error([&] { run1("GatherND", {data, i64({2, 1}, {0, 0})}, {batch_dims(2)}, 13); }, "batch_dims 2");
  expect_node_error([&] { run1("GatherND", {Tensor(DType::Float32, {0}), i64({1, 1}, {0})}, {}, 13); },
                    "out of range for axis 0 of size 0");
}

// ---------------------------------------------------------------- ScatterND

TEST(RefScatterND, SpecExamplesAndReductions) {
  Tensor data = iota_f32({8});
  Tensor y = run1("ScatterND", {data, i64({4, 1}, {4, 3, 1, 7}), f32({4}, {9, 10, 11, 12})});
  EXPECT_EQ(values<float>(y), (F{0, 11, 2, 10, 9, 5, 6, 12}));
  // Duplicates: reductions combine in order; none keeps the last update.
  Tensor idx = i64({3, 1}, {1, 1, -1});
  Tensor upd = f32({3}, {2, 5, 3});
  Tensor base = f32({3}, {4, 4, 4});
  EXPECT_EQ(values<float>(run1("ScatterND", {base, idx, upd})), (F{4, 5, 3}));
  EXPECT_EQ(values<float>(run1("ScatterND", {base, idx, upd}, {reduction("add")})), (F{4, 11, 7}));
  EXPECT_EQ(values<float>(run1("ScatterND", {base, idx, upd}, {reduction("mul")})), (F{4, 40, 12}));
  EXPECT_EQ(values<float>(run1("ScatterND", {base, idx, upd}, {reduction("max")})), (F{4, 5, 4}));
  EXPECT_EQ(values<float>(run1("ScatterND", {base, idx, upd}, {reduction("min")})), (F{4, 2, 3}));
}

TEST(RefScatterND, SlicesMatchNaive) {
  // data [4, 3, 2], k = 2: each tuple writes a row of 2.
  Tensor data = iota_f32({4, 3, 2});
  I64 idx = {3, 2, -4, 0, 1, -1, 0, 2};
  Tensor upd = f32({2, 2, 2}, iota(8, 100));
  Tensor y = run1("ScatterND", {data, i64({2, 2, 2}, idx), upd}, {reduction("add")});
  F want = iota(24);
  for (int t = 0; t < 4; ++t) {
    const int64_t i = (idx[2 * t] + 4) % 4, j = (idx[2 * t + 1] + 3) % 3;
    for (int c = 0; c < 2; ++c) want[(i * 3 + j) * 2 + c] += 100 + t * 2 + c;
  }
  EXPECT_EQ(values<float>(y), want);
}

TEST(RefScatterND, EdgeShapesDtypesAndNaN) {
  // k = rank on a rank-1 tensor with a size-1 update list; k = 0 replaces everything.
  EXPECT_EQ(values<float>(run1("ScatterND", {iota_f32({1}), i64({1, 1}, {0}), f32({1}, {7})})), (F{7}));
  EXPECT_EQ(values<float>(run1("ScatterND", {iota_f32({2}), i64({1, 0}, {}), f32({1, 2}, {5, 6})})), (F{5, 6}));
  // no updates at all, and updates into an empty slice
  EXPECT_EQ(values<float>(run1("ScatterND", {iota_f32({3}), i64({0, 1}, {}), f32({0}, {})})), (F{0, 1, 2}));
  EXPECT_EQ(run1("ScatterND", {Tensor(DType::Float32, {2, 0}), i64({1, 1}, {1}), f32({1, 0}, {})}).shape(),
            (Shape{2, 0}));
  // integers wrap like numpy; max/min keep NaN from either side like np.maximum
  Tensor yi = run1("ScatterND", {Tensor::from_vector<int8_t>({2}, {100, -100}), i64({2, 1}, {0, 1}),
                                 Tensor::from_vector<int8_t>({2}, {100, -100})}, {reduction("add")});
  EXPECT_EQ(values<int8_t>(yi), (std::vector<int8_t>{-56, 56}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  F got = values<float>(run1("ScatterND", {f32({2}, {nan, 1}), i64({2, 1}, {0, 1}), f32({2}, {5, nan})},
                             {reduction("max")}));
  EXPECT_TRUE(std::isnan(got[0]) && std::isnan(got[1]));
  EXPECT_EQ(floats(run1("ScatterND", {bf16({2}, {1, 2}), i64({1, 1}, {1}), bf16({1}, {3})}, {reduction("mul")})),
            (F{1, 6}));
  Tensor s = run1("ScatterND", {Tensor::strings({2}, {"a", "b"}), i64({1, 1}, {0}), Tensor::strings({1}, {"z"})});
  EXPECT_EQ(s.string_data(), (std::vector<std::string>{"z", "b"}));
}

TEST(RefScatterND, Errors) {
  Tensor data = iota_f32({2, 3});
  expect_node_error([&] { run1("ScatterND", {data, i64({1, 2}, {0, 3}), f32({1}, {1})}); },
                    "index 3 is out of range for axis 1 of size 3");
  expect_node_error([&] { run1("ScatterND", {data, i64({1, 1}, {0}), f32({1, 2}, {1, 2})}); },
                    "data.shape[1:]");
  expect_node_error([&] { run1("ScatterND", {data, i64({1, 1}, {0}), f32({1, 3}, {1, 2, 3})}, {reduction("avg")}); },
                    "reduction 'avg'");
  expect_node_error([&] { run1("ScatterND", {boolean({1}, {true}), i64({1, 1}, {0}), boolean({1}, {true})},
                               {reduction("add")}); },
                    "does not support");
}

// ---------------------------------------------------------------- ScatterElements

TEST(RefScatterElements, SpecExamplesAxesAndReductions) {
  Tensor y = run1("ScatterElements", {Tensor(DType::Float32, {3, 3}), i64({2, 3}, {1, 0, 2, 0, 2, 1}),
                                      f32({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f})});
  EXPECT_EQ(values<float>(y), (F{2.0f, 1.1f, 0, 1.0f, 0, 2.2f, 0, 2.1f, 1.2f}));
  Tensor row = f32({1, 5}, {1, 2, 3, 4, 5});
  EXPECT_EQ(values<float>(run1("ScatterElements", {row, i64({1, 2}, {1, -2}), f32({1, 2}, {9, 8})}, {axis(-1)})),
            (F{1, 9, 3, 8, 5}));
  Tensor dup = i64({1, 3}, {1, 1, 1});
  Tensor upd = f32({1, 3}, {2, 10, 3});
  EXPECT_EQ(values<float>(run1("ScatterElements", {row, dup, upd}, {axis(1)})), (F{1, 3, 3, 4, 5}));
  EXPECT_EQ(values<float>(run1("ScatterElements", {row, dup, upd}, {axis(1), reduction("add")})), (F{1, 17, 3, 4, 5}));
  EXPECT_EQ(values<float>(run1("ScatterElements", {row, dup, upd}, {axis(1), reduction("mul")})), (F{1, 120, 3, 4, 5}));
  EXPECT_EQ(values<float>(run1("ScatterElements", {row, dup, upd}, {axis(1), reduction("max")})), (F{1, 10, 3, 4, 5}));
  EXPECT_EQ(values<float>(run1("ScatterElements", {row, dup, upd}, {axis(1), reduction("min")})), (F{1, 2, 3, 4, 5}));
  // Scatter, the opset 9/10 name
  EXPECT_EQ(values<float>(run1("Scatter", {row, i64({1, 1}, {4}), f32({1, 1}, {0})}, {axis(1)}, 10)),
            (F{1, 2, 3, 4, 0}));
}

// Indices smaller than data outside the axis, rank 3, int32 indices: against a naive loop.
TEST(RefScatterElements, Rank3MatchesNaive) {
  const Shape ds = {3, 4, 5}, is = {2, 3, 4};
  Tensor data = iota_f32(ds);
  std::vector<int32_t> idx;
  for (int i = 0; i < 24; ++i) idx.push_back((i * 7) % 4 - (i % 2) * 4);
  Tensor upd = f32(is, iota(24, -1, -1));
  Tensor y = run1("ScatterElements", {data, i32(is, idx), upd}, {axis(1), reduction("add")});
  F want = iota(60);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) {
        const int i = (a * 3 + b) * 4 + c;
        want[(a * 4 + (idx[i] + 4) % 4) * 5 + c] += -1.0f - i;
      }
  EXPECT_EQ(values<float>(y), want);
}

TEST(RefScatterElements, EdgeShapesAndErrors) {
  EXPECT_EQ(values<float>(run1("ScatterElements", {iota_f32({1}), i64({1}, {0}), f32({1}, {5})})), (F{5}));
  EXPECT_EQ(values<float>(run1("ScatterElements", {iota_f32({3}), i64({0}, {}), f32({0}, {})})), (F{0, 1, 2}));
  Tensor data = iota_f32({2, 2});
  expect_node_error([&] { run1("ScatterElements", {data, i64({1, 1}, {2}), f32({1, 1}, {0})}); },
                    "index 2 is out of range for axis 0 of size 2");
  expect_node_error([&] { run1("ScatterElements", {data, i64({1, 3}, {0, 0, 0}), f32({1, 3}, {0, 0, 0})}); },
                    "in dim 1");
  expect_node_error([&] { run1("ScatterElements", {data, i64({1, 2}, {0, 0}), f32({2, 1}, {0, 0})}); },
                    "shape");
  expect_node_error([&] { run1("ScatterElements", {data, i64({2}, {0, 0}), f32({2}, {0, 0})}); }, "rank");
}

}  // namespace
}  // namespace octet
