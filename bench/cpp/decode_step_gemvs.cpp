// One decode step's weight-only GEMVs, as SmolLM2-135M runs them (issue 16, decode bandwidth):
// why do 2 threads not read the weights faster than 1?
//
//   decode_step_gemvs/bits:B/threads:T/gap_us:G
//     30 layers, each one octet Session of 4 com.microsoft.MatMulNBits nodes with the fused
//     shapes octet's decode graph has (q|k|v 576x960, o 576x576, gate|up 576x3072, down
//     1536x576), then the LM head (576x49152) in its own Session: 31 Session::run calls per
//     step, every layer's weights its own memory, 151 MB int8 / 84 MB int4 per step (B and scales), far
//     beyond the 32 MiB L3, so every step reads the weights from memory (cold).
//     Between layers the caller busy-waits G microseconds: the step's other ops (attention,
//     norms, rotary: ~20-40 us per layer in bench-decode's profile), during which a helper
//     thread of work_sharing.h may fall asleep. G = 0 is the GEMVs back to back.
// Counters: gemv_ms = the step's time in Session::run (wall clock, gaps excluded), gemv_GBps =
// weight bytes (B and scales) / gemv_ms, the rate bench/decode.py reports for MatMulNBits.
// OCTET_SHARE_MIN_BYTES (matmul_nbits.cpp) decides which GEMVs are shared, OCTET_SHARE_SPIN_US
// how long an idle helper polls (work_sharing.cpp). On the shared 2-core machine run it under
// `chrt -r 1` (real-time round robin: the benchmark's threads run before the other work) and
// state the load; bench/results/2026-11-26_decode-bandwidth_session14_epyc-2core.md.
//
//   chrt -r 1 build/release/bench_decode_step_gemvs --benchmark_min_time=0.3
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <chrono>
#include <memory>
#include <vector>

#include "octet/error.h"
#include "quant/block_quant.h"
#include "runtime/session.h"

namespace {

using namespace octet;

struct Shape {
  const char* name;
  int64_t K, N;
};
constexpr Shape kLayer[] = {{"qkv", 576, 960}, {"o", 576, 576}, {"gate_up", 576, 3072}, {"down", 1536, 576}};
constexpr Shape kHead = {"lm_head", 576, 49152};
constexpr int kLayers = 30;

quant::NbitsTensors random_weights(int bits, int64_t K, int64_t N, uint64_t seed) {
  std::vector<float> w(static_cast<size_t>(K * N));
  for (float& x : w) seed = seed * 6364136223846793005ull + 1442695040888963407ull, x = static_cast<float>(seed >> 40) / (1 << 24) - 0.5f;
  return quant::to_matmul_nbits(quant::quantize_blocks_rtn(w.data(), K, N, bits, 32, true));
}

// A Session of `shapes`, each node reading input A<K> and writing its own output; the
// weights copied into memory of their own.
std::unique_ptr<Session> make_session(const std::vector<Shape>& shapes, const std::vector<quant::NbitsTensors>& w,
                                      int bits, int threads, int64_t& weight_bytes) {
  auto graph = std::make_shared<Graph>();
  graph->opset_imports[""] = 21;
  graph->opset_imports["com.microsoft"] = 1;
  graph->add_input("A576", TensorType(DType::Float32, DimVector{1, 576}));
  graph->add_input("A1536", TensorType(DType::Float32, DimVector{1, 1536}));
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& s = shapes[i];
    const std::string id = s.name;
    auto b = std::make_shared<Tensor>(w[i].b.dtype(), w[i].b.shape());
    std::copy_n(w[i].b.raw(), w[i].b.numel(), b->mutable_raw());
    auto sc = std::make_shared<Tensor>(w[i].scales.dtype(), w[i].scales.shape());
    std::copy_n(w[i].scales.raw(), w[i].scales.numel() * 4, sc->mutable_raw());
    weight_bytes += b->numel() + sc->numel() * 4;
    graph->add_initializer("B" + id, b);
    graph->add_initializer("S" + id, sc);
    graph->add_node("MatMulNBits", {"A" + std::to_string(s.K), "B" + id, "S" + id}, {"Y" + id},
                    {Attribute::make_int("K", s.K), Attribute::make_int("N", s.N), Attribute::make_int("bits", bits),
                     Attribute::make_int("block_size", 32)},
                    "com.microsoft", id);
    graph->mark_output(graph->value("Y" + id));
  }
  SessionOptions o;
  o.threads = threads;
  auto session = std::make_unique<Session>(graph, o);
  if (session->optimized_nodes() != static_cast<int64_t>(shapes.size())) fail("the optimized MatMulNBits kernel declined");
  return session;
}

void spin_for(int64_t us) {
  if (us <= 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) _mm_pause();
}

void decode_step_gemvs(benchmark::State& state) {
  const int bits = static_cast<int>(state.range(0)), threads = static_cast<int>(state.range(1));
  const int64_t gap_us = state.range(2);
  std::vector<Shape> layer(std::begin(kLayer), std::end(kLayer));
  std::vector<quant::NbitsTensors> w;
  for (size_t i = 0; i < layer.size(); ++i) w.push_back(random_weights(bits, layer[i].K, layer[i].N, 17 + i));
  const std::vector<quant::NbitsTensors> head = {random_weights(bits, kHead.K, kHead.N, 99)};
  int64_t bytes = 0;
  std::vector<std::unique_ptr<Session>> sessions;
  for (int l = 0; l < kLayers; ++l) sessions.push_back(make_session(layer, w, bits, threads, bytes));
  sessions.push_back(make_session({kHead}, head, bits, threads, bytes));
  NamedTensors feeds;
  for (int64_t K : {576, 1536}) {
    Tensor a(DType::Float32, {1, K});
    for (int64_t i = 0; i < K; ++i) a.mutable_data<float>()[i] = 0.01f * static_cast<float>(i % 97) - 0.4f;
    feeds.emplace_back("A" + std::to_string(K), a);
  }
  for (auto& s : sessions) s->run(feeds);  // warm up: scratch, helper threads
  using Clock = std::chrono::steady_clock;
  Clock::duration gemv_time{};  // the Session::run calls only, not the gaps
  for (auto _ : state) {
    for (int l = 0; l < kLayers; ++l) {
      const auto t0 = Clock::now();
      benchmark::DoNotOptimize(sessions[l]->run(feeds));
      gemv_time += Clock::now() - t0;
      spin_for(gap_us);
    }
    const auto t0 = Clock::now();
    benchmark::DoNotOptimize(sessions.back()->run(feeds));
    gemv_time += Clock::now() - t0;
  }
  const double gemv_s = std::chrono::duration<double>(gemv_time).count();
  state.counters["weight_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["gemv_ms"] = 1e3 * gemv_s / static_cast<double>(state.iterations());
  state.counters["gemv_GBps"] = static_cast<double>(bytes) * static_cast<double>(state.iterations()) / gemv_s / 1e9;
  state.counters["gap_ms"] = static_cast<double>(kLayers * gap_us) / 1e3;
}
BENCHMARK(decode_step_gemvs)
    ->ArgNames({"bits", "threads", "gap_us"})
    ->ArgsProduct({{8, 4}, {1, 2}, {0, 30}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
