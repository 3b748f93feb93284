// The oneDNN MatMul and Gemm kernels (src/kernels/cpu/dnnl_matmul.*) against the
// reference kernels: ragged and large shapes, every A rank, batched runtime products with
// broadcasting, Gemm's flags, fallbacks, the per-shape primitive cache, several threads on
// one Session, and every ISA level (oneDNN fixes its ISA per process, so each level runs
// these tests again in a child process with OCTET_ISA set).
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include "cpu_matmul_test_util.h"
#include "isa_child_runs.h"
#include "kernels/cpu/dnnl_common.h"

namespace octet {
namespace {

using testing::mm::check_against_reference;
using testing::mm::Operand;
using testing::mm::rand;
using testing::mm::shape_str;

const int64_t kSizes[] = {1, 3, 17, 64, 129};

TEST(CpuMatMul, ConstantWeightsRaggedShapes) {
  uint64_t seed = 1;
  for (int64_t m : kSizes)
    for (int64_t k : kSizes)
      for (int64_t n : kSizes) {
        std::ostringstream label;  // (not string +: GCC 12 warns falsely on that chain)
        label << "[" << m << "," << k << "]x[" << k << "," << n << "]";
        const std::string what = label.str();
        const int fast = check_against_reference(
            "MatMul", {Operand{rand({m, k}, seed++)}, Operand{rand({k, n}, seed++), true}}, {}, k, what);
        EXPECT_EQ(fast, 1) << what;
      }
}

TEST(CpuMatMul, LargeK) {
  for (auto [m, n] : {std::pair<int64_t, int64_t>{3, 17}, {64, 64}, {1, 129}})
    for (bool constant : {true, false})
      EXPECT_EQ(check_against_reference("MatMul", {Operand{rand({m, 4099}, 3)}, Operand{rand({4099, n}, 4), constant}},
                                        {}, 4099, "K 4099 M " + std::to_string(m) + (constant ? " const" : "")),
                1);
}

TEST(CpuMatMul, EveryRankOfAFlattensAgainstA2DWeight) {
  for (std::vector<int64_t> a : {std::vector<int64_t>{17}, {5, 17}, {2, 5, 17}, {2, 3, 5, 17}, {1, 1, 129, 17}})
    for (bool constant : {true, false})
      EXPECT_EQ(check_against_reference("MatMul", {Operand{rand(a, 5)}, Operand{rand({17, 33}, 6), constant}}, {}, 17,
                                        "A " + shape_str(a) + (constant ? " const B" : " runtime B")),
                1);
}

TEST(CpuMatMul, BatchedRuntimeOperandsBroadcastLikeNumpy) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{2, 4, 7, 16}, {2, 4, 16, 7}},   // attention scores
      {{2, 4, 7, 7}, {2, 4, 7, 16}},    // attention context
      {{2, 1, 7, 16}, {1, 4, 16, 9}},   // size-1 batch dims on both sides
      {{7, 16}, {2, 4, 16, 9}},         // A broadcast over B's batch
      {{3, 2, 5, 16}, {16}},            // 1-D B: a matrix-vector product
      {{16}, {2, 16, 5}},               // 1-D A
      {{3, 1, 129, 64}, {3, 64, 1}},    // N = 1
      {{2, 3, 1, 64}, {1, 3, 64, 17}},  // M = 1
  };
  for (const auto& [a, b] : cases)
    EXPECT_EQ(check_against_reference("MatMul", {Operand{rand(a, 7)}, Operand{rand(b, 8)}}, {}, a.back(),
                                      shape_str(a) + " x " + shape_str(b)),
              1);
  // A constant B of rank 3 is not prepacked but still runs batched.
  EXPECT_EQ(check_against_reference("MatMul", {Operand{rand({4, 7, 16}, 9)}, Operand{rand({4, 16, 5}, 10), true}}, {},
                                    16, "constant 3-D B"),
            1);
}

TEST(CpuMatMul, EmptyTensorsAndErrorsGoToTheReferenceKernel) {
  EXPECT_EQ(check_against_reference("MatMul", {Operand{Tensor(DType::Float32, {0, 4})}, Operand{rand({4, 3}, 1), true}},
                                    {}, 4, "M = 0"),
            1);
  EXPECT_EQ(check_against_reference("MatMul", {Operand{Tensor(DType::Float32, {2, 0})}, Operand{Tensor(DType::Float32, {0, 3})}},
                                    {}, 0, "K = 0 gives zeros"),
            1);
  // K differs at run time (the symbolic dims hide it from inference): the reference's error.
  Operand a{rand({3, 5}, 1), false, DimVector{Dim::symbol("m"), Dim::symbol("k")}};
  Operand b{rand({4, 2}, 2), false, DimVector{Dim::symbol("k2"), 2}};
  auto g = testing::mm::one_node("MatMul", {a, b});
  Session s = testing::mm::session(g, KernelChoice::Optimized);
  EXPECT_EQ(s.optimized_nodes(), 1);
  try {
    s.run(testing::mm::feeds({a, b}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("inner dims differ"), std::string::npos) << e.what();
  }
}

TEST(CpuMatMul, OtherTypesAreDeclined) {
  for (DType t : {DType::Float16, DType::Float64, DType::Int32}) {
    Tensor a(t, {2, 3}), b(t, {3, 4});
    auto g = testing::mm::one_node("MatMul", {Operand{a}, Operand{b, true}});
    EXPECT_EQ(testing::mm::session(g, KernelChoice::Optimized).optimized_nodes(), 0) << dtype_name(t);
  }
}

std::vector<Attribute> gemm_attrs(float alpha, float beta, bool ta, bool tb) {
  return {Attribute::make_float("alpha", alpha), Attribute::make_float("beta", beta),
          Attribute::make_int("transA", ta), Attribute::make_int("transB", tb)};
}

TEST(CpuMatMul, GemmFlagsAlphaBetaAndEveryShapeOfC) {
  const int64_t m = 17, k = 33, n = 9;
  const std::vector<std::optional<std::vector<int64_t>>> c_shapes = {
      std::nullopt, std::vector<int64_t>{}, std::vector<int64_t>{n}, std::vector<int64_t>{1, n},
      std::vector<int64_t>{m, 1}, std::vector<int64_t>{m, n}};
  uint64_t seed = 11;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [alpha, beta] : {std::pair<float, float>{1, 1}, {0.5f, 1}, {1, 0.35f}, {0.25f, 0.35f}, {2, 0}})
        for (const auto& c : c_shapes)
          for (bool constant_b : {true, false}) {
            std::vector<std::optional<Operand>> ins = {
                Operand{rand(ta ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, seed++)},
                Operand{rand(tb ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, seed++), constant_b}};
            if (c) ins.push_back(Operand{rand(*c, seed++), constant_b});
            std::ostringstream what;
            what << "transA " << ta << " transB " << tb << " alpha " << alpha << " beta " << beta << " C "
                 << (c ? shape_str(*c) : "none") << (constant_b ? " constant" : " runtime");
            EXPECT_EQ(check_against_reference("Gemm", ins, gemm_attrs(alpha, beta, ta, tb), k, what.str()), 1)
                << what.str();
          }
}

TEST(CpuMatMul, PrimitivesAreCreatedOncePerShape) {
  testing::mm::PanelGemmOff off;  // these shapes would run octet's panel GEMM, no primitive
  Tensor w = rand({64, 48}, 1);
  testing::mm::DirectKernel kernel(testing::mm::one_node(
      "MatMul", {Operand{rand({5, 64}, 2), false, DimVector{Dim::symbol("m"), 64}}, Operand{w, true}}));
  // oneDNN 2.6 blocks fp32 weights for its AVX-512 kernels (brgemm); its AVX2 and SSE4.1
  // GEMMs read them plain, so there the graph's B is used as it is.
  if (dnnl_cpu::engine_isa() == IsaLevel::Avx512) {
    EXPECT_TRUE(kernel.matmul().prepacked());
  }
  EXPECT_EQ(kernel.matmul().primitives_created(), 0);
  Tensor a5 = rand({5, 64}, 3), a7 = rand({7, 64}, 4);
  kernel.run({&a5, &w}, 1);
  EXPECT_EQ(kernel.matmul().primitives_created(), 1);
  Tensor again = kernel.run({&a5, &w}, 1);
  EXPECT_EQ(kernel.matmul().primitives_created(), 1);  // same M: the cached primitive
  Tensor other = kernel.run({&a7, &w}, 1);
  EXPECT_EQ(kernel.matmul().primitives_created(), 2);  // a new M works and gets its own
  EXPECT_EQ(other.shape(), (std::vector<int64_t>{7, 48}));
  kernel.run({&a7, &w}, 2);
  EXPECT_EQ(kernel.matmul().primitives_created(), 3);  // primitives are sized for their thread count
  kernel.run({&a5, &w}, 1);
  EXPECT_EQ(kernel.matmul().primitives_created(), 3);
  EXPECT_EQ(kernel.matmul().reference_runs(), 0);
  for (const std::string& impl : kernel.matmul().implementations()) {
    EXPECT_EQ(impl.rfind("ref", 0), std::string::npos) << impl;
    std::cout << "[ impl     ] " << isa_name(dnnl_cpu::engine_isa()) << ": " << impl
              << (kernel.matmul().prepacked() ? " (B prepacked)" : " (B plain)") << "\n";
  }

  auto g = testing::mm::one_node("MatMul", {Operand{a5}, Operand{w, true}});
  Tensor want = testing::mm::session(g, KernelChoice::Reference).run({{"in0", a5}})[0].second;
  testing::mm::expect_close(again, want, 64, "cached primitive");
}

TEST(CpuMatMul, ConcurrentRunsOnOneSession) {
  // Symbolic batch and seq: each thread runs several shapes, so primitives are created
  // while the other thread runs.
  Operand x{rand({1, 1, 64}, 1), false, DimVector{Dim::symbol("batch"), Dim::symbol("seq"), 64}};
  auto g = testing::mm::one_node("MatMul", {x, Operand{rand({64, 96}, 2), true}});
  Session fast = testing::mm::session(g, KernelChoice::Optimized, 2), ref = testing::mm::session(g, KernelChoice::Reference);
  std::vector<Tensor> inputs, want;
  for (int64_t seq : {1, 5, 16, 33, 64, 7}) {
    inputs.push_back(rand({2, seq, 64}, static_cast<uint64_t>(seq)));
    want.push_back(ref.run({{"in0", inputs.back()}})[0].second);
  }
  testing::mm::expect_concurrent_runs_match(fast, inputs, want, 10, 64);
}

TEST(CpuMatMul, OneDnnRunsAtTheLevelOctetIsaAllows) {
  IsaLevel want = detected_isa();
  if (const char* env = std::getenv("OCTET_ISA"))
    if (auto asked = parse_isa(env)) want = std::min(want, *asked);
  dnnl_cpu::engine();
  EXPECT_EQ(dnnl_cpu::engine_isa(), want);
  const auto effective = dnnl::get_effective_cpu_isa();
  if (want == IsaLevel::Generic) {
    EXPECT_EQ(effective, dnnl::cpu_isa::sse41);
  } else if (want == IsaLevel::Avx2) {
    EXPECT_EQ(effective, dnnl::cpu_isa::avx2);
  }
  std::cout << "[ isa      ] OCTET_ISA level " << isa_name(want) << ", oneDNN effective ISA "
            << static_cast<int>(effective) << "\n";
}

// Each ISA level in a process of its own: the kernels' tests again under OCTET_ISA=level.
TEST(CpuMatMulIsa, EveryLevelInAChildProcess) {
  testing::expect_child_runs_pass_at_every_isa("CpuMatMul.*:CpuMatMulEpilogue.*:CpuMatMulGemv.*:CpuMatMulPanelGemm.*",
                                               "cpu_matmul_isa");
}

}  // namespace
}  // namespace octet
