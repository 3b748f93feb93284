// The machine's int8 and fp32 compute peaks, the yardstick of bench/profile_breakdown.py
// (issue 20: per-layer time against its MACs).
//
//   fma_peak/{vnni,fp32}/threads:T  a register-only loop of independent AVX-512
//       vpdpbusd (64 u8 x s8 MACs each) or vfmadd231ps (16 fp32 MACs each) on T OpenMP
//       threads: the instruction-throughput ceiling, no memory traffic.
//   dnnl_matmul/{u8s8,f32}/MxKxN/threads:T  oneDNN's matmul (the primitive octet's
//       GEMMs use) on a transformer's shapes, B as a constant in oneDNN's preferred
//       layout, A and C plain: what a well-tuned GEMM reaches at that size.
// Both report macs_per_second (counter "GMAC/s" = that / 1e9). On the shared 2-core
// machine the wall clock includes other processes' time: state the load with the numbers.
//
//   build/release/bench_gemm_peak --benchmark_out=FILE.json --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <immintrin.h>
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <vector>

namespace {

constexpr int kChains = 12;   // independent accumulators: hides the 4-5 cycle latency
constexpr int kSteps = 4096;  // per chain and call

__attribute__((target("avx512f,avx512bw,avx512vnni"))) int64_t vnni_loop(int steps) {
  __m512i acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_epi32(c);
  const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
  for (int s = 0; s < steps; ++s)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], a, b);
  __m512i sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_epi32(sum, acc[c]);
  return _mm512_reduce_add_epi32(sum);  // keeps the loop alive
}

__attribute__((target("avx512f"))) float fp32_loop(int steps) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-7f);
  for (int s = 0; s < steps; ++s)
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c) sum = _mm512_add_ps(sum, acc[c]);
  return _mm512_reduce_add_ps(sum);
}

void fma_peak(benchmark::State& state, bool vnni) {
  const int threads = static_cast<int>(state.range(0));
  double sink = 0;
  for (auto _ : state) {
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += vnni ? static_cast<double>(vnni_loop(kSteps)) : fp32_loop(kSteps);
  }
  benchmark::DoNotOptimize(sink);
  const double macs_per_call = static_cast<double>(threads) * kSteps * kChains * (vnni ? 64.0 : 16.0);
  state.counters["GMAC/s"] =
      benchmark::Counter(macs_per_call / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void dnnl_matmul(benchmark::State& state, bool int8) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  omp_set_num_threads(threads);
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const dt a_t = int8 ? dt::u8 : dt::f32, b_t = int8 ? dt::s8 : dt::f32;
  dnnl::memory::desc a_md({m, k}, a_t, tag::ab), c_md({m, n}, dt::f32, tag::ab);
  dnnl::memory::desc b_any({k, n}, b_t, tag::any), b_plain({k, n}, b_t, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_any, c_md), eng);  // oneDNN 2.x API
  std::vector<uint8_t> a_buf(static_cast<size_t>(m * k) * (int8 ? 1 : 4), 1);
  std::vector<uint8_t> b_buf(static_cast<size_t>(k * n) * (int8 ? 1 : 4), 1);
  std::vector<float> c_buf(static_cast<size_t>(m * n));
  dnnl::memory a_mem(a_md, eng, a_buf.data()), c_mem(c_md, eng, c_buf.data());
  dnnl::memory b_src(b_plain, eng, b_buf.data()), b_mem(pd.weights_desc(), eng);
  dnnl::reorder(b_src, b_mem).execute(strm, b_src, b_mem);
  dnnl::matmul prim(pd);
  for (auto _ : state) {
    prim.execute(strm, {{DNNL_ARG_SRC, a_mem}, {DNNL_ARG_WEIGHTS, b_mem}, {DNNL_ARG_DST, c_mem}});
    strm.wait();
  }
  state.counters["GMAC/s"] = benchmark::Counter(static_cast<double>(m * k * n) / 1e9,
                                                benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(pd.impl_info_str());
}

// MiniLM-L6 / DINOv2-S shapes: hidden 384, FFN 1536; 128 tokens (MiniLM) and 257 (ViT-S/14).
void shapes(benchmark::internal::Benchmark* b) {
  for (int t : {1, 2}) {
    b->Args({128, 384, 384, t})->Args({128, 384, 1536, t})->Args({128, 1536, 384, t});
    b->Args({257, 384, 1536, t})->Args({1024, 1024, 1024, t});
  }
}

BENCHMARK_CAPTURE(fma_peak, vnni, true)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_CAPTURE(fma_peak, fp32, false)->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK_CAPTURE(dnnl_matmul, u8s8, true)->Apply(shapes)->UseRealTime();
BENCHMARK_CAPTURE(dnnl_matmul, f32, false)->Apply(shapes)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
