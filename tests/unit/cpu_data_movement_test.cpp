// Optimized Transpose, Slice, Concat, Split and Gather against the reference kernels:
// byte-identical outputs for every element size (1, 2, 4, 8 bytes), ragged and size-0
// shapes, every permutation of rank 1-5, negative and clamped slice indices, every axis,
// the multi-threaded paths, and the reference's own error messages for bad indices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

#include "cpu_test_util.h"
#include "ops/infer.h"

namespace octet::testing {
namespace {

const DType kDtypes[] = {DType::UInt8, DType::Float16, DType::Float32, DType::Int64,
                         DType::Bool,  DType::Int16,   DType::Int32,   DType::Float64};

// Random bytes (0/1 for bool), distinct per seed: any misplaced element shows.
Tensor random_tensor(DType dtype, std::vector<int64_t> shape, uint32_t seed) {
  Tensor t(dtype, std::move(shape));
  uint64_t s = 0x9E3779B97F4A7C15ull * (seed + 1);
  uint8_t* p = t.mutable_raw();
  for (size_t i = 0; i < t.bytes(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<uint8_t>(s >> 56);
    if (dtype == DType::Bool) p[i] &= 1;
  }
  return t;
}

Tensor ints(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v); }

void expect_same_bytes(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const size_t bytes = dtype_storage_bytes(want.dtype(), want.numel());
  // An empty tensor may have no buffer at all, and memcmp's pointers must not be null.
  if (bytes > 0) {
    EXPECT_EQ(std::memcmp(got.raw(), want.raw(), bytes), 0) << what << ": contents differ";
  }
}

// Reference first, then the optimized kernels at every ISA level; they must take the node.
void expect_identical(const CpuCall& call, const std::string& what) {
  const std::vector<Tensor> want = run_call(call, KernelChoice::Reference);
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    int optimized = 0;
    const std::vector<Tensor> got = run_call(call, KernelChoice::Optimized, &optimized);
    const std::string label = call.op + " " + what + " at " + isa_name(level);
    EXPECT_EQ(optimized, 1) << label << ": the optimized kernel declined the node";
    ASSERT_EQ(got.size(), want.size()) << label;
    for (size_t i = 0; i < want.size(); ++i) expect_same_bytes(got[i], want[i], label + " output " + std::to_string(i));
  }
}

// The optimized session must fail with exactly the reference's message.
void expect_same_error(const CpuCall& call, const std::string& what) {
  std::string want, got;
  try {
    run_call(call, KernelChoice::Reference);
  } catch (const Error& e) {
    want = e.what();
  }
  try {
    run_call(call, KernelChoice::Optimized);
  } catch (const Error& e) {
    got = e.what();
  }
  EXPECT_FALSE(want.empty()) << what << ": the reference accepted it";
  EXPECT_EQ(got, want) << what;
}

TEST(CpuDataMovement, TransposeEveryPermutationOfRank1To5) {
  const std::vector<std::vector<int64_t>> shapes = {
      {1}, {17}, {65}, {0},
      {3, 17}, {64, 65}, {65, 1}, {1, 64}, {0, 3},
      {3, 17, 65}, {64, 3, 1}, {17, 65, 3}, {2, 0, 3},
      {2, 3, 17, 5}, {1, 65, 3, 17}, {3, 1, 64, 2},
      {2, 3, 1, 17, 5}, {3, 2, 5, 1, 65}, {2, 0, 3, 1, 4}};
  uint32_t seed = 1;
  for (const auto& shape : shapes) {
    std::vector<int64_t> perm(shape.size());
    std::iota(perm.begin(), perm.end(), 0);
    size_t k = 0;
    do {
      // Small ranks try every dtype per permutation; larger ones cycle through them.
      const size_t ndtypes = shape.size() <= 2 ? std::size(kDtypes) : 1;
      for (size_t d = 0; d < ndtypes; ++d, ++k) {
        const DType dtype = kDtypes[k % std::size(kDtypes)];
        expect_identical({"Transpose", {random_tensor(dtype, shape, seed++)}, {Attribute::make_ints("perm", perm)}},
                         shape_to_string(shape) + " perm " + shape_to_string(perm) + " " + dtype_name(dtype));
      }
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
  // No perm attribute: the dims reversed.
  expect_identical({"Transpose", {random_tensor(DType::Float32, {3, 17, 5}, 7)}}, "default perm");
}

TEST(CpuDataMovement, LargeTransposesUseThreads) {
  struct Case {
    std::vector<int64_t> shape, perm;
    DType dtype;
  };
  const Case cases[] = {{{300, 257}, {1, 0}, DType::Float32},
                        {{2, 128, 4, 65}, {0, 2, 1, 3}, DType::Float32},
                        {{3, 257, 129}, {2, 0, 1}, DType::Int8},
                        {{3, 257, 129}, {1, 2, 0}, DType::UInt16},
                        {{65, 33, 40}, {2, 1, 0}, DType::Int64},
                        // ViT patch extraction: short contiguous rows (16 floats, and
                        // ragged 12-element rows in 2-byte and 8-byte types).
                        {{2, 3, 14, 16, 14, 16}, {0, 2, 4, 1, 3, 5}, DType::Float32},
                        {{2, 3, 10, 12, 9, 12}, {0, 2, 4, 1, 3, 5}, DType::Float16},
                        {{1, 5, 9, 12, 8, 12}, {0, 2, 4, 1, 3, 5}, DType::Int64}};
  for (const Case& c : cases) {
    CpuCall call{"Transpose", {random_tensor(c.dtype, c.shape, 11)}, {Attribute::make_ints("perm", c.perm)}};
    call.threads = 2;
    expect_identical(call, shape_to_string(c.shape) + " perm " + shape_to_string(c.perm));
  }
}

TEST(CpuDataMovement, SliceNegativeClampedAndStepped) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max(), kMin = std::numeric_limits<int64_t>::min();
  struct Case {
    std::vector<int64_t> starts, ends, axes, steps;  // empty axes/steps: input omitted
  };
  const Case cases[] = {
      {{0, 0, 0}, {5, 17, 65}, {}, {}},                 // everything
      {{1}, {-1}, {1}, {}},                             // one middle axis, step 1
      {{-3}, {kMax}, {2}, {}},                          // tail of the last axis, end clamped
      {{2, -100}, {4, 100}, {0, 2}, {1, 1}},            // start clamped to 0
      {{0, 0}, {5, 65}, {0, 2}, {2, 3}},                // steps on the inner axis
      {{0}, {17}, {1}, {2}},                            // step on a middle axis only: rows
      {{-1}, {kMin}, {2}, {-1}},                        // last axis reversed
      {{10}, {-10}, {1}, {-3}},
      {{kMax, 3}, {kMin, 60}, {1, -1}, {-2, 1}},        // reversed rows, contiguous inner
      {{1, 0}, {64, 5}, {-1, -3}, {}},                  // negative axes
      {{3}, {1}, {0}, {}},                              // empty
      {{0}, {kMax}, {2}, {100}},                        // step larger than the dim
      {{4, 16, 64}, {5, 17, 65}, {0, 1, 2}, {}},        // a single element
  };
  uint32_t seed = 100;
  size_t k = 0;
  for (const Case& c : cases)
    for (int r = 0; r < 2; ++r, ++k) {
      const DType dtype = kDtypes[k % std::size(kDtypes)];
      CpuCall call{"Slice", {random_tensor(dtype, {5, 17, 65}, seed++), ints(c.starts), ints(c.ends)}};
      if (!c.axes.empty() || !c.steps.empty()) call.inputs.push_back(c.axes.empty() ? std::nullopt : std::optional(ints(c.axes)));
      if (!c.steps.empty()) call.inputs.push_back(ints(c.steps));
      expect_identical(call, "starts " + shape_to_string(c.starts) + " ends " + shape_to_string(c.ends) + " axes " +
                                 shape_to_string(c.axes) + " steps " + shape_to_string(c.steps) + " " + dtype_name(dtype));
    }
  // int32 index inputs, a size-0 input, and a large sliced copy over two threads.
  expect_identical({"Slice", {random_tensor(DType::Int32, {4, 9}, 1), Tensor::from_vector<int32_t>({1}, {-7}),
                              Tensor::from_vector<int32_t>({1}, {8}), Tensor::from_vector<int32_t>({1}, {1})}},
                   "int32 indices");
  expect_identical({"Slice", {random_tensor(DType::Float32, {0, 9}, 2), ints({1}), ints({5}), ints({1})}}, "size-0 input");
  CpuCall big{"Slice", {random_tensor(DType::Float32, {4, 130, 300}, 3), ints({1, -290}), ints({129, -3}), ints({1, 2})}};
  big.threads = 2;
  expect_identical(big, "large");
  // 70001 short rows (3 of 8 bytes) under one outer dim: blocks of rows split over threads.
  CpuCall rows{"Slice", {random_tensor(DType::UInt8, {70001, 8}, 5), ints({2}), ints({5}), ints({1})}};
  rows.threads = 2;
  expect_identical(rows, "short rows, one outer dim");
  expect_same_error({"Slice", {random_tensor(DType::Float32, {4, 9}, 4), ints({0}), ints({2}), ints({0}), ints({0})}},
                    "zero step");
}

TEST(CpuDataMovement, ConcatAlongEveryAxis) {
  const std::vector<int64_t> base = {3, 17, 5, 2};
  uint32_t seed = 200;
  size_t k = 0;
  for (int64_t rank = 1; rank <= 4; ++rank)
    for (int64_t axis = -rank; axis < rank; ++axis)
      for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{1, 0, 4}, {2}, {65, 3}}) {
        const DType dtype = kDtypes[k++ % std::size(kDtypes)];
        CpuCall call{"Concat", {}, {Attribute::make_int("axis", axis)}};
        for (int64_t n : sizes) {
          std::vector<int64_t> shape(base.begin(), base.begin() + rank);
          shape[axis < 0 ? axis + rank : axis] = n;
          call.inputs.push_back(random_tensor(dtype, shape, seed++));
        }
        expect_identical(call, "rank " + std::to_string(rank) + " axis " + std::to_string(axis) + " sizes " +
                                   shape_to_string(sizes) + " " + dtype_name(dtype));
      }
  CpuCall big{"Concat", {random_tensor(DType::Float32, {128, 300}, 1), random_tensor(DType::Float32, {128, 257}, 2)},
              {Attribute::make_int("axis", 1)}};
  big.threads = 2;
  expect_identical(big, "large");
  // 70001 short rows (3 of 8 bytes) under one outer dim: blocks of rows split over threads.
  CpuCall rows{"Slice", {random_tensor(DType::UInt8, {70001, 8}, 5), ints({2}), ints({5}), ints({1})}};
  rows.threads = 2;
  expect_identical(rows, "short rows, one outer dim");
}

TEST(CpuDataMovement, SplitAlongEveryAxis) {
  const std::vector<int64_t> shape = {4, 6, 9};
  uint32_t seed = 300;
  size_t k = 0;
  for (int64_t axis = -3; axis < 3; ++axis) {
    const int64_t dim = shape[axis < 0 ? axis + 3 : axis];
    const auto next = [&] { return random_tensor(kDtypes[k++ % std::size(kDtypes)], shape, seed++); };
    const std::string at = "axis " + std::to_string(axis);
    // A `split` input, with a zero-size part.
    CpuCall sized{"Split", {next(), ints({dim - 1, 0, 1})}, {Attribute::make_int("axis", axis)}, "", 13, 3};
    expect_identical(sized, at + " split input");
    // Equal parts (opset 13) and num_outputs with an uneven last part (opset 18).
    CpuCall equal{"Split", {next()}, {Attribute::make_int("axis", axis)}, "", 13, dim % 3 == 0 ? 3 : 2};
    expect_identical(equal, at + " equal");
    CpuCall uneven{"Split", {next()}, {Attribute::make_int("axis", axis), Attribute::make_int("num_outputs", 4)}, "", 18, 4};
    if (dim >= 4) expect_identical(uneven, at + " num_outputs 4");
  }
  CpuCall big{"Split", {random_tensor(DType::Float32, {2, 128, 384}, 1)}, {Attribute::make_int("axis", 2)}, "", 13, 3};
  big.threads = 2;
  expect_identical(big, "large");
  // 70001 short rows (3 of 8 bytes) under one outer dim: blocks of rows split over threads.
  CpuCall rows{"Slice", {random_tensor(DType::UInt8, {70001, 8}, 5), ints({2}), ints({5}), ints({1})}};
  rows.threads = 2;
  expect_identical(rows, "short rows, one outer dim");
  expect_same_error({"Split", {random_tensor(DType::Float32, {4, 6}, 2), ints({2, 3})}, {Attribute::make_int("axis", 1)}, "", 13, 2},
                    "sizes not summing to the dim");
}

// One-row Splits and Transposes moving only size-1 axes return views of their input (a
// decode step's q/k/v parts and head splits). In a session, that input lives in the run's
// arena: the planner must keep it until the last reader of any view, while the steps
// between reuse memory. Each view is read only after several other tensors were placed,
// and the symbolic sequence length makes the same graph copy at 3 tokens, view at 1 (the
// session itself makes the unit-axis Transpose's view: Session::run_view_step).
TEST(CpuDataMovement, OneRowSplitAndUnitTransposeViewsSurviveTheArena) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 17;
  const Dim seq = Dim::symbol("seq");
  g->add_input("x", TensorType(DType::Float32, DimVector{1, seq, 24}));
  g->add_initializer("heads", std::make_shared<Tensor>(ints({1, -1, 2, 4})));
  g->add_node("Neg", {"x"}, {"p"}, {}, "", "neg");  // the arena tensor the views share
  g->add_node("Split", {"p"}, {"q", "k", "v"}, {Attribute::make_int("axis", 2)}, "", "split");
  g->add_node("Reshape", {"q", "heads"}, {"q4"}, {}, "", "q_heads");
  g->add_node("Transpose", {"q4"}, {"qt"}, {Attribute::make_ints("perm", {0, 2, 1, 3})}, "", "q_split");
  // Intermediate tensors of the size of p, placed while q, k, v are alive.
  g->add_node("Neg", {"x"}, {"n1"}, {}, "", "n1");
  g->add_node("Abs", {"n1"}, {"n2"}, {}, "", "n2");
  g->add_node("Abs", {"k"}, {"ks"}, {}, "", "ks");
  g->add_node("Add", {"n2", "x"}, {"n3"}, {}, "", "n3");
  g->add_node("Mul", {"v", "ks"}, {"vk"}, {}, "", "vk");
  g->add_node("Neg", {"qt"}, {"qn"}, {}, "", "qn");
  // A square Transpose keeps its shape yet moves elements: never a view.
  g->add_input("w", TensorType(DType::Float32, DimVector{3, 3}));
  g->add_node("Transpose", {"w"}, {"wt"}, {Attribute::make_ints("perm", {1, 0})}, "", "square");
  g->add_node("Neg", {"wt"}, {"wn"}, {}, "", "wn");
  for (const char* o : {"qn", "vk", "n3", "wn"}) g->mark_output(g->value(o));
  infer_graph(*g);
  for (int64_t s : {1, 3, 1}) {
    const NamedTensors in = {{"x", random_tensor(DType::Float32, {1, s, 24}, static_cast<uint32_t>(40 + s))},
                             {"w", random_tensor(DType::Float32, {3, 3}, 7)}};
    SessionOptions ref_options, opt_options;
    ref_options.kernels = KernelChoice::Reference;
    const NamedTensors want = Session(std::shared_ptr<const Graph>(g), ref_options).run(in);
    Session session(std::shared_ptr<const Graph>(g), opt_options);
    session.run(in);
    const NamedTensors got = session.run(in);  // the second run reuses the first one's arena
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      expect_same_bytes(got[i].second, want[i].second, "seq " + std::to_string(s) + " output " + want[i].first);
  }
}

TEST(CpuDataMovement, GatherNegativeAndRank2Indices) {
  uint32_t seed = 400;
  size_t k = 0;
  const std::vector<Tensor> indices = {
      Tensor::scalar<int64_t>(-1),
      Tensor::from_vector<int64_t>({3}, {0, -7, 6}),
      Tensor::from_vector<int64_t>({2, 3}, {1, -1, 3, 3, -2, 0}),
      Tensor::from_vector<int32_t>({2, 2}, {-3, 2, 0, 6}),
      Tensor::from_vector<int64_t>({0}, {})};
  for (const std::vector<int64_t>& data_shape : {std::vector<int64_t>{7}, {7, 5}, {7, 3, 65}})
    for (const Tensor& idx : indices) {
      const DType dtype = kDtypes[k++ % std::size(kDtypes)];
      // Axis 0 (embedding lookup) and the last axis (which has size 7 only on rank 1).
      expect_identical({"Gather", {random_tensor(dtype, data_shape, seed++), idx}},
                       "data " + shape_to_string(data_shape) + " indices " + idx.describe());
      std::vector<int64_t> moved = data_shape;
      std::rotate(moved.begin(), moved.begin() + 1, moved.end());  // 7 goes last
      expect_identical({"Gather", {random_tensor(dtype, moved, seed++), idx}, {Attribute::make_int("axis", -1)}},
                       "data " + shape_to_string(moved) + " axis -1 indices " + idx.describe());
    }
  std::vector<int64_t> tokens(1200);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int64_t>((i * 7919) % 2000) - 1000;
  CpuCall big{"Gather", {random_tensor(DType::Float32, {1000, 64}, 1), Tensor::from_vector<int64_t>({2, 600}, tokens)}};
  big.threads = 2;
  expect_identical(big, "large embedding lookup");
}

TEST(CpuDataMovement, OutOfRangeIndicesReportTheReferenceError) {
  const Tensor data = random_tensor(DType::Float32, {7, 5}, 1);
  expect_same_error({"Gather", {data, Tensor::from_vector<int64_t>({2}, {1, 7})}}, "index 7");
  expect_same_error({"Gather", {data, Tensor::from_vector<int64_t>({2}, {-8, 0})}}, "index -8");
  expect_same_error({"Gather", {data, Tensor::from_vector<int32_t>({1}, {5})}, {Attribute::make_int("axis", 1)}},
                    "int32 index 5 on axis 1");
  expect_same_error({"Transpose", {data}, {Attribute::make_ints("perm", {0, 0})}}, "bad perm");
}

TEST(CpuDataMovement, SubByteTypesGoToTheReference) {
  Tensor packed(DType::Int4, {3, 4});
  int optimized = -1;
  const std::vector<Tensor> got =
      run_call({"Transpose", {packed}, {Attribute::make_ints("perm", {1, 0})}}, KernelChoice::Optimized, &optimized);
  EXPECT_EQ(optimized, 0);
  EXPECT_EQ(got.at(0).shape(), (std::vector<int64_t>{4, 3}));
  run_call({"Gather", {random_tensor(DType::Float32, {7, 5}, 1), Tensor::from_vector<uint8_t>({1}, {3})}},
           KernelChoice::Optimized, &optimized);
  EXPECT_EQ(optimized, 0);  // uint8 indices: the reference handles them
}

}  // namespace
}  // namespace octet::testing
