// oneDNN's bare u8 x s8 -> s32 product at octet.QMatMul's shapes (issue 20): is the
// per-token path's GEMM (QMatMul's row blocks, dnnl_qmatmul.cpp run_row_blocks) limited
// by oneDNN's kernel, by the row-block size, or by neither?
//
//   whole/M/K/N/T       one primitive over all M rows, made for and run on T threads
//   blocks/M/K/N/T/R    QMatMul's scheme: one OpenMP region of T threads, each taking its
//                       contiguous share of the rows in blocks of about R rows (R = 0: the
//                       1 MiB-of-sums target QMatMul uses), each block one product on a
//                       primitive made for one thread, sums into the thread's own buffer
// B is packed once in oneDNN's preferred layout (asked at M = 128, as Int8Gemm does); no
// quantization or epilogue runs, so this is the GEMM alone. Counters: GMAC/s over the
// mean time, best_GMAC/s over the fastest iteration (on the shared 2-core machine the mean
// mostly measures the other processes; the fastest run is what the code can do); compare
// with bench_gemm_peak's fma_peak/vnni (the VNNI instruction ceiling). State the load.
//
//   build/release/bench_qmatmul_blocks --benchmark_min_time=0.2
#include <benchmark/benchmark.h>
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "fastest_iteration.h"

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

dnnl::engine& engine() {
  static dnnl::engine e = [] {
    // Every benchmark makes its primitives for its own thread count; with oneDNN's global
    // cache on, an equal descriptor could come back as a primitive made for another count.
    dnnl::set_primitive_cache_capacity(0);
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return e;
}

// A primitive for [m, k] u8 x B s8 -> [m, n] s32 made while `threads` OpenMP threads are
// the default (oneDNN sizes its work split from that at creation).
dnnl::matmul make(int64_t m, int64_t k, int64_t n, const dnnl::memory::desc& wei, int threads) {
  const int before = omp_get_max_threads();
  omp_set_num_threads(threads);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(dnnl::memory::desc({m, k}, dt::u8, tag::ab), wei,
                                                     dnnl::memory::desc({m, n}, dt::s32, tag::ab)),
                                  engine());
  omp_set_num_threads(before);
  return dnnl::matmul(pd);
}

struct Operands {
  std::vector<uint8_t> a;
  std::vector<int32_t> c;
  dnnl::memory b;  // packed
  std::string impl;
  Operands(int64_t m, int64_t k, int64_t n) : a(static_cast<size_t>(m * k)), c(static_cast<size_t>(m * n)) {
    std::mt19937 gen(1);
    for (uint8_t& v : a) v = static_cast<uint8_t>(gen());
    std::vector<int8_t> plain(static_cast<size_t>(k * n));
    for (int8_t& v : plain) v = static_cast<int8_t>(gen());
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(dnnl::memory::desc({128, k}, dt::u8, tag::ab), dnnl::memory::desc({k, n}, dt::s8, tag::any),
                           dnnl::memory::desc({128, n}, dt::s32, tag::ab)),
        engine());
    impl = pd.impl_info_str();
    dnnl::memory src(dnnl::memory::desc({k, n}, dt::s8, tag::ab), engine(), plain.data());
    b = dnnl::memory(pd.weights_desc(), engine());
    dnnl::stream s(engine());
    dnnl::reorder(src, b).execute(s, src, b);
    s.wait();
  }
};

void run(const dnnl::matmul& p, dnnl::stream& s, const uint8_t* a, int64_t m, int64_t k, int64_t n,
         const dnnl::memory& b, int32_t* c) {
  dnnl::memory am(dnnl::memory::desc({m, k}, dt::u8, tag::ab), engine(), const_cast<uint8_t*>(a));
  dnnl::memory cm(dnnl::memory::desc({m, n}, dt::s32, tag::ab), engine(), c);
  p.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, cm}});
  s.wait();
}

// Runs `body` once per benchmark iteration and sets both counters.
template <class Body>
void timed(benchmark::State& state, double macs, Body body) {
  const double best = octet::bench::fastest_iteration(state, body);
  state.counters["GMAC/s"] = benchmark::Counter(macs / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["best_GMAC/s"] = macs / best / 1e9;
}

void whole(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  Operands op(m, k, n);
  const dnnl::matmul p = make(m, k, n, op.b.get_desc(), threads);
  omp_set_num_threads(threads);
  dnnl::stream s(engine());
  timed(state, static_cast<double>(m * k * n), [&] { run(p, s, op.a.data(), m, k, n, op.b, op.c.data()); });
  state.SetLabel(op.impl);
}

void blocks(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const int threads = static_cast<int>(state.range(3));
  const int64_t target = state.range(4) > 0 ? state.range(4) : std::max<int64_t>(4, (int64_t{1} << 20) / (4 * n));
  Operands op(m, k, n);
  // QMatMul's plan: thread t's rows [m t / T, m (t + 1) / T) in near-equal blocks.
  std::vector<std::vector<int64_t>> bounds(static_cast<size_t>(threads));
  std::vector<std::vector<dnnl::matmul>> prims(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    const int64_t begin = m * t / threads, rows = m * (t + 1) / threads - begin;
    const int64_t count = (rows + target - 1) / target;
    auto& bt = bounds[static_cast<size_t>(t)];
    for (int64_t i = 0; i <= count; ++i) bt.push_back(begin + rows * i / count);
    for (int64_t i = 0; i < count; ++i)
      prims[static_cast<size_t>(t)].push_back(make(bt[i + 1] - bt[i], k, n, op.b.get_desc(), 1));
  }
  timed(state, static_cast<double>(m * k * n), [&] {
#pragma omp parallel num_threads(threads)
    {
      const size_t t = static_cast<size_t>(omp_get_thread_num());
      dnnl::stream s(engine());
      for (size_t i = 0; i < prims[t].size(); ++i) {
        const int64_t r0 = bounds[t][i], rows = bounds[t][i + 1] - r0;
        run(prims[t][i], s, op.a.data() + r0 * k, rows, k, n, op.b, op.c.data() + r0 * n);
      }
    }
  });
  state.SetLabel(op.impl);
}

// MiniLM-L6 (hidden 384, FFN 1536, fused QKV 1152) at seq 128, DINOv2-S/14 at 257 tokens,
// and DINOv2 at batch 8 (2056 rows).
const std::vector<std::vector<int64_t>> kShapes = {
    {128, 384, 1152}, {128, 384, 384}, {128, 384, 1536}, {128, 1536, 384},
    {257, 384, 1152}, {257, 384, 384}, {257, 384, 1536}, {257, 1536, 384},
    {2056, 384, 1536}, {2056, 1536, 384}};

void whole_args(benchmark::internal::Benchmark* b) {
  for (int64_t t : {1, 2})
    for (const auto& s : kShapes) b->Args({s[0], s[1], s[2], t});
}

void block_args(benchmark::internal::Benchmark* b) {
  for (int64_t t : {1, 2})
    for (const auto& s : kShapes)
      for (int64_t r : {0, 32, 64}) b->Args({s[0], s[1], s[2], t, r});
}

BENCHMARK(whole)->Apply(whole_args)->UseRealTime();
BENCHMARK(blocks)->Apply(block_args)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
