// The float32 decode GEMV (src/kernels/cpu/dnnl_matmul_gemv.cpp) and panel GEMM against
// oneDNN's matmul on the same prepacked weights, in one process (issue 16: fp32 decode speed).
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
//
//   f32_panel_gemm/K/N/M/threads/panel   the encoders' rows (issue 20: fp32 speed against
//     OpenVINO): a chain of products alternating [K, N] and [N, K] weights (make_chain),
//     DINOv2-S's shapes at 257 rows (q|k|v 384x1152 and back, out 384x384, the FFN pair
//     384x1536 / 1536x384) and MiniLM-L6's FFN at 128; panel:1 runs octet's panel GEMM
//     (dnnl_matmul_panel_gemm.cpp), panel:0 oneDNN (set_f32_panel_gemm_enabled) on the same
//     prepacked B. Counters from the fastest chain run: gemm_us = one product, GMACps.
//   build/release/bench_f32_gemv --benchmark_filter=f32_panel_gemm --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "fastest_iteration.h"
#include "kernels/cpu/dnnl_matmul.h"
#include "octet/error.h"
#include "ops/infer.h"
#include "runtime/session.h"

namespace {

using namespace octet;

struct Setup {
  std::unique_ptr<Session> session;
  int64_t copies = 0;
  Tensor a;
};

// [rows, cols] of scale * uniform(-0.5, 0.5) from the LCG state `s`.
std::shared_ptr<Tensor> random_weights(int64_t rows, int64_t cols, float scale, uint64_t& s) {
  auto b = std::make_shared<Tensor>(DType::Float32, std::vector<int64_t>{rows, cols});
  float* p = b->mutable_data<float>();
  for (int64_t i = 0; i < rows * cols; ++i)
    s = s * 6364136223846793005ull + 1442695040888963407ull,
    p[i] = scale * (static_cast<float>(s >> 40) / (1 << 24) - 0.5f);
  return b;
}

// The session over `graph` (every node on the optimized MatMul kernel) and an A of [M, K].
void start(Setup& g, const std::shared_ptr<Graph>& graph, int64_t M, int64_t K, int threads) {
  SessionOptions o;
  o.threads = threads;
  g.session = std::make_unique<Session>(graph, o);
  if (g.session->optimized_nodes() != g.copies) fail("the optimized MatMul kernel declined a node");
  g.a = Tensor(DType::Float32, {M, K});
  for (int64_t i = 0; i < M * K; ++i) g.a.mutable_data<float>()[i] = 0.01f * static_cast<float>(i % 97);
}

Setup make(int64_t K, int64_t N, int64_t M, int threads) {
  Setup g;
  const int64_t bytes = K * N * 4;
  g.copies = std::max<int64_t>(2, ((int64_t{128} << 20) + bytes - 1) / bytes);
  auto graph = std::make_shared<Graph>();
  graph->opset_imports[""] = 17;
  graph->add_input("A", TensorType(DType::Float32, DimVector{M, K}));
  uint64_t s = 12345;
  for (int64_t c = 0; c < g.copies; ++c) {
    const std::string id = std::to_string(c);
    graph->add_initializer("B" + id, random_weights(K, N, 1.0f, s));
    graph->add_node("MatMul", {"A", "B" + id}, {"Y" + id}, {}, "", "mm" + id);
    graph->mark_output(graph->value("Y" + id));
  }
  start(g, graph, M, K, threads);
  return g;
}

// Runs g's session (input `input` = g.a) once untimed, then once per benchmark iteration,
// with octet's kernel switched on or off by the benchmark's 5th argument; switches it back
// on. Returns the fastest iteration in seconds.
double time_session(benchmark::State& state, const Setup& g, const char* input, void (*set_enabled)(bool)) {
  set_enabled(state.range(4) != 0);
  const NamedTensors feeds = {{input, g.a}};
  g.session->run(feeds);
  const double best = bench::fastest_iteration(state, [&] { benchmark::DoNotOptimize(g.session->run(feeds)); });
  set_enabled(true);
  return best;
}

void f32_gemv(benchmark::State& state) {
  const int64_t K = state.range(0), N = state.range(1), M = state.range(2);
  const Setup g = make(K, N, M, static_cast<int>(state.range(3)));
  time_session(state, g, "A", dnnl_cpu::set_f32_gemv_enabled);
  const double gemvs = static_cast<double>(state.iterations() * g.copies);
  state.counters["gemv_us"] = benchmark::Counter(gemvs * 1e-6, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["GBps"] = benchmark::Counter(gemvs * static_cast<double>(K * N * 4) * 1e-9, benchmark::Counter::kIsRate);
}

// A chain of MatMuls [M, K] x [K, N] x [N, K] x [K, N] ..., each B its own memory (>= 128
// MiB in all): as in a transformer, each product reads the previous one's output and cold
// weights, and only the last output is kept.
Setup make_chain(int64_t K, int64_t N, int64_t M, int threads) {
  Setup g;
  const int64_t pair_bytes = 2 * K * N * 4;
  g.copies = 2 * std::max<int64_t>(2, ((int64_t{128} << 20) + pair_bytes - 1) / pair_bytes);
  auto graph = std::make_shared<Graph>();
  graph->opset_imports[""] = 17;
  graph->add_input("X0", TensorType(DType::Float32, DimVector{M, K}));
  uint64_t s = 12345;
  for (int64_t c = 0; c < g.copies; ++c) {
    const int64_t rows = c % 2 == 0 ? K : N, cols = c % 2 == 0 ? N : K;
    // Variance 1 / rows, so the chain's values neither grow nor vanish into denormals
    // (which would time the FPU's microcode assists, not the GEMM).
    const std::string id = std::to_string(c), next = std::to_string(c + 1);
    graph->add_initializer("B" + id, random_weights(rows, cols, std::sqrt(12.0f / static_cast<float>(rows)), s));
    graph->add_node("MatMul", {"X" + id, "B" + id}, {"X" + next}, {}, "", "mm" + id);
  }
  graph->mark_output(graph->value("X" + std::to_string(g.copies)));
  infer_graph(*graph);  // the intermediate products' types, which the kernels check
  start(g, graph, M, K, threads);
  return g;
}

void f32_panel_gemm(benchmark::State& state) {
  const int64_t K = state.range(0), N = state.range(1), M = state.range(2);
  const Setup g = make_chain(K, N, M, static_cast<int>(state.range(3)));
  const double best = time_session(state, g, "X0", dnnl_cpu::set_f32_panel_gemm_enabled);
  const double macs = static_cast<double>(g.copies * M * K * N);
  state.counters["gemm_us"] = best / static_cast<double>(g.copies) * 1e6;
  state.counters["GMACps"] = macs / best * 1e-9;
}

void panel_shapes(benchmark::internal::Benchmark* b) {
  const std::vector<std::tuple<int, int, int>> mkn = {{257, 384, 1152}, {257, 384, 384}, {257, 384, 1536}, {128, 384, 1536}};
  for (auto [m, k, n] : mkn)
    for (int threads : {1, 2})
      for (int panel : {0, 1}) b->Args({k, n, m, threads, panel});
}
BENCHMARK(f32_panel_gemm)->Apply(panel_shapes)->ArgNames({"K", "N", "M", "threads", "panel"})->UseRealTime()->Unit(benchmark::kMillisecond);

void shapes(benchmark::internal::Benchmark* b) {
  for (int64_t m : {1, 2, 3, 4})
    for (auto [k, n] : std::vector<std::pair<int, int>>{{576, 960}, {576, 576}, {576, 3072}, {1536, 576}, {576, 49152}})
      for (int threads : {1, 2})
        for (int gemv : {0, 1}) b->Args({k, n, m, threads, gemv});
}
BENCHMARK(f32_gemv)->Apply(shapes)->ArgNames({"K", "N", "M", "threads", "gemv"})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
