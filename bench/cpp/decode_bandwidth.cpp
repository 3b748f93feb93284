// Decode is memory-bound: this measures how close octet's weight-only GEMV comes to the
// machine's memory bandwidth (issue 16, "Quantize for decoding").
//
//   memory_read/threads:T/MiB:S  a STREAM-like read: sum an S MiB float buffer with 256-bit
//                           loads, T threads. S runs 64 MiB to 2 GiB because the last-level
//                           cache differs by host (32 MiB on the EPYC, 480 MiB reported on the
//                           AMX Xeon, shared with other guests): a decode step's weights (int4
//                           ~100 MiB, int8 ~170, fp32 ~540) may partly stay in such a cache, so
//                           bench/decode.py compares each step's rate with a read of the same
//                           size, and the 2 GiB read is the memory's own rate.
//   nbits_gemv/int4|int8/KxN  com.microsoft.MatMulNBits through an octet Session (the
//                           optimized kernel, 2 threads, A [1, K]), on SmolLM2-135M's shapes.
//                           The session holds enough copies of the weights (>= 128 MiB) and
//                           runs them all per iteration, so every weight byte comes from
//                           memory, not cache. Bytes counted: B, scales, A, Y per GEMV.
// Both report bytes_per_second (wall clock) and bytes_per_second_unshared: bytes over the
// process CPU time divided by the threads, the rate had the threads run all the time. On
// the shared 2-core machine (load 8-15 from other work) the wall-clock rate mostly measures
// how much CPU the benchmark got; the unshared rate is the kernel's (for 2 threads it
// assumes they ran at once, which under load they mostly did not: compare 1-thread rates).
// Run with OMP_WAIT_POLICY=passive there (spinning OpenMP threads burn CPU time).
// bench/results/ keeps the numbers with the load.
//
//   build/release/bench_decode_bandwidth --benchmark_out=FILE.json --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <omp.h>

#include <time.h>

#include <memory>
#include <vector>

#include "octet/error.h"
#include "quant/block_quant.h"
#include "runtime/session.h"

namespace {

using namespace octet;

double process_cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void set_cpu_rate(benchmark::State& state, double cpu_seconds, int threads, double bytes) {
  state.counters["bytes_per_second_unshared"] = bytes / (cpu_seconds / threads);
}

__attribute__((target("avx2"))) float sum_avx2(const float* p, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  float out[8];
  _mm256_storeu_ps(out, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

void memory_read(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t n = state.range(1) << 18;  // floats in range(1) MiB
  float* buf = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
#pragma omp parallel for num_threads(threads)
  for (int64_t i = 0; i < n; ++i) buf[i] = 1.0f;  // first touch by the reading threads
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) {
    float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    {
      const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
      const int64_t begin = (n * t / nt) & ~int64_t{31}, end = t + 1 == nt ? n : (n * (t + 1) / nt) & ~int64_t{31};
      total += sum_avx2(buf + begin, end - begin);
    }
    benchmark::DoNotOptimize(total);
  }
  set_cpu_rate(state, process_cpu_seconds() - cpu0, threads, static_cast<double>(state.iterations() * n * 4));
  state.SetBytesProcessed(state.iterations() * n * static_cast<int64_t>(sizeof(float)));
  std::free(buf);
}
BENCHMARK(memory_read)
    ->ArgsProduct({{1, 2}, {64, 128, 256, 512, 2048}})
    ->ArgNames({"threads", "MiB"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

struct GemvSetup {
  std::unique_ptr<Session> session;
  int64_t copies = 0, bytes_per_gemv = 0;
  Tensor a;
};

GemvSetup make_gemv(int bits, int64_t K, int64_t N, int threads) {
  std::vector<float> w(static_cast<size_t>(K * N));
  uint64_t s = 12345;
  for (float& x : w) s = s * 6364136223846793005ull + 1442695040888963407ull, x = static_cast<float>(s >> 40) / (1 << 24) - 0.5f;
  const int64_t block = 32;  // as bench/decode.py's recipes quantize (--block 32, int4 and int8)
  const quant::NbitsTensors t = quant::to_matmul_nbits(quant::quantize_blocks_rtn(w.data(), K, N, bits, block, true));
  GemvSetup g;
  const int64_t weight_bytes = t.b.numel() + t.scales.numel() * 4;
  g.bytes_per_gemv = weight_bytes + K * 4 + N * 4;
  g.copies = std::max<int64_t>(2, ((int64_t{128} << 20) + weight_bytes - 1) / weight_bytes);
  auto graph = std::make_shared<Graph>();
  graph->opset_imports[""] = 21;
  graph->opset_imports["com.microsoft"] = 1;
  graph->add_input("A", TensorType(DType::Float32, DimVector{1, K}));
  for (int64_t c = 0; c < g.copies; ++c) {
    const std::string id = std::to_string(c);
    auto b = std::make_shared<Tensor>(t.b.dtype(), t.b.shape());  // its own memory
    std::copy_n(t.b.raw(), t.b.numel(), b->mutable_raw());
    auto sc = std::make_shared<Tensor>(t.scales.dtype(), t.scales.shape());
    std::copy_n(t.scales.raw(), t.scales.numel() * 4, sc->mutable_raw());
    graph->add_initializer("B" + id, b);
    graph->add_initializer("S" + id, sc);
    graph->add_node("MatMulNBits", {"A", "B" + id, "S" + id}, {"Y" + id},
                    {Attribute::make_int("K", K), Attribute::make_int("N", N), Attribute::make_int("bits", bits),
                     Attribute::make_int("block_size", block)},
                    "com.microsoft", "gemv" + id);
    graph->mark_output(graph->value("Y" + id));
  }
  SessionOptions o;
  o.threads = threads;
  g.session = std::make_unique<Session>(graph, o);
  if (g.session->optimized_nodes() != g.copies) fail("the optimized MatMulNBits kernel declined");
  g.a = Tensor(DType::Float32, {1, K});
  for (int64_t i = 0; i < K; ++i) g.a.mutable_data<float>()[i] = 0.01f * static_cast<float>(i % 97);
  return g;
}

void nbits_gemv(benchmark::State& state) {
  const int bits = static_cast<int>(state.range(0));
  const int64_t K = state.range(1), N = state.range(2);
  GemvSetup g = make_gemv(bits, K, N, static_cast<int>(state.range(3)));
  const NamedTensors feeds = {{"A", g.a}};
  const double cpu0 = process_cpu_seconds();
  for (auto _ : state) benchmark::DoNotOptimize(g.session->run(feeds));
  set_cpu_rate(state, process_cpu_seconds() - cpu0, static_cast<int>(state.range(3)),
               static_cast<double>(state.iterations() * g.copies * g.bytes_per_gemv));
  state.SetBytesProcessed(state.iterations() * g.copies * g.bytes_per_gemv);
  state.counters["gemv_us"] = benchmark::Counter(static_cast<double>(state.iterations() * g.copies),
                                                 benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["copies"] = static_cast<double>(g.copies);
}

void gemv_shapes(benchmark::internal::Benchmark* b) {
  for (int bits : {4, 8})
    for (auto [k, n] : std::vector<std::pair<int, int>>{{576, 576}, {576, 192}, {576, 1536}, {1536, 576}, {576, 49152}})
      for (int threads : {1, 2}) b->Args({bits, k, n, threads});
}
BENCHMARK(nbits_gemv)->Apply(gemv_shapes)->ArgNames({"bits", "K", "N", "threads"})->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
