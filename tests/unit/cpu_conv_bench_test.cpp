// Timings of the oneDNN Conv kernel against the reference Conv: printed, never asserted
// (the machine is shared; unit tests must not depend on its load).
#include <gtest/gtest.h>

#include <cstdio>

#include "cpu_matmul_test_util.h"

namespace octet {
namespace {

using testing::mm::Operand;
using testing::mm::best_run;
using testing::mm::rand;

TEST(CpuConvBench, VitPatchEmbedding) {
  // vit_tiny's patch embedding: 16x16 patches, stride 16, 64 filters.
  auto g = testing::mm::one_node("Conv",
                                 {Operand{rand({1, 3, 224, 224}, 1)}, Operand{rand({64, 3, 16, 16}, 2), true},
                                  Operand{rand({64}, 3), true}},
                                 {Attribute::make_ints("strides", {16, 16})});
  const NamedTensors in = {{"in0", rand({1, 3, 224, 224}, 1)}};
  const double flops = 2.0 * 64 * 14 * 14 * 3 * 16 * 16;
  for (int threads : {1, 2}) {
    const double fast = best_run(testing::mm::session(g, KernelChoice::Optimized, threads), in, 0.2, 100);
    const double ref = best_run(testing::mm::session(g, KernelChoice::Reference, threads), in, 0.2, 100);
    std::printf("[ timing   ] Conv [1,3,224,224]*[64,3,16,16]/16 %d thread(s): oneDNN %.4f ms (%.1f GFLOP/s), "
                "reference %.3f ms, %.0fx\n",
                threads, fast * 1e3, flops / fast * 1e-9, ref * 1e3, ref / fast);
  }
}

}  // namespace
}  // namespace octet
