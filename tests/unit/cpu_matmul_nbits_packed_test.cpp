// MatMulNBits where the session keeps only the integer GEMV's panels (matmul_nbits.cpp,
// "Memory"; simd/nbits_packed.h): the panel layout read back (unpack_nbits, the portable and
// AVX-512 dequantization against the file layout's), the prefill and a later float GEMV
// computed from the panels against the reference kernel on edge shapes, and a session
// that owns its graph dropping the file's B, scales and zero points while every path,
// the reference fallback's error included, still works.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "cpu_test_util.h"
#include "kernels/cpu/simd/nbits_packed.h"
#include "nbits_test_util.h"

namespace octet {
namespace {

using testing::ActivationsScope;
using testing::NbitsCase;
using testing::nbits_graph;
using testing::nbits_weights;
using testing::Tolerance;

quant::BlockQuantized quantized(const NbitsCase& c, uint32_t seed) {
  const Tensor w = nbits_weights(c.K, c.N, seed, c.block);
  return quant::quantize_blocks_rtn(w.data<float>(), c.K, c.N, c.bits, c.block, c.symmetric);
}

cpu::NbitsPacked packed(const quant::BlockQuantized& q, const quant::NbitsTensors& t) {
  return cpu::pack_nbits(q.bits, q.N, q.k_blocks, q.block, t.b.raw(), t.scales.data<float>(), q.zeros.data());
}

TEST(CpuMatMulNBitsPacked, UnpackGivesTheFileLayoutBack) {
  for (int bits : {4, 8})
    for (bool sym : {true, false})
      for (int64_t N : {1, 16, 33}) {
        const NbitsCase c{bits, 71, N, 32, sym};
        const quant::BlockQuantized q = quantized(c, 5);
        const quant::NbitsTensors t = quant::to_matmul_nbits(q);
        const cpu::NbitsUnpacked u = cpu::unpack_nbits(packed(q, t));
        ASSERT_EQ(static_cast<int64_t>(u.b.size()), t.b.numel()) << c.label();
        EXPECT_EQ(0, std::memcmp(u.b.data(), t.b.raw(), u.b.size())) << c.label();
        EXPECT_EQ(0, std::memcmp(u.scales.data(), t.scales.raw(), u.scales.size() * sizeof(float))) << c.label();
        EXPECT_EQ(u.zeros, q.zeros) << c.label();
      }
}

// Both dequantizations against the file layout's: code * scale - zero * scale, for every
// k < K of every column (padding columns 0), K cut inside a block included.
TEST(CpuMatMulNBitsPacked, DequantizedPanelsMatchTheWeights) {
  for (int bits : {4, 8})
    for (bool sym : {true, false})
      for (int64_t block : {32, 128})
        for (int64_t K : {32, 71, 200}) {
          const NbitsCase c{bits, K, 21, block, sym};
          const quant::BlockQuantized q = quantized(c, 9);
          const cpu::NbitsPacked p = packed(q, quant::to_matmul_nbits(q));
          const int64_t ldd = 24;  // wider than the panel: nothing is written past its 16 columns
          for (int64_t panel = 0; panel < p.panels; ++panel) {
            std::vector<float> generic(K * ldd, -7.0f), fast(K * ldd, -7.0f);
            cpu::dequant_packed_panel_generic(p, panel, K, generic.data(), ldd);
            const bool avx512 = detected_isa() >= IsaLevel::Avx512;
            if (avx512) cpu::dequant_packed_panel_avx512(p, panel, K, fast.data(), ldd);
            for (int64_t k = 0; k < K; ++k)
              for (int64_t col = 0; col < ldd; ++col) {
                const int64_t n = panel * 16 + col;
                const float g = generic[k * ldd + col];
                const std::string at = c.label() + " panel " + std::to_string(panel) + " k " + std::to_string(k) +
                                       " column " + std::to_string(col);
                const double want = col >= 16 ? -7.0 : n < c.N ? quant::dequantized(q, k, n) : 0.0;
                EXPECT_NEAR(g, want, 1e-6 * (1.0 + std::fabs(want))) << at;
                if (avx512) {
                  EXPECT_NEAR(fast[k * ldd + col], want, 1e-6 * (1.0 + std::fabs(want))) << at;
                }
              }
          }
        }
}

// The default mode (panels where VNNI is) with more rows than the GEMV takes, and the float
// GEMV asked for after the session was made: both dequantize from the panels.
void check_from_panels(const NbitsCase& c, uint32_t seed, bool float_after) {
  const quant::BlockQuantized q = quantized(c, seed);
  const quant::NbitsTensors t = quant::to_matmul_nbits(q);
  const Tensor bias = testing::random_f32({c.N}, seed + 7);
  std::shared_ptr<const Graph> g = nbits_graph(c, t, c.bias ? &bias : nullptr);
  const Tensor a = testing::random_f32(c.a_shape, seed + 3);
  SessionOptions ro;
  ro.kernels = KernelChoice::Reference;
  const Tensor want = Session(g, ro).run({{"A", a}})[0].second;
  SessionOptions o;
  o.kernels = KernelChoice::Optimized;
  o.threads = c.threads;
  Session s(g, o);
  ASSERT_EQ(s.optimized_nodes(), 1) << c.label();
  std::optional<ActivationsScope> later;
  if (float_after) later.emplace(cpu::NbitsActivations::Float);
  testing::expect_close(s.run({{"A", a}})[0].second, want, Tolerance{1e-4, 1e-3},
                        c.label() + (float_after ? " float GEMV from panels" : " prefill from panels"));
}

TEST(CpuMatMulNBitsPacked, PrefillFromPanelsEdgeShapes) {
  uint32_t seed = 0;
  for (int bits : {4, 8})
    for (int64_t block : {32, 128})
      for (int64_t K : {40, 200})
        for (int64_t N : {1, 65, 130})
          for (bool sym : {true, false})
            for (int64_t m : {5, 64}) check_from_panels({bits, K, N, block, sym, {m, K}, N % 2 == 1, static_cast<int>(1 + m % 2)}, seed++, false);
  check_from_panels({4, 576, 1536, 32, false, {2, 7, 576}, true, 2}, 1, false);  // panels of 256 columns
  check_from_panels({8, 200, 600, 128, true, {9, 200}, false, 2}, 2, false);     // 256, 256 and 88
}

// The decode GEMV shared over 2 threads (work_sharing.h's guided claims: ranges of whole
// panels) gives the very bits of 1 thread: every column is computed whole by one thread, in
// the same order over k. Shapes from below matmul_nbits.cpp's share bound (2 x 32 KB of
// weights) to a few hundred panels, the last panel cut short, 1 to 4 rows, bias or not.
TEST(CpuMatMulNBitsPacked, SharedGemvEqualsOneThreadBitForBit) {
  uint32_t seed = 40;
  for (int bits : {4, 8})
    for (int64_t N : {16 * 3 + 1, 16 * 13, 16 * 61 + 7, 16 * 300 + 9})
      for (int64_t rows : {1, 4}) {
        const NbitsCase c{bits, 576, N, 32, N % 2 == 0, {rows, 576}, rows == 1, 2};
        const quant::BlockQuantized q = quantized(c, seed);
        const quant::NbitsTensors t = quant::to_matmul_nbits(q);
        const Tensor bias = testing::random_f32({c.N}, seed + 1);
        std::shared_ptr<const Graph> g = nbits_graph(c, t, c.bias ? &bias : nullptr);
        const Tensor a = testing::random_f32(c.a_shape, seed + 2);
        seed += 3;
        SessionOptions one, two;
        one.kernels = two.kernels = KernelChoice::Optimized;
        one.threads = 1, two.threads = 2;
        Session s1(g, one), s2(g, two);
        const Tensor want = s1.run({{"A", a}})[0].second;
        for (int j = 0; j < 3; ++j)  // the helper joins at different points
          testing::expect_close(s2.run({{"A", a}})[0].second, want, Tolerance{0, 0}, c.label() + " 2 threads");
      }
}

TEST(CpuMatMulNBitsPacked, FloatGemvAskedForLaterUsesPanels) {
  for (int bits : {4, 8})
    for (bool sym : {true, false})
      for (int64_t m : {1, 4}) check_from_panels({bits, 71, 33, 32, sym, {m, 71}, m == 1, 1}, 3, true);
}

// A session that owns its graph keeps the weights once: the file's B, scales and zero
// points are released where the panels are made (not at a level without VNNI, where the
// float GEMV reads the file's layout), and decode, prefill and a wrongly shaped A (the
// reference kernel's error, from the unpacked weights) behave as with a shared graph.
TEST(CpuMatMulNBitsPacked, OwnedGraphKeepsTheWeightsOnce) {
  for (IsaLevel level : available_isas())
    for (bool sym : {true, false}) {
      ScopedIsaLevel scoped(level);
      const NbitsCase c{4, 96, 40, 32, sym, {1, 96}, true, 2};
      const quant::BlockQuantized q = quantized(c, 11);
      const quant::NbitsTensors t = quant::to_matmul_nbits(q);
      const Tensor bias = testing::random_f32({c.N}, 18);
      SessionOptions o;
      o.kernels = KernelChoice::Optimized;
      o.threads = 2;
      auto graph = [&] {  // A [rows, k]: a wrong k reaches the kernel
        std::shared_ptr<Graph> g = nbits_graph(c, t, &bias);
        g->value("A")->type = TensorType(DType::Float32, DimVector{Dim::symbol("rows"), Dim::symbol("k")});
        return g;
      };
      Session shared(std::shared_ptr<const Graph>(graph()), o);
      Session owned(graph(), o);
      const bool panels = cpu::nbits_int8_path_available() && cpu::nbits_activations() != cpu::NbitsActivations::Float;
      const std::string at = c.label() + " at " + isa_name(level);
      EXPECT_EQ(owned.released_weights(), panels ? (sym ? 2 : 3) : 0) << at;
      for (int64_t rows : {1, 3, 8}) {
        const Tensor a = testing::random_f32({rows, 96}, 12 + static_cast<uint32_t>(rows));
        testing::expect_close(owned.run({{"A", a}})[0].second, shared.run({{"A", a}})[0].second, Tolerance{0, 0},
                              at + " rows " + std::to_string(rows));
      }
      std::string error;
      try {
        owned.run({{"A", testing::random_f32({2, 95}, 13)}});
      } catch (const std::exception& e) {
        error = e.what();
      }
      EXPECT_NE(error.find("nbits_under_test"), std::string::npos) << at << ": " << error;
    }
}

}  // namespace
}  // namespace octet
