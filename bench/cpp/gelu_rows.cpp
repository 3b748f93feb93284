// The GeLU(erf) row kernels of octet.QMatMul's per-token epilogue (issue 20): the reference
// vector GeLU (gelu_erf: erf rational + erfc, two divisions) against the piecewise
// polynomial (gelu_erf_fast: 32 segments, one permute per coefficient; an A&S 7.1.26 erfc
// with one division and one exp until session 16) the epilogue uses, over the FFN up-projection
// outputs of the harness models at batch 1 (rows x 1536: MiniLM-L6 128 tokens, DINOv2-S
// 257), one row at a time as epilogue_rows calls it, at the machine's ISA level.
// Counters: ns per element over the mean time and over the fastest iteration (best_ns/elem;
// on the shared 2-core machine the mean mostly measures the other processes).
//
//   build/release/bench_gelu_rows --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "fastest_iteration.h"
#include "kernels/cpu/vec_ops.h"

namespace {

void gelu_rows(benchmark::State& state, octet::cpu::UnaryOp op) {
  const int64_t rows = state.range(0), cols = state.range(1);
  // Pre-activations of a trained FFN are roughly normal with a few wide ones.
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(-0.5f, 1.5f);
  std::vector<float> x(static_cast<size_t>(rows * cols)), y(x.size());
  for (float& v : x) v = dist(rng);
  const double best = octet::bench::fastest_iteration(state, [&] {
    for (int64_t r = 0; r < rows; ++r) octet::cpu::unary(op, x.data() + r * cols, y.data() + r * cols, cols);
    benchmark::DoNotOptimize(y.data());
  });
  const double elems = static_cast<double>(rows * cols);
  state.counters["ns/elem"] =
      benchmark::Counter(elems / 1e9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["best_ns/elem"] = best / elems * 1e9;
}

void reference(benchmark::State& s) { gelu_rows(s, octet::cpu::UnaryOp::GeluErf); }
void fast(benchmark::State& s) { gelu_rows(s, octet::cpu::UnaryOp::GeluErfFast); }

BENCHMARK(reference)->Args({128, 1536})->Args({257, 1536})->Unit(benchmark::kMicrosecond);
BENCHMARK(fast)->Args({128, 1536})->Args({257, 1536})->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
