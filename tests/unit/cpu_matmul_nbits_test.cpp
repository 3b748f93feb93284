// The optimized com.microsoft.MatMulNBits kernel (src/kernels/cpu/matmul_nbits.cpp: the
// decode GEMV in simd/nbits_gemv_*.cpp, the prefill panel + sgemm path) against the
// reference kernel, on weights quantized by octet's own blocked RTN (quant/block_quant.h):
// 4 and 8 bits, blocks 32/64/128, K not a multiple of the block, odd N, M = 1..4 (GEMV)
// and 7, 64 (GEMM), symmetric and asymmetric with zero points at both ends, bias, rank-3 A,
// one and two threads, every ISA level (in process for the GEMV, child processes for
// oneDNN's sgemm). The int8-activation GEMV (matmul_nbits.h) is checked against the
// reference kernel run on A rounded the way that path rounds it, on the same edge shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "cpu_test_util.h"
#include "isa_child_runs.h"
#include "kernels/cpu/matmul_nbits.h"
#include "quant/block_quant.h"

namespace octet {
namespace {

using testing::Tolerance;

struct NbitsCase {
  int bits = 4;
  int64_t K = 64, N = 8, block = 32;
  bool symmetric = true;
  std::vector<int64_t> a_shape = {1, 64};
  bool bias = false;
  int threads = 1;
  std::string label() const {
    std::string s = "bits " + std::to_string(bits) + " K " + std::to_string(K) + " N " + std::to_string(N) + " block " +
                    std::to_string(block) + (symmetric ? " sym" : " asym") + " A [";
    for (int64_t d : a_shape) s += std::to_string(d) + ",";
    return s + "]" + (bias ? " bias" : "") + " threads " + std::to_string(threads);
  }
};

// Weights in [-1, 1], except that column 0's first block is all >= 0 (zero point 0 when
// asymmetric) and column 1's (when N > 1) all <= 0 (zero point 2^bits - 1).
Tensor weights(int64_t K, int64_t N, uint32_t seed, int64_t block) {
  Tensor w = testing::random_f32({K, N}, seed, -1.0f, 1.0f);
  float* p = w.mutable_data<float>();
  for (int64_t k = 0; k < std::min(K, block); ++k) {
    p[k * N] = std::fabs(p[k * N]);
    if (N > 1) p[k * N + 1] = -std::fabs(p[k * N + 1]);
  }
  return w;
}

std::shared_ptr<const Graph> nbits_graph(const NbitsCase& c, const quant::NbitsTensors& t, const Tensor* bias) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 21;
  g->opset_imports["com.microsoft"] = 1;
  g->add_input("A", TensorType(DType::Float32, DimVector(c.a_shape.begin(), c.a_shape.end())));
  g->add_initializer("B", std::make_shared<Tensor>(t.b));
  g->add_initializer("scales", std::make_shared<Tensor>(t.scales));
  std::vector<std::string> ins = {"A", "B", "scales"};
  if (t.zero_points) g->add_initializer("zp", std::make_shared<Tensor>(*t.zero_points));
  ins.push_back(t.zero_points ? "zp" : "");
  if (bias) {
    g->add_initializer("bias", std::make_shared<Tensor>(*bias));
    ins.push_back("");
    ins.push_back("bias");
  }
  g->add_node("MatMulNBits", ins, {"Y"},
              {Attribute::make_int("K", c.K), Attribute::make_int("N", c.N), Attribute::make_int("bits", c.bits),
               Attribute::make_int("block_size", c.block)},
              "com.microsoft", "nbits_under_test");
  g->mark_output(g->value("Y"));
  return g;
}

void check(const NbitsCase& c, uint32_t seed = 1) {
  const Tensor w = weights(c.K, c.N, seed, c.block);
  const quant::BlockQuantized q = quant::quantize_blocks_rtn(w.data<float>(), c.K, c.N, c.bits, c.block, c.symmetric);
  const quant::NbitsTensors t = quant::to_matmul_nbits(q);
  if (!c.symmetric && c.N > 1) {  // the edge zero points the weights were built for
    EXPECT_EQ(q.zeros[0], 0) << c.label();
    EXPECT_EQ(q.zeros[q.k_blocks], (1 << c.bits) - 1) << c.label();
  }
  const Tensor bias = testing::random_f32({c.N}, seed + 7);
  auto g = nbits_graph(c, t, c.bias ? &bias : nullptr);
  const Tensor a = testing::random_f32(c.a_shape, seed + 3);
  SessionOptions ro;
  ro.kernels = KernelChoice::Reference;
  const Tensor want = Session(g, ro).run({{"A", a}})[0].second;
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    SessionOptions o;
    o.kernels = KernelChoice::Optimized;
    o.threads = c.threads;
    Session s(g, o);
    EXPECT_EQ(s.optimized_nodes(), 1) << c.label() << ": declined";
    const Tensor got = s.run({{"A", a}})[0].second;
    testing::expect_close(got, want, Tolerance{1e-4, 1e-3}, c.label() + " at " + isa_name(level));
  }
}

TEST(CpuMatMulNBits, DecodeRowsEdgeShapes) {
  for (int bits : {4, 8})
    for (int64_t block : {32, 64, 128})
      for (int64_t K : {32, 71, 200})
        for (int64_t N : {1, 7, 33})
          for (bool sym : {true, false})
            for (int64_t m : {1, 2, 3, 4})
              check({bits, K, N, block, sym, {m, K}, (K + N) % 2 == 0, 1});
}

TEST(CpuMatMulNBits, PrefillRowsEdgeShapes) {
  for (int bits : {4, 8})
    for (int64_t block : {32, 128})
      for (int64_t K : {40, 200})
        for (int64_t N : {1, 65, 130})
          for (bool sym : {true, false})
            for (int64_t m : {5, 7, 64}) check({bits, K, N, block, sym, {m, K}, N % 2 == 1, 1});
}

TEST(CpuMatMulNBits, RankThreeAThreadsAndSmolLMShape) {
  check({4, 96, 40, 32, false, {2, 3, 96}, true, 2});  // 6 rows: the GEMM path
  check({4, 96, 40, 32, true, {1, 2, 96}, false, 2});   // 2 rows: the GEMV path
  check({8, 576, 192, 128, true, {1, 576}, true, 2});
  check({4, 576, 1536, 32, false, {1, 1, 576}, false, 2});
  check({4, 576, 1536, 64, true, {7, 576}, false, 2});
}

// A with each row's K split in the weight blocks and every block rounded as the int8
// activations are: symmetric, scale max|a| / 127, codes to nearest even, back to float.
void round_like_int8_activations(Tensor& a, int64_t K, int64_t block) {
  float* p = a.mutable_data<float>();
  for (int64_t row = 0; row < a.numel() / K; ++row)
    for (int64_t k0 = 0; k0 < K; k0 += block) {
      float* x = p + row * K + k0;
      const int64_t len = std::min(block, K - k0);
      float amax = 0.0f;
      for (int64_t j = 0; j < len; ++j) amax = std::max(amax, std::fabs(x[j]));
      const float inv = amax > 0.0f ? 127.0f / amax : 0.0f, scale = amax / 127.0f;
      for (int64_t j = 0; j < len; ++j) x[j] = std::clamp(std::nearbyint(x[j] * inv), -127.0f, 127.0f) * scale;
    }
}

class Int8Activations {  // turns the int8-activation GEMV on for its lifetime
 public:
  Int8Activations() : previous_(cpu::nbits_int8_activations()) { cpu::set_nbits_int8_activations(true); }
  ~Int8Activations() { cpu::set_nbits_int8_activations(previous_); }

 private:
  bool previous_;
};

// Where the int8 path runs (AVX512-VNNI at the AVX-512 level) it must match the reference
// on rounded A to float rounding; at the other levels the float path's result stands.
// Returns how many levels ran the int8 path.
int check_int8(const NbitsCase& c, uint32_t seed = 1) {
  const Tensor w = weights(c.K, c.N, seed, c.block);
  const quant::NbitsTensors t = quant::to_matmul_nbits(quant::quantize_blocks_rtn(w.data<float>(), c.K, c.N, c.bits, c.block, c.symmetric));
  const Tensor bias = testing::random_f32({c.N}, seed + 7);
  auto g = nbits_graph(c, t, c.bias ? &bias : nullptr);
  Tensor a = testing::random_f32(c.a_shape, seed + 3);
  std::memset(a.mutable_data<float>(), 0, sizeof(float) * std::min<int64_t>(c.block, c.K));  // an all-zero block: scale 0
  Tensor rounded = testing::random_f32(c.a_shape, seed + 3);
  std::memcpy(rounded.mutable_data<float>(), a.data<float>(), sizeof(float) * a.numel());
  round_like_int8_activations(rounded, c.K, c.block);
  SessionOptions ro;
  ro.kernels = KernelChoice::Reference;
  const Tensor want_float = Session(g, ro).run({{"A", a}})[0].second;
  const Tensor want_int8 = Session(g, ro).run({{"A", rounded}})[0].second;
  Int8Activations on;
  int int8_levels = 0;
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    SessionOptions o;
    o.kernels = KernelChoice::Optimized;
    o.threads = c.threads;
    Session s(g, o);
    EXPECT_EQ(s.optimized_nodes(), 1) << c.label() << ": declined";
    const Tensor got = s.run({{"A", a}})[0].second;
    const bool int8 = cpu::nbits_int8_path_active();
    int8_levels += int8;
    if (int8) {  // the block sums are exact integers: what differs is float summation order over K
      const double atol = 1e-5 * static_cast<double>(std::max<int64_t>(1, c.K / 128));
      testing::expect_close(got, want_int8, Tolerance{1e-5, atol}, c.label() + " int8 activations at " + isa_name(level));
    } else {
      testing::expect_close(got, want_float, Tolerance{1e-4, 1e-3}, c.label() + " at " + isa_name(level));
    }
  }
  return int8_levels;
}

TEST(CpuMatMulNBits, Int8ActivationsEdgeShapes) {
  if (const char* env = std::getenv("OCTET_NBITS_ACTIVATIONS")) {
    EXPECT_EQ(cpu::nbits_int8_activations(), std::strcmp(env, "int8") == 0) << "OCTET_NBITS_ACTIVATIONS=" << env;
  }
  int int8_runs = 0, cases = 0;
  for (int bits : {4, 8})
    for (int64_t block : {32, 64, 128})
      for (int64_t K : {32, 71, 200})
        for (int64_t N : {1, 7, 33})
          for (bool sym : {true, false})
            for (int64_t m : {1, 2, 3, 4}) {
              int8_runs += check_int8({bits, K, N, block, sym, {m, K}, (K + N) % 2 == 0, 1}, static_cast<uint32_t>(cases));
              ++cases;
            }
  int8_runs += check_int8({4, 576, 1536, 32, false, {1, 1, 576}, false, 2});
  int8_runs += check_int8({8, 576, 192, 128, true, {3, 576}, true, 2});
  cases += 2;
  // The int8 path must really have run wherever this CPU and level offer it.
  ScopedIsaLevel top(available_isas().back());
  EXPECT_EQ(int8_runs, cpu::nbits_int8_path_available() ? cases : 0);
}

TEST(CpuMatMulNBits, Int8ActivationsOffByDefault) {
  if (std::getenv("OCTET_NBITS_ACTIVATIONS")) GTEST_SKIP() << "the environment chose";
  EXPECT_FALSE(cpu::nbits_int8_activations());
}

TEST(CpuMatMulNBits, DeclinesWhatItDoesNotHandle) {
  NbitsCase c{4, 64, 8, 16, true, {1, 64}};  // block 16: not a multiple of 32
  const Tensor w = weights(c.K, c.N, 3, c.block);
  auto g = nbits_graph(c, quant::to_matmul_nbits(quant::quantize_blocks_rtn(w.data<float>(), c.K, c.N, 4, 16, true)),
                       nullptr);
  SessionOptions o;
  o.kernels = KernelChoice::Optimized;
  Session s(g, o);
  EXPECT_EQ(s.optimized_nodes(), 0);
  EXPECT_EQ(s.run({{"A", testing::random_f32({1, 64}, 4)}})[0].second.shape(), (std::vector<int64_t>{1, 8}));
}

TEST(CpuMatMulNBits, EveryIsaInChildProcesses) {
  testing::expect_child_runs_pass_at_every_isa("CpuMatMulNBits.PrefillRowsEdgeShapes:CpuMatMulNBits.RankThree*",
                                               "cpu_matmul_nbits");
}

// The int8 path chosen by the environment variable, at every level (only AVX-512 with VNNI
// runs it; the others must fall back to the float path).
TEST(CpuMatMulNBits, Int8ActivationsFromEnvironmentAtEveryIsa) {
  if (std::getenv("OCTET_ISA")) GTEST_SKIP() << "already a child run";
  setenv("OCTET_NBITS_ACTIVATIONS", "int8", 1);
  testing::expect_child_runs_pass_at_every_isa("CpuMatMulNBits.Int8ActivationsEdgeShapes", "cpu_matmul_nbits_int8");
  unsetenv("OCTET_NBITS_ACTIVATIONS");
}

}  // namespace
}  // namespace octet
