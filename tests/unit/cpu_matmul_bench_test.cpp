// Timings of the oneDNN Linear-layer kernel against the reference kernel: printed, never
// asserted (the machine is shared; unit tests must not depend on its load).
#include <gtest/gtest.h>

#include <cstdio>

#include "cpu_matmul_test_util.h"

namespace octet {
namespace {

using testing::mm::Operand;
using testing::mm::best_run;
using testing::mm::rand;

TEST(CpuMatMulBench, LinearLayers) {
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{128, 64, 64}, {128, 64, 256}, {128, 768, 768}}) {
    auto g = testing::mm::one_node("MatMul", {Operand{rand({m, k}, 1)}, Operand{rand({k, n}, 2), true}});
    const NamedTensors in = {{"in0", rand({m, k}, 1)}};
    const double flops = 2.0 * static_cast<double>(m * k * n);
    for (int threads : {1, 2}) {
      const double fast = best_run(testing::mm::session(g, KernelChoice::Optimized, threads), in, 0.2, 50);
      const double ref = best_run(testing::mm::session(g, KernelChoice::Reference, threads), in, 0.2, 50);
      std::printf("[ timing   ] MatMul [%ld,%ld]x[%ld,%ld] %d thread(s): oneDNN %.4f ms (%.1f GFLOP/s), reference "
                  "%.3f ms (%.2f GFLOP/s), %.0fx\n",
                  static_cast<long>(m), static_cast<long>(k), static_cast<long>(k), static_cast<long>(n), threads,
                  fast * 1e3, flops / fast * 1e-9, ref * 1e3, flops / ref * 1e-9, ref / fast);
    }
  }
}

}  // namespace
}  // namespace octet
