// Optimized Softmax, LayerNormalization and RMSNormalization against their reference
// twins, on edge shapes, at every ISA level (tests/unit/cpu_test_util.h).
//
// Bounds: Softmax rel 1e-6 (+1e-12 absolute for underflowing entries); the norms compute
// their statistics in float32 where the reference uses double, so outputs (O(1) after
// normalization) are held to 1e-6 relative with a 1e-6 absolute floor, 2e-6 for rows of 4099.
#include <gtest/gtest.h>

#include "cpu_test_util.h"

namespace octet::testing {
namespace {

const std::vector<int64_t> kRowLengths = {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 70};

TEST(CpuSoftmax, LastAxisRaggedRows) {
  double worst = 0;
  for (int64_t n : kRowLengths)
    worst = std::max(worst, expect_matches_reference({"Softmax", {random_f32({3, n}, static_cast<uint32_t>(n), -8, 8)}},
                                                     {1e-6, 1e-12}, "n=" + std::to_string(n)));
  worst = std::max(worst, expect_matches_reference({"Softmax", {random_f32({2, 4099}, 1, -20, 20)}}, {1e-6, 1e-12}));
  worst = std::max(worst, expect_matches_reference({"Softmax", {random_f32({1}, 2)}}, {1e-6, 1e-12}));
  std::printf("[ accuracy ] Softmax last axis: max relative error %.3g\n", worst);
}

TEST(CpuSoftmax, EveryAxisAndOpsetCoercion) {
  const Tensor x = random_f32({2, 5, 3, 17}, 3, -6, 6);
  for (int64_t axis : {0, 1, 2, 3, -1, -2, -3, -4})
    expect_matches_reference({"Softmax", {x}, {Attribute::make_int("axis", axis)}}, {1e-6, 1e-12},
                             "axis " + std::to_string(axis));
  // Opset 11: rows of everything from axis on.
  for (int64_t axis : {0, 1, 2, -1})
    expect_matches_reference({"Softmax", {x}, {Attribute::make_int("axis", axis)}, "", 11}, {1e-6, 1e-12},
                             "opset 11 axis " + std::to_string(axis));
  // Inner axis with an inner size that is not a multiple of the column block.
  expect_matches_reference({"Softmax", {random_f32({3, 40, 37}, 4)}, {Attribute::make_int("axis", 1)}}, {1e-6, 1e-12});
}

TEST(CpuSoftmax, MaskedEntriesAndBigInputsThreaded) {
  Tensor x = random_f32({4, 64, 128}, 5, -10, 10);
  float* p = x.mutable_data<float>();
  for (int64_t i = 0; i < x.numel(); i += 7) p[i] = -INFINITY;  // masked keys
  p[3] = -1e30f;
  CpuCall call{"Softmax", {x}};
  call.threads = 4;
  expect_matches_reference(call, {1e-6, 1e-12});
}

Tensor bias_like(const std::vector<int64_t>& shape, uint32_t seed) { return random_f32(shape, seed, -1, 1); }

TEST(CpuLayerNorm, RaggedRowsAxesAndBias) {
  double worst = 0;
  for (int64_t n : kRowLengths) {
    const Tensor x = random_f32({4, n}, static_cast<uint32_t>(n), -3, 5);
    worst = std::max(worst, expect_matches_reference({"LayerNormalization", {x, bias_like({n}, 1), bias_like({n}, 2)}},
                                                     {1e-6, 1e-6}, "n=" + std::to_string(n)));
    worst = std::max(worst, expect_matches_reference({"LayerNormalization", {x, bias_like({n}, 1)}}, {1e-6, 1e-6},
                                                     "no bias n=" + std::to_string(n)));
  }
  const Tensor big = random_f32({3, 4099}, 7, -2, 6);
  worst = std::max(worst, expect_matches_reference({"LayerNormalization", {big, bias_like({4099}, 1), bias_like({4099}, 2)},
                                                    {Attribute::make_float("epsilon", 1e-3f)}},
                                                   {2e-6, 2e-6}));
  // Normalizing over the last two axes, with Scale/B of rank 2 and of rank 3 ([1, 5, 16]).
  const Tensor x3 = random_f32({2, 5, 16}, 8);
  for (int64_t axis : {1, -2})
    worst = std::max(worst, expect_matches_reference({"LayerNormalization", {x3, bias_like({5, 16}, 3), bias_like({1, 5, 16}, 4)},
                                                      {Attribute::make_int("axis", axis)}},
                                                     {1e-6, 1e-6}));
  // axis 0: a single row of everything.
  worst = std::max(worst, expect_matches_reference({"LayerNormalization", {x3, bias_like({2, 5, 16}, 3)}, {Attribute::make_int("axis", 0)}},
                                                   {1e-6, 1e-6}));
  std::printf("[ accuracy ] LayerNormalization: max error %.3g (relative, floor 1)\n", worst);
}

TEST(CpuLayerNorm, DeclinesStatisticsOutputsAndFallsBackOnBroadcastScale) {
  const Tensor x = random_f32({3, 8}, 9);
  int optimized = -1;
  CpuCall stats{"LayerNormalization", {x, bias_like({8}, 1)}};
  stats.num_outputs = 3;
  run_call(stats, KernelChoice::Optimized, &optimized);
  EXPECT_EQ(optimized, 0);
  // Scale [1] broadcasts along the row: not a per-column row, so the reference runs it.
  const std::vector<Tensor> want = run_call({"LayerNormalization", {x, bias_like({1}, 1)}}, KernelChoice::Reference);
  const std::vector<Tensor> got = run_call({"LayerNormalization", {x, bias_like({1}, 1)}}, KernelChoice::Optimized);
  expect_close(got[0], want[0], kExact, "broadcast scale fallback");
  // float64 input: declined at session creation.
  Tensor xd(DType::Float64, {2, 4});
  Tensor sd(DType::Float64, {4});
  run_call({"LayerNormalization", {xd, sd}}, KernelChoice::Optimized, &optimized);
  EXPECT_EQ(optimized, 0);
}

TEST(CpuRmsNorm, OnnxAndOctetDomains) {
  double worst = 0;
  for (int64_t n : kRowLengths) {
    const Tensor x = random_f32({3, n}, static_cast<uint32_t>(n) + 100);
    worst = std::max(worst, expect_matches_reference({"RMSNormalization", {x, bias_like({n}, 5)}}, {1e-6, 1e-6},
                                                     "n=" + std::to_string(n)));
    worst = std::max(worst, expect_matches_reference({"RMSNormalization", {x, bias_like({n}, 5)}, {}, "octet"},
                                                     {1e-6, 1e-6}, "octet n=" + std::to_string(n)));
  }
  worst = std::max(worst, expect_matches_reference({"RMSNormalization", {random_f32({2, 4099}, 3), bias_like({4099}, 6)},
                                                    {Attribute::make_float("epsilon", 1e-6f)}},
                                                   {2e-6, 2e-6}));
  const Tensor x3 = random_f32({2, 3, 24}, 10);
  worst = std::max(worst, expect_matches_reference({"RMSNormalization", {x3, bias_like({3, 24}, 7)}, {Attribute::make_int("axis", -2)}},
                                                   {1e-6, 1e-6}));
  std::printf("[ accuracy ] RMSNormalization: max error %.3g (relative, floor 1)\n", worst);
}

}  // namespace
}  // namespace octet::testing
