// Optimized ReduceSum / ReduceMean / ReduceMax (float32, contiguous axes) against the reference: bit
// identical (both sum in double in flat order and round once) on first, middle, last and
// multi-axis runs, negative axes, keepdims 0 and 1, empty reduced and kept dims, the
// attribute form (old opsets) and the input form, one and several threads; scattered
// axes and the no-axes forms go to the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "cpu_test_util.h"

namespace octet::testing {
namespace {

Tensor values(std::vector<int64_t> shape, unsigned seed) {
  Tensor t(DType::Float32, shape);
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, 3.0f);
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(gen) * (i % 7 == 0 ? 1000.0f : 1.0f);  // mixed magnitudes
  return t;
}

CpuCall reduce(const std::string& op, Tensor x, std::vector<int64_t> axes, int64_t keepdims, int64_t opset,
               int threads) {
  CpuCall call{op, {std::move(x)}, {Attribute::make_int("keepdims", keepdims)}};
  const bool from_input = op == "ReduceSum" ? opset >= 13 : opset >= 18;
  if (from_input) call.inputs.push_back(Tensor::from_vector<int64_t>({static_cast<int64_t>(axes.size())}, axes));
  else call.attrs.push_back(Attribute::make_ints("axes", axes));
  call.opset = opset;
  call.threads = threads;
  return call;
}

TEST(CpuReduce, ContiguousAxesAreBitIdentical) {
  struct Case {
    std::vector<int64_t> shape, axes;
  };
  const std::vector<Case> cases = {
      {{1, 128, 384}, {1}},     // BERT mean pooling over the sequence
      {{1, 128, 384}, {-1}},    // over channels
      {{2, 3, 5, 7}, {1, 2}},   // a middle run
      {{2, 3, 5, 7}, {0}},      // the first axis
      {{2, 3, 5, 7}, {3, 2}},   // unsorted, ending at the last axis
      {{4, 9000}, {0}},         // one outer index: inner chunks over threads
      {{3, 0, 4}, {1}},         // nothing to reduce: 0, NaN for the mean
      {{0, 5}, {1}},            // no outputs
      {{6}, {0}},               // everything
  };
  for (const std::string op : {"ReduceSum", "ReduceMean", "ReduceMax"})
    for (const Case& c : cases)
      for (int64_t keepdims : {0, 1})
        for (int64_t opset : {11, 18})
          for (int threads : {1, 3}) {
            const CpuCall call = reduce(op, values(c.shape, 5), c.axes, keepdims, opset, threads);
            const std::string what = op + " " + shape_to_string(c.shape) + " keepdims " + std::to_string(keepdims) +
                                     " opset " + std::to_string(opset) + " threads " + std::to_string(threads);
            expect_matches_reference(call, kExact, what);
            int optimized = -1;
            run_call(call, KernelChoice::Optimized, &optimized);
            EXPECT_EQ(optimized, 1) << what;
          }
}

// The max's special values as the reference has them: the first NaN wins, -0 and +0 keep
// whichever came first, -inf and +inf are ordinary, all -inf stays -inf.
TEST(CpuReduce, MaxKeepsTheReferencesRulesForSpecialValues) {
  const float nan = std::nanf(""), inf = INFINITY;
  // Rows of 4 reduced over the last axis, and the same values reduced over the first.
  const std::vector<float> v = {1, nan, 3, 2,       -0.0f, 0.0f, -1, -2,  0.0f, -0.0f, -3, -4,
                                -inf, -inf, -inf, -inf, inf, 5, nan, 7,  -5, -6, -7, -8};
  for (int64_t axis : {1, 0})
    for (int threads : {1, 2}) {
      const CpuCall call = reduce("ReduceMax", Tensor::from_vector<float>({6, 4}, v), {axis}, 1, 18, threads);
      expect_matches_reference(call, kExact, "special values, axis " + std::to_string(axis));
    }
  const std::vector<Tensor> got = run_call(reduce("ReduceMax", Tensor::from_vector<float>({6, 4}, v), {1}, 0, 18, 1),
                                           KernelChoice::Optimized);
  const float* y = got.at(0).data<float>();
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_TRUE(std::signbit(y[1]) && y[1] == 0.0f);   // -0 first
  EXPECT_TRUE(!std::signbit(y[2]) && y[2] == 0.0f);  // +0 first
  EXPECT_EQ(y[3], -inf);
  EXPECT_TRUE(std::isnan(y[4]));
  EXPECT_EQ(y[5], -5.0f);
}

TEST(CpuReduce, OtherFormsRunTheReference) {
  // Scattered axes and no axes at all (every axis) give the reference's results through it.
  for (const std::string op : {"ReduceSum", "ReduceMean", "ReduceMax"}) {
    expect_matches_reference(reduce(op, values({2, 3, 5}, 7), {0, 2}, 1, 18, 1), kExact, op + " scattered");
    CpuCall all{op, {values({2, 3, 5}, 8)}, {Attribute::make_int("keepdims", 0)}};
    expect_matches_reference(all, kExact, op + " all axes");
  }
  CpuCall bad = reduce("ReduceSum", values({2, 3}, 9), {5}, 1, 18, 1);
  EXPECT_THROW(run_call(bad, KernelChoice::Optimized), Error);  // the reference names the bad axis
}

}  // namespace
}  // namespace octet::testing
