// The timing loop the kernel benchmarks share: on the shared machine the fastest iteration is
// the kernel's own time, while the mean Google Benchmark reports carries the load, so each
// benchmark reports both.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>

namespace octet::bench {

// Runs `body` once per benchmark iteration; returns the fastest iteration in seconds.
template <class Body>
double fastest_iteration(benchmark::State& state, Body body) {
  double best = 1e30;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

}  // namespace octet::bench
