// The optimized com.microsoft.MatMulNBits kernel (src/kernels/cpu/matmul_nbits.cpp: the
// decode GEMV in simd/nbits_gemv_*.cpp, the prefill panel + sgemm path) against the
// reference kernel, on weights quantized by octet's own blocked RTN (quant/block_quant.h):
// 4 and 8 bits, blocks 32/64/128, K not a multiple of the block, odd N, M = 1..4 (GEMV)
// and 7, 64 (GEMM), symmetric and asymmetric with zero points at both ends, bias, rank-3 A,
// one and two threads, every ISA level (in process for the GEMV, child processes for
// oneDNN's sgemm). The float-activation GEMV is forced for those (check()). The integer
// GEMVs on packed panels (matmul_nbits.h: int8 A for 4-bit weights, int16 A for 8-bit ones,
// the default where AVX512-VNNI is) are checked, on the same edge shapes (N not a multiple
// of the 16-column panel among them), against the reference kernel run on A rounded the way
// that path rounds it (float summation order apart) and against the reference on A itself
// within the rounding's worst case (rounding_bound).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>

#include "cpu_test_util.h"
#include "isa_child_runs.h"
#include "nbits_test_util.h"
#include "kernels/cpu/matmul_nbits.h"
#include "kernels/cpu/simd/nbits_packed.h"
#include "quant/block_quant.h"

namespace octet {
namespace {

using testing::Tolerance;
using testing::ActivationsScope;
using testing::NbitsCase;
using testing::nbits_graph;
using testing::nbits_weights;

// The float-activation paths (decode GEMV forced to float, prefill GEMM) against the reference.
void check(const NbitsCase& c, uint32_t seed = 1) {
  ActivationsScope float_activations(cpu::NbitsActivations::Float);
  const Tensor w = nbits_weights(c.K, c.N, seed, c.block);
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
  check({8, 200, 600, 128, false, {9, 200}, true, 2});  // prefill panels of 256, 256 and 88 columns
  check({8, 576, 4096 + 3, 32, false, {2, 576}, true, 2});  // 2.4 MB: the float GEMV shared over 2 threads, many claims
}

// The integer activations' groups (nbits_packed.h): runs of 32 elements of a row, whatever
// the weight block. Returns the group of element k (its index over the row).
int64_t int8_group(int64_t k) { return k / 32; }

// Per row, max |a| of every group.
std::vector<float> group_amax(const Tensor& a, int64_t K) {
  const int64_t rows = a.numel() / K, groups = (K + 31) / 32;
  std::vector<float> amax(static_cast<size_t>(rows * groups), 0.0f);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < K; ++k) {
      float& m = amax[r * groups + int8_group(k)];
      m = std::max(m, std::fabs(a.data<float>()[r * K + k]));
    }
  return amax;
}

// A with every group rounded as the integer activations are: symmetric, scale max|a| /
// qmax (127 or kNbitsSplitQmax), codes to nearest even, back to float.
void round_like_integer_activations(Tensor& a, int64_t K, float qmax) {
  const std::vector<float> amax = group_amax(a, K);
  const int64_t groups = (K + 31) / 32;
  float* p = a.mutable_data<float>();
  for (int64_t r = 0; r < a.numel() / K; ++r)
    for (int64_t k = 0; k < K; ++k) {
      const float m = amax[r * groups + int8_group(k)];
      const float inv = m > 0.0f ? qmax / m : 0.0f, scale = m / qmax;
      float& x = p[r * K + k];
      x = std::clamp(std::nearbyint(x * inv), -qmax, qmax) * scale;
    }
}

// The worst case of integer activations against float ones, per output: each element of A
// moves by at most half its group's step (max|a| / (2 qmax)), times |w| summed over K.
std::vector<double> rounding_bound(const quant::BlockQuantized& q, const Tensor& a, double qmax) {
  const int64_t rows = a.numel() / q.K, groups = (q.K + 31) / 32;
  const std::vector<float> amax = group_amax(a, q.K);
  std::vector<double> bound(static_cast<size_t>(rows * q.N), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < q.N; ++n)
      for (int64_t k = 0; k < q.K; ++k)
        bound[r * q.N + n] += std::fabs(quant::dequantized(q, k, n)) * amax[r * groups + int8_group(k)] / (2.0 * qmax);
  return bound;
}

// Where an integer path runs (AVX512-VNNI at the AVX-512 level) it must match the
// reference on A rounded as that path rounds it to float rounding, and the reference on A
// itself within the rounding's bound; elsewhere (no VNNI) the float path's result stands.
// `force_int8`: ask for int8 activations; else the default (or the environment's choice).
// Returns how many levels ran an integer path; counts the int16 ones in `int16_levels`.
// `tweak` may change the quantized weights before they are written out (zero points).
int check_int8(const NbitsCase& c, uint32_t seed = 1, bool force_int8 = true, int* int16_levels = nullptr,
               const std::function<void(quant::BlockQuantized&)>& tweak = nullptr) {
  const Tensor w = nbits_weights(c.K, c.N, seed, c.block);
  quant::BlockQuantized q = quant::quantize_blocks_rtn(w.data<float>(), c.K, c.N, c.bits, c.block, c.symmetric);
  if (tweak) tweak(q);
  const quant::NbitsTensors t = quant::to_matmul_nbits(q);
  const Tensor bias = testing::random_f32({c.N}, seed + 7);
  auto g = nbits_graph(c, t, c.bias ? &bias : nullptr);
  Tensor a = testing::random_f32(c.a_shape, seed + 3);
  std::memset(a.mutable_data<float>(), 0, sizeof(float) * std::min<int64_t>(c.block, c.K));  // all-zero groups: scale 0
  // Outliers, as real activations have (x100-x1000 in a few channels): their runs' codes
  // are coarse, and a zero point handled in floats would cancel large terms (nbits_packed.h).
  for (int64_t i = 37; i < a.numel(); i += 97) a.mutable_data<float>()[i] *= 400.0f;
  SessionOptions ro;
  ro.kernels = KernelChoice::Reference;
  const Tensor want_float = Session(g, ro).run({{"A", a}})[0].second;
  std::optional<ActivationsScope> on;
  if (force_int8) on.emplace(cpu::NbitsActivations::Int8);
  int integer_levels = 0;
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    SessionOptions o;
    o.kernels = KernelChoice::Optimized;
    o.threads = c.threads;
    Session s(g, o);
    EXPECT_EQ(s.optimized_nodes(), 1) << c.label() << ": declined";
    const Tensor got = s.run({{"A", a}})[0].second;
    const cpu::NbitsDecodePath path = cpu::nbits_decode_path(c.bits);
    if (path == cpu::NbitsDecodePath::Float) {
      testing::expect_close(got, want_float, Tolerance{1e-4, 1e-3}, c.label() + " at " + isa_name(level));
      continue;
    }
    ++integer_levels;
    const bool int16 = path == cpu::NbitsDecodePath::Int16;
    if (int16 && int16_levels) ++*int16_levels;
    const float qmax = int16 ? static_cast<float>(cpu::kNbitsSplitQmax) : 127.0f;
    const std::string what = c.label() + (int16 ? " int16" : " int8") + " activations at " + isa_name(level);
    // The run sums are exact integers: what differs is float summation order over K, an
    // error that grows with sum |w| |a| (the outliers), not with the result.
    Tensor rounded = testing::random_f32(c.a_shape, seed + 3);
    std::memcpy(rounded.mutable_data<float>(), a.data<float>(), sizeof(float) * a.numel());
    round_like_integer_activations(rounded, c.K, qmax);
    const Tensor want = Session(g, ro).run({{"A", rounded}})[0].second;
    const std::vector<double> magnitude = rounding_bound(q, rounded, 0.5);  // sum of |w| max|a| of its run, per output
    const double atol = 1e-5 * static_cast<double>(std::max<int64_t>(1, c.K / 128));
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double w = want.data<float>()[i];
      EXPECT_LE(std::fabs(got.data<float>()[i] - w), 1e-5 * std::fabs(w) + atol + 1e-6 * magnitude[i])
          << what << " against the reference on rounded A, output " << i;
    }
    const std::vector<double> bound = rounding_bound(q, a, qmax);
    for (int64_t i = 0; i < got.numel(); ++i) {
      const double diff = std::fabs(static_cast<double>(got.data<float>()[i]) - want_float.data<float>()[i]);
      EXPECT_LE(diff, bound[i] + 1e-4 * (1.0 + std::fabs(want_float.data<float>()[i])))
          << what << " against float A, output " << i;
    }
  }
  return integer_levels;
}

// Whether an integer path should run for `bits`-bit weights at the top ISA level, from the
// mode alone (the kernel's own nbits_decode_path is what is under test); int16: which one.
bool int8_expected(int bits, bool force_int8, bool* int16 = nullptr) {
  ScopedIsaLevel top(available_isas().back());
  const cpu::NbitsActivations mode = force_int8 ? cpu::NbitsActivations::Int8 : cpu::nbits_activations();
  const bool integer = mode != cpu::NbitsActivations::Float && cpu::nbits_int8_path_available();
  if (int16) *int16 = integer && mode == cpu::NbitsActivations::Auto && bits == 8;
  return integer;
}

// The edge shapes through check_int8, checking that the int8 path ran exactly where
// expected (once per case: at the top level; never below AVX-512).
void int8_edge_shapes(bool force_int8) {
  int int8_runs = 0, expected = 0, int16_runs = 0, expected16 = 0;
  auto one = [&](const NbitsCase& c, uint32_t seed) {
    int8_runs += check_int8(c, seed, force_int8, &int16_runs);
    bool int16 = false;
    expected += int8_expected(c.bits, force_int8, &int16);
    expected16 += int16;
  };
  uint32_t seed = 0;
  for (int bits : {4, 8})
    for (int64_t block : {32, 64, 128})
      for (int64_t K : {32, 71, 200})
        for (int64_t N : {1, 7, 33})
          for (bool sym : {true, false})
            for (int64_t m : {1, 2, 3, 4}) one({bits, K, N, block, sym, {m, K}, (K + N) % 2 == 0, 1}, seed++);
  one({4, 576, 1536, 32, false, {1, 1, 576}, false, 2}, 1);
  one({8, 576, 192, 128, true, {3, 576}, true, 2}, 1);
  one({8, 1536, 600, 64, false, {1, 1536}, true, 2}, 2);  // 38 panels over 2 threads, the last of 8 columns
  one({4, 576, 49152 / 16 + 5, 32, true, {2, 576}, false, 2}, 3);
  // Far over matmul_nbits.cpp's kShareMinBytes (64 KB of weights): shared out over 2 threads in many claims.
  one({4, 576, 8192 + 5, 32, false, {2, 576}, true, 2}, 4);
  one({8, 576, 4096 + 3, 32, true, {1, 576}, false, 2}, 5);
  EXPECT_EQ(int8_runs, expected);
  EXPECT_EQ(int16_runs, expected16);
}

// What the environment asked for, when it did.
void expect_environment_choice() {
  if (const char* env = std::getenv("OCTET_NBITS_ACTIVATIONS")) {
    const std::string v = env;
    const cpu::NbitsActivations want = v == "int8"    ? cpu::NbitsActivations::Int8
                                       : v == "float" ? cpu::NbitsActivations::Float
                                                      : cpu::NbitsActivations::Auto;
    EXPECT_EQ(cpu::nbits_activations(), want) << "OCTET_NBITS_ACTIVATIONS=" << env;
  }
}

TEST(CpuMatMulNBits, Int8ActivationsEdgeShapes) {
  expect_environment_choice();
  int8_edge_shapes(true);
}

// Nothing forced: the default decode path (Auto: int8 activations for 4-bit weights where
// VNNI is; or what the environment says) on the edge shapes, at every level.
TEST(CpuMatMulNBits, DefaultActivationsEdgeShapes) {
  expect_environment_choice();
  int8_edge_shapes(false);
}

// The packed layout leaves the zero points out where they are all equal (nbits_packed.h:
// "uniform"): the default 2^(bits-1) given explicitly, another value everywhere, and one
// block off that value (back to the per-column zero points), through both integer paths.
TEST(CpuMatMulNBits, UniformZeroPoints) {
  const auto explicit_default = [](quant::BlockQuantized& q) { q.symmetric = false; };
  const auto all_three = [](quant::BlockQuantized& q) {
    q.symmetric = false;
    std::fill(q.zeros.begin(), q.zeros.end(), uint8_t{3});
  };
  const auto one_differs = [&](quant::BlockQuantized& q) {
    all_three(q);
    q.zeros.back() = 2;
  };
  for (bool force_int8 : {true, false})
    for (int bits : {4, 8})
      for (int64_t m : {1, 2, 3, 4}) {
        const NbitsCase c{bits, 71, 33, 64, true, {m, 71}, m % 2 == 0, 1};
        const uint32_t seed = static_cast<uint32_t>(bits + m);
        check_int8(c, seed, force_int8, nullptr, explicit_default);
        check_int8(c, seed, force_int8, nullptr, all_three);
        check_int8(c, seed, force_int8, nullptr, one_differs);
        check_int8({bits, 200, 17, 32, true, {m, 200}, false, 1}, seed, force_int8, nullptr, all_three);
      }
}

TEST(CpuMatMulNBits, ActivationsAutoByDefault) {
  if (std::getenv("OCTET_NBITS_ACTIVATIONS")) GTEST_SKIP() << "the environment chose";
  EXPECT_EQ(cpu::nbits_activations(), cpu::NbitsActivations::Auto);
  ScopedIsaLevel top(available_isas().back());
  EXPECT_EQ(cpu::nbits_int8_path_active(4), cpu::nbits_int8_path_available());
  EXPECT_FALSE(cpu::nbits_int8_path_active(8));
  EXPECT_EQ(cpu::nbits_decode_path(8) == cpu::NbitsDecodePath::Int16, cpu::nbits_int8_path_available());
}

TEST(CpuMatMulNBits, DeclinesWhatItDoesNotHandle) {
  NbitsCase c{4, 64, 8, 16, true, {1, 64}};  // block 16: not a multiple of 32
  const Tensor w = nbits_weights(c.K, c.N, 3, c.block);
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
  testing::expect_child_runs_pass_at_every_isa("CpuMatMulNBits.Int8ActivationsEdgeShapes:CpuMatMulNBits.DefaultActivations*",
                                               "cpu_matmul_nbits_int8");
  unsetenv("OCTET_NBITS_ACTIVATIONS");
}

// OCTET_NBITS_ACTIVATIONS=float turns the int8 default off at every level: the default-path
// test then expects (and checks that it finds) the float path everywhere.
TEST(CpuMatMulNBits, FloatActivationsFromEnvironmentAtEveryIsa) {
  if (std::getenv("OCTET_ISA")) GTEST_SKIP() << "already a child run";
  setenv("OCTET_NBITS_ACTIVATIONS", "float", 1);
  testing::expect_child_runs_pass_at_every_isa("CpuMatMulNBits.DefaultActivations*", "cpu_matmul_nbits_float");
  unsetenv("OCTET_NBITS_ACTIVATIONS");
}

}  // namespace
}  // namespace octet
