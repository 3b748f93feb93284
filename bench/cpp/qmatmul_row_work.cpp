// The row work of octet.QMatMul's per-token path after the int32 sums (issue 20), in the
// three forms the harness models' QMatMuls use (DINOv2-S at batch 1: 257 rows), one row at
// a time as QMatMulState::epilogue_rows calls the quant_ops() kernels:
//   float_y   QKV projection: scale, bias -> float Y [rows, 1152]
//   gelu_row  FFN up-projection: scale, bias, GeLU with the row's range taken on the way,
//             then the row quantized in that range (per-row uint8 Y) [rows, 1536]
//   quantize  a row quantized with its own range (min_max + quantize) [rows, 384]: a
//             dynamic A, or the LayerNorm epilogue's Q
// at the machine's ISA level. Counters: ns per element over the mean time and over the
// fastest iteration (best_ns/elem; on the shared 2-core machine the mean mostly measures
// the other processes).
//
//   build/release/bench_qmatmul_row_work --benchmark_min_time=0.2
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "fastest_iteration.h"
#include "kernels/cpu/quant_ops.h"

namespace {

constexpr int64_t kRows = 257;

// Sums and per-column constants whose float results are roughly N(-0.5, 1.5), as a trained
// FFN's pre-activations.
struct Problem {
  std::vector<int32_t> acc, colsum;
  std::vector<float> col_scale, bias, y;
  std::vector<uint8_t> q;
  explicit Problem(int64_t n) : acc(kRows * n), colsum(n), col_scale(n), bias(n), y(kRows * n), q(kRows * n) {
    std::mt19937 rng(7);
    std::normal_distribution<float> dist(0.0f, 1.5f);
    for (int64_t i = 0; i < n; ++i) {
      colsum[i] = static_cast<int32_t>(rng() % 4001) - 2000;
      col_scale[i] = 1e-3f * (1.0f + static_cast<float>(rng() % 100) / 100.0f);
      bias[i] = -0.5f + 0.01f * static_cast<float>(static_cast<int>(rng() % 21) - 10);
    }
    for (int64_t m = 0; m < kRows; ++m)
      for (int64_t i = 0; i < n; ++i)
        acc[m * n + i] = static_cast<int32_t>(dist(rng) / (0.01f * col_scale[i])) + 128 * colsum[i];
  }
  octet::cpu::EpilogueRow row(int64_t m, int64_t n, int activation) const {
    octet::cpu::EpilogueRow e{acc.data() + m * n, colsum.data(), 128, 0.01f, col_scale.data()};
    e.bias = bias.data();
    e.activation = activation;
    return e;
  }
};

template <class Fn>
void timed(benchmark::State& state, int64_t elems, Fn body) {
  const double best = octet::bench::fastest_iteration(state, body);
  state.counters["ns/elem"] = benchmark::Counter(static_cast<double>(elems) / 1e9,
                                                 benchmark::Counter::kIsIterationInvariantRate |
                                                     benchmark::Counter::kInvert);
  state.counters["best_ns/elem"] = best / static_cast<double>(elems) * 1e9;
}

void float_y(benchmark::State& state) {
  const int64_t n = 1152;
  Problem p(n);
  const octet::cpu::QuantTable& q = octet::cpu::quant_ops();
  timed(state, kRows * n, [&] {
    for (int64_t m = 0; m < kRows; ++m) q.epilogue_row(p.row(m, n, 0), p.y.data() + m * n, n, nullptr, nullptr);
    benchmark::DoNotOptimize(p.y.data());
  });
}

void gelu_row(benchmark::State& state) {
  const int64_t n = 1536;
  Problem p(n);
  const octet::cpu::QuantTable& q = octet::cpu::quant_ops();
  std::vector<float> buffer(n);
  timed(state, kRows * n, [&] {
    for (int64_t m = 0; m < kRows; ++m) {
      float mn = 0, mx = 0;
      q.epilogue_row(p.row(m, n, 1), buffer.data(), n, &mn, &mx);
      benchmark::DoNotOptimize(octet::cpu::quantize_row_in_range(q, buffer.data(), n, mn, mx, p.q.data() + m * n));
    }
  });
}

void quantize(benchmark::State& state) {
  const int64_t n = 384;
  Problem p(n);
  const octet::cpu::QuantTable& q = octet::cpu::quant_ops();
  for (int64_t m = 0; m < kRows; ++m) q.epilogue_row(p.row(m, n, 0), p.y.data() + m * n, n, nullptr, nullptr);
  timed(state, kRows * n, [&] {
    for (int64_t m = 0; m < kRows; ++m)
      benchmark::DoNotOptimize(octet::cpu::quantize_row_dynamic(q, p.y.data() + m * n, n, false, p.q.data() + m * n));
  });
}

BENCHMARK(float_y)->Unit(benchmark::kMicrosecond);
BENCHMARK(gelu_row)->Unit(benchmark::kMicrosecond);
BENCHMARK(quantize)->Unit(benchmark::kMicrosecond);

}  // namespace
BENCHMARK_MAIN();
