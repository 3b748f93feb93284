// Optimized Add/Sub/Mul/Div against the reference: bit-identical on every broadcasting
// pattern (same shape, scalar on either side, trailing-dims bias, masks, general).
#include <gtest/gtest.h>

#include "cpu_test_util.h"

namespace octet::testing {
namespace {

struct ShapePair {
  std::vector<int64_t> a, b;
};

const ShapePair kPairs[] = {
    {{1}, {1}},
    {{}, {}},
    {{17}, {17}},
    {{2, 3, 4099}, {2, 3, 4099}},  // one long row, chunked over threads
    {{5, 7}, {}},                  // scalar right
    {{}, {5, 7}},                  // scalar left
    {{3, 1}, {1}},
    {{1, 128, 64}, {64}},          // [B,S,H] + [H]
    {{2, 9, 33}, {1, 1, 33}},
    {{2, 4, 16, 16}, {2, 1, 1, 16}},  // attention mask [B,1,1,S]
    {{2, 1, 1, 16}, {2, 4, 16, 16}},
    {{2, 4, 16, 16}, {1, 4, 16, 16}},
    {{3, 1, 5}, {1, 4, 1}},         // both broadcast: outer product
    {{4, 1}, {1, 70}},
    {{2, 3, 4, 5}, {3, 1, 1}},      // channel bias
    {{2, 3, 4, 5}, {2, 1, 4, 1}},
    {{0, 3}, {3}},                  // empty
    {{64, 1024}, {1024}},           // big: rows over threads
};

TEST(CpuBinary, EveryBroadcastPatternIsBitIdentical) {
  uint32_t seed = 1;
  for (const char* op : {"Add", "Sub", "Mul", "Div"})
    for (const ShapePair& p : kPairs) {
      CpuCall call{op, {random_f32(p.a, seed++), random_f32(p.b, seed++, 0.5f, 4.0f)}};
      call.threads = 4;
      expect_matches_reference(call, kExact, shape_to_string(p.a) + " " + shape_to_string(p.b));
    }
}

TEST(CpuBinary, SpecialValuesAndDivisionByZero) {
  const Tensor a = Tensor::from_vector<float>({6}, {1.0f, -1.0f, 0.0f, INFINITY, NAN, -0.0f});
  const Tensor b = Tensor::from_vector<float>({6}, {0.0f, -0.0f, 0.0f, INFINITY, 1.0f, 3.0f});
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) {
    expect_matches_reference({op, {a, b}}, kExact);
    expect_matches_reference({op, {a, Tensor::scalar(0.0f)}}, kExact);
  }
}

TEST(CpuBinary, IncompatibleShapesAndIntegersGoToTheReference) {
  int optimized = -1;
  run_call({"Add", {Tensor::from_vector<int64_t>({2}, {1, 2}), Tensor::from_vector<int64_t>({2}, {3, 4})}},
           KernelChoice::Optimized, &optimized);
  EXPECT_EQ(optimized, 0);
  // Shapes that do not broadcast are rejected by inference or the reference kernel: an error.
  EXPECT_THROW(run_call({"Add", {random_f32({3}, 1), random_f32({4}, 2)}}, KernelChoice::Optimized), Error);
}

}  // namespace
}  // namespace octet::testing
