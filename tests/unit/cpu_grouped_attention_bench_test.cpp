// Timings of octet.GroupedAttention on SmolLM2-135M's decode step (9 query heads over 3
// key/value heads, head size 64, one new token, a [1, 1, 1, T] mask), printed for the record,
// never asserted. 30 layers of their own K/V, as a decode step has: "warm" runs the 30 back to
// back (the caches stay in L2/L3), "cold" first reads 64 MiB of other memory (a decode step's
// weight stream evicts them), so the keys and values come from DRAM.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <vector>

#include "cpu_test_util.h"
#include "kernels/kernel.h"

namespace octet::testing {
namespace {

constexpr int kLayers = 30;

// Mean microseconds per call over the layers, fastest of `rounds` rounds.
double layer_us(const Graph& g, const std::vector<std::vector<const Tensor*>>& inputs, KernelFn fn, int threads,
                bool cold, int rounds) {
  std::vector<float> other(cold ? (64u << 20) / sizeof(float) : 0, 1.0f);
  double best = 1e30;
  volatile float sink = 0;
  for (int r = 0; r < rounds; ++r) {
    if (cold) {
      float acc = 0;
      for (size_t i = 0; i < other.size(); i += 16) acc += other[i];
      sink = sink + acc;
    }
    const auto start = std::chrono::steady_clock::now();
    for (int l = 0; l < kLayers; ++l) {
      KernelContext ctx(*g.nodes().at(0), inputs[l]);
      ctx.set_threads(threads);
      fn(ctx);
    }
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  return best / kLayers;
}

TEST(GroupedAttentionBench, PrintSmolLM2DecodeStepTimings) {
  for (int64_t t : {129, 192, 256}) {
    CpuCall call{"GroupedAttention",
                 {random_f32({1, 9, 1, 64}, 1), random_f32({1, 3, t, 64}, 2), random_f32({1, 3, t, 64}, 3),
                  Tensor(DType::Float32, {1, 1, 1, t})},
                 {Attribute::make_float("scale", 0.125f)},
                 "octet"};
    auto g = one_node_graph(call);
    std::vector<Tensor> owned;
    owned.reserve(kLayers * 4);
    std::vector<std::vector<const Tensor*>> inputs(kLayers);
    for (int l = 0; l < kLayers; ++l) {
      owned.push_back(random_f32({1, 9, 1, 64}, 10 * l + 1));
      owned.push_back(random_f32({1, 3, t, 64}, 10 * l + 2));
      owned.push_back(random_f32({1, 3, t, 64}, 10 * l + 3));
      owned.push_back(Tensor(DType::Float32, {1, 1, 1, t}));
      inputs[l] = {&owned[4 * l], &owned[4 * l + 1], &owned[4 * l + 2], &owned[4 * l + 3]};
    }
    const KernelFn opt = KernelRegistry::optimized().find("octet", "GroupedAttention");
    std::printf("[ timing   ] SmolLM2 decode attention, T %lld, us per layer:", static_cast<long long>(t));
    for (bool cold : {false, true})
      for (int threads : {1, 2})
        std::printf(" | %s %d thread(s) %.2f", cold ? "cold" : "warm", threads,
                    layer_us(*g, inputs, opt, threads, cold, cold ? 20 : 200));
    std::printf("\n");
  }
}

}  // namespace
}  // namespace octet::testing
