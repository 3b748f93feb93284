// The float32 decode GEMV (src/kernels/cpu/dnnl_matmul_gemv.cpp) against oneDNN's matmul on
// the same prepacked weights, in one process (issue 16: fp32 decode speed).
//
//   f32_gemv/K/N/M/threads/gemv   an octet Session of `copies` MatMul nodes [M, K] x [K, N]
//     (constant B, each copy its own memory, >= 128 MiB in all, so every weight byte comes
//     from memory, not the 32 MiB L3), SmolLM2-135M's fp32 shapes (q|k|v 576x960, o 576x576,
//     gate|up 576x3072, down 1536x576, LM head 576x49152). gemv:1 runs the GEMV,
//     gemv:0 oneDNN (set_f32_gemv_enabled), M = rows of A.
// Counters: gemv_us = one MatMul, GBps = B's bytes / gemv_us. On the shared 2-core machine,
// interleave (--benchmark_repetitions) and state the load.
//
//   build/release/bench_f32_gemv --benchmark_filter='M:1/' --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/dnnl_matmul.h"
#include "octet/error.h"
#include "runtime/session.h"

namespace {

using namespace octet;

struct Setup {
  std::unique_ptr<Session> session;
  int64_t copies = 0;
  Tensor a;
};

Setup make(int64_t K, int64_t N, int64_t M, int threads) {
  Setup g;
  const int64_t bytes = K * N * 4;
  g.copies = std::max<int64_t>(2, ((int64_t{128} << 20) + bytes - 1) / bytes);
  auto graph = std::make_shared<Graph>();
  graph->opset_imports[""] = 17;
  graph->add_input("A", TensorType(DType::Float32, DimVector{M, K}));
  uint64_t s = 12345;
  for (int64_t c = 0; c < g.copies; ++c) {
    auto b = std::make_shared<Tensor>(DType::Float32, std::vector<int64_t>{K, N});
    float* p = b->mutable_data<float>();
    for (int64_t i = 0; i < K * N; ++i)
      s = s * 6364136223846793005ull + 1442695040888963407ull, p[i] = static_cast<float>(s >> 40) / (1 << 24) - 0.5f;
    const std::string id = std::to_string(c);
    graph->add_initializer("B" + id, b);
    graph->add_node("MatMul", {"A", "B" + id}, {"Y" + id}, {}, "", "mm" + id);
    graph->mark_output(graph->value("Y" + id));
  }
  SessionOptions o;
  o.threads = threads;
  g.session = std::make_unique<Session>(graph, o);
  if (g.session->optimized_nodes() != g.copies) fail("the optimized MatMul kernel declined");
  g.a = Tensor(DType::Float32, {M, K});
  for (int64_t i = 0; i < M * K; ++i) g.a.mutable_data<float>()[i] = 0.01f * static_cast<float>(i % 97);
  return g;
}

void f32_gemv(benchmark::State& state) {
  const int64_t K = state.range(0), N = state.range(1), M = state.range(2);
  Setup g = make(K, N, M, static_cast<int>(state.range(3)));
  dnnl_cpu::set_f32_gemv_enabled(state.range(4) != 0);
  const NamedTensors feeds = {{"A", g.a}};
  g.session->run(feeds);
  for (auto _ : state) benchmark::DoNotOptimize(g.session->run(feeds));
  dnnl_cpu::set_f32_gemv_enabled(true);
  const double gemvs = static_cast<double>(state.iterations() * g.copies);
  state.counters["gemv_us"] = benchmark::Counter(gemvs * 1e-6, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["GBps"] = benchmark::Counter(gemvs * static_cast<double>(K * N * 4) * 1e-9, benchmark::Counter::kIsRate);
}

void shapes(benchmark::internal::Benchmark* b) {
  for (int64_t m : {1, 2, 3, 4})
    for (auto [k, n] : std::vector<std::pair<int, int>>{{576, 960}, {576, 576}, {576, 3072}, {1536, 576}, {576, 49152}})
      for (int threads : {1, 2})
        for (int gemv : {0, 1}) b->Args({k, n, m, threads, gemv});
}
BENCHMARK(f32_gemv)->Apply(shapes)->ArgNames({"K", "N", "M", "threads", "gemv"})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
