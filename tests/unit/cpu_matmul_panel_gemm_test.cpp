// The float32 panel GEMM of MatMul / Gemm / octet.MatMulBias (src/kernels/cpu/
// dnnl_matmul_panel_gemm.cpp, simd/f32_panel_gemm_avx512.cpp) against the reference kernels:
// M from just past the GEMV's rows to DINOv2's 257 (one short of, at and past a 6-row
// register block), K below, at and past the 128-row chunk, N off the 64-column panel, every
// epilogue (bias, both GeLUs, residuals of the output's shape or one row), Gemm's
// transposed B and C, `split` parts, one and two threads (rows shared, or panels where
// there are fewer row blocks than threads) with bit-identical results, every ISA level in
// process (the panel GEMM at AVX-512, oneDNN on the same packed B below it). Which kernel
// ran is read from the state's counters.
#include <gtest/gtest.h>

#include <cstring>

#include "cpu_matmul_test_util.h"
#include "kernels/cpu/dnnl_common.h"
#include "kernels/cpu/simd/f32_panel_gemm.h"

namespace octet {
namespace {

using testing::mm::Operand;
using testing::mm::rand;
using testing::mm::dims_label;
using testing::mm::shape_str;

// oneDNN packs B as 64-column panels only for its AVX-512 matmul (the GEMV's test says more).
bool panels_possible() { return dnnl_cpu::engine_isa() == IsaLevel::Avx512; }

void expect_same_bits(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  EXPECT_EQ(std::memcmp(a.raw(), b.raw(), static_cast<size_t>(a.numel()) * sizeof(float)), 0) << what;
}

struct Case {
  std::string op = "MatMul", domain;
  std::vector<std::optional<Operand>> ins;
  std::vector<Attribute> attrs;
  int64_t k = 0;
  bool panel_gemm = true;  // whether the panel GEMM should take it (at AVX-512)
  std::shared_ptr<Graph> graph = nullptr;  // built from the fields above when null
};

// Runs `c` through the kernel directly at every ISA level and with 1 and 2 threads against
// the reference kernel, every output; checks where the panel GEMM ran and that two threads
// give the same bits as one.
void check(const Case& c, const std::string& what) {
  auto g = c.graph ? c.graph : testing::mm::one_node(c.op, c.ins, c.attrs, c.domain);
  const NamedTensors want = testing::mm::session(g, KernelChoice::Reference).run(testing::mm::feeds(c.ins));
  std::vector<const Tensor*> tensors;
  for (const auto& op : c.ins) tensors.push_back(op ? &op->value : nullptr);
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    std::vector<Tensor> one_thread;
    for (int threads : {1, 2}) {
      const std::string label = what + " at " + isa_name(level) + ", " + std::to_string(threads) + " threads";
      testing::mm::DirectKernel kernel(g);
      const std::vector<Tensor> got = kernel.run_all(tensors, threads);
      ASSERT_EQ(got.size(), want.size()) << label;
      for (size_t i = 0; i < got.size(); ++i) testing::mm::expect_close(got[i], want[i].second, c.k, label);
      const bool expected = c.panel_gemm && panels_possible() && level == IsaLevel::Avx512;
      EXPECT_EQ(kernel.matmul().panel_gemm_runs(), expected ? 1 : 0) << label;
      if (expected) {
        EXPECT_EQ(kernel.matmul().reference_runs(), 0) << label;  // elsewhere oneDNN declines some Gemm Cs
      }
      if (threads == 1) one_thread = got;
      else
        for (size_t i = 0; i < got.size(); ++i) expect_same_bits(got[i], one_thread[i], label + ": 1 vs 2 threads");
    }
  }
}

TEST(CpuMatMulPanelGemm, EdgeShapes) {
  uint64_t seed = 1;
  for (int64_t m : {int64_t{cpu::kF32GemvMaxRows} + 1, int64_t{cpu::kF32GemmRows}, int64_t{13}, int64_t{257}})
    for (int64_t k : {1, 7, 128, 129, 300})
      for (int64_t n : {1, 63, 65, 130}) {
        const std::vector<int64_t> a = {m, k};
        check({"MatMul", "", {Operand{rand(a, seed++)}, Operand{rand({k, n}, seed++), true}}, {}, k},
              dims_label(a, k, n));
      }
}

TEST(CpuMatMulPanelGemm, SharedOverThreadsByRowsOrPanels) {
  // Rank 3 A; 5 rows (one register block: two threads split the 16 panels, the last one 40
  // columns), 13 rows (three blocks over two threads), 600 rows of a K past four chunks
  // (each thread's 300 rows in two passes of A).
  for (auto [a, n] : {std::pair<std::vector<int64_t>, int64_t>{{1, 5, 576}, 1000},
                      {{1, 13, 576}, 1000}, {{2, 300, 520}, 200}}) {
    const int64_t k = a.back();
    check({"MatMul", "", {Operand{rand(a, 7)}, Operand{rand({k, n}, 8), true}}, {}, k}, dims_label(a, k, n));
  }
}

TEST(CpuMatMulPanelGemm, MatMulBiasEveryEpilogue) {
  for (const testing::mm::PackedCase& c : testing::mm::epilogue_cases({7, 257}))
    check({c.op, c.domain, c.ins, c.attrs, c.k, c.taken}, c.label);
}

TEST(CpuMatMulPanelGemm, GemmBiasRowAndFullC) {
  for (const testing::mm::PackedCase& c : testing::mm::gemm_c_cases(20))
    check({c.op, c.domain, c.ins, c.attrs, c.k, c.taken}, c.label);
}

// octet.MatMulBias writing Y's columns as `split` parts (the merged Q/K/V projection).
std::shared_ptr<Graph> split_graph(const Tensor& a, const Tensor& w, const Tensor& bias,
                                   const std::vector<int64_t>& split) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 17;
  g->opset_imports["octet"] = 1;
  g->add_input("in0", TensorType(DType::Float32, DimVector(a.shape().begin(), a.shape().end())));
  g->add_initializer("in1", std::make_shared<Tensor>(w));
  g->add_initializer("in2", std::make_shared<Tensor>(bias));
  std::vector<std::string> outs;
  for (size_t i = 0; i < split.size(); ++i) outs.push_back(std::string("y").append(std::to_string(i)));
  g->add_node("MatMulBias", {"in0", "in1", "in2"}, outs, {Attribute::make_ints("split", split)}, "octet",
              "node_under_test");
  for (const std::string& o : outs) g->mark_output(g->value(o));
  infer_graph(*g);
  return g;
}

TEST(CpuMatMulPanelGemm, SplitPartsOnPanelBoundaries) {
  const int64_t m = 37, k = 96;
  // Parts starting on 64-column boundaries (the last one short): the panel GEMM writes each
  // panel into its part. A part starting mid-panel: oneDNN's Y, copied out.
  for (auto [split, panel_gemm] : {std::pair<std::vector<int64_t>, bool>{{64, 128, 64}, true},
                                   {{128, 70}, true}, {{100, 156}, false}}) {
    int64_t n = 0;
    for (int64_t part : split) n += part;
    const Tensor a = rand({m, k}, 1), w = rand({k, n}, 2), bias = rand({n}, 3);
    Case c{"MatMulBias", "octet", {Operand{a}, Operand{w, true}, Operand{bias, true}}, {}, k, panel_gemm};
    c.graph = split_graph(a, w, bias, split);
    check(c, "split " + shape_str(split));
  }
}

TEST(CpuMatMulPanelGemm, SwitchedOffRunsOneDnn) {
  if (!panels_possible()) GTEST_SKIP() << "oneDNN keeps B plain at this ISA";
  testing::mm::PanelGemmOff off;
  check({"MatMul", "", {Operand{rand({20, 64}, 5)}, Operand{rand({64, 96}, 6), true}}, {}, 64, false}, "switched off");
}

}  // namespace
}  // namespace octet
