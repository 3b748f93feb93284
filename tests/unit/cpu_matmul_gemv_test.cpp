// The float32 decode GEMV of MatMul / Gemm / octet.MatMulBias (src/kernels/cpu/
// dnnl_matmul_gemv.cpp, simd/f32_gemv_avx512.cpp) against the reference kernels: K odd and
// below one 16-row block, N not a multiple of the 64-column panel (one column, one short of
// a panel, one past it), M = 1..kF32GemvMaxRows from A of rank 1..3, bias, both GeLUs and
// residuals of the output's shape or one row, Gemm's transposed B and C, one and two threads
// (B big enough to be shared), every ISA level in process (the GEMV at AVX-512, oneDNN on
// the same packed B below it). That the GEMV and not oneDNN ran is seen in the state: it
// creates no oneDNN primitive and does not count as the panel GEMM. Shapes it must not take
// (M past the bound, Gemm's alpha, a C repeated over columns) go elsewhere, and the layout check accepts only the panels f32_gemv.h reads.
#include <gtest/gtest.h>


#include "cpu_matmul_test_util.h"
#include "kernels/cpu/dnnl_common.h"
#include "kernels/cpu/simd/f32_gemv.h"

namespace octet {
namespace {

using testing::mm::Operand;
using testing::mm::rand;
using testing::mm::dims_label;

// The GEMV runs where oneDNN packed B as 64-column panels (its AVX-512 matmul; under
// OCTET_ISA=avx2 or generic it keeps B plain and everything stays on oneDNN).
bool gemv_possible() { return dnnl_cpu::engine_isa() == IsaLevel::Avx512; }

struct Case {
  std::string op = "MatMul", domain;
  std::vector<std::optional<Operand>> ins;
  std::vector<Attribute> attrs;
  int64_t k = 0;
  bool gemv = true;  // whether the GEMV should take it (at AVX-512)
};

// Runs `c` through the kernel directly (to read its state) at every ISA level and with 1
// and 2 threads, against the reference kernel; checks the GEMV ran exactly where expected.
void check(const Case& c, const std::string& what) {
  auto g = testing::mm::one_node(c.op, c.ins, c.attrs, c.domain);
  const Tensor want = testing::mm::session(g, KernelChoice::Reference).run(testing::mm::feeds(c.ins))[0].second;
  std::vector<const Tensor*> tensors;
  for (const auto& op : c.ins) tensors.push_back(op ? &op->value : nullptr);
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    for (int threads : {1, 2}) {
      const std::string label = what + " at " + isa_name(level) + ", " + std::to_string(threads) + " threads";
      testing::mm::DirectKernel kernel(g);
      const Tensor got = kernel.run(tensors, threads);
      testing::mm::expect_close(got, want, c.k, label);
      const bool gemv = c.gemv && gemv_possible() && level == IsaLevel::Avx512;
      EXPECT_EQ(kernel.matmul().gemv_panels() != nullptr, gemv_possible()) << label;
      // The GEMV creates no oneDNN primitive and does not fall back to the reference kernel;
      // anything else does one or the other (oneDNN declines some of Gemm's C broadcasts).
      const bool ran_gemv = kernel.matmul().primitives_created() == 0 && kernel.matmul().reference_runs() == 0 &&
                            kernel.matmul().panel_gemm_runs() == 0;
      EXPECT_EQ(ran_gemv, gemv) << label << (gemv ? ": GEMV expected" : ": GEMV not expected");
    }
  }
}

TEST(CpuMatMulGemv, EdgeShapesEveryRowCount) {
  uint64_t seed = 1;
  for (int64_t k : {1, 7, 16, 33, 200})
    for (int64_t n : {1, 5, 63, 64, 65, 130})
      for (int64_t m = 1; m <= cpu::kF32GemvMaxRows; ++m) {
        const std::vector<int64_t> a = {m, k};
        check({"MatMul", "", {Operand{rand(a, seed++)}, Operand{rand({k, n}, seed++), true}}, {}, k},
              dims_label(a, k, n));
      }
}

TEST(CpuMatMulGemv, RanksOfAAndSharedAcrossThreads) {
  // Rank 1 (one row, the output drops it) and rank 3; B of 576 x 1000 (2.3 MB, 16 panels,
  // the last one 40 columns) is shared over both threads in several claims.
  for (auto [a, n] : {std::pair<std::vector<int64_t>, int64_t>{{576}, 1000}, {{1, 1, 576}, 1000},
                      {{2, 2, 576}, 1000}, {{1, 3, 576}, 130}}) {
    const int64_t k = a.back();
    check({"MatMul", "", {Operand{rand(a, 7)}, Operand{rand({k, n}, 8), true}}, {}, k}, dims_label(a, k, n));
  }
}

TEST(CpuMatMulGemv, MatMulBiasEveryEpilogue) {
  for (const testing::mm::PackedCase& c : testing::mm::epilogue_cases({1, 3}))
    check({c.op, c.domain, c.ins, c.attrs, c.k, c.taken}, c.label);
}

TEST(CpuMatMulGemv, GemmBiasRowAndFullC) {
  for (const testing::mm::PackedCase& c : testing::mm::gemm_c_cases(2))
    check({c.op, c.domain, c.ins, c.attrs, c.k, c.taken}, c.label);
}

TEST(CpuMatMulGemv, MoreRowsLeaveTheGemv) {
  // M just past the bound, and the encoders' prompt-sized M: the panel GEMM's
  // (cpu_matmul_panel_gemm_test.cpp) or, at other ISA levels, oneDNN's.
  for (int64_t m : {int64_t{cpu::kF32GemvMaxRows} + 1, int64_t{128}}) {
    const std::vector<int64_t> a = {1, m, 64};
    check({"MatMul", "", {Operand{rand(a, 5)}, Operand{rand({64, 96}, 6), true}}, {}, 64, false},
          dims_label(a, 64, 96));
  }
  // A runtime B (attention's products) is never packed.
  testing::mm::DirectKernel runtime(
      testing::mm::one_node("MatMul", {Operand{rand({1, 64}, 1)}, Operand{rand({64, 96}, 2)}}));
  EXPECT_EQ(runtime.matmul().gemv_panels(), nullptr);
}

TEST(CpuMatMulGemv, SwitchedOffRunsOneDnn) {
  if (!gemv_possible()) GTEST_SKIP() << "oneDNN keeps B plain at this ISA";
  dnnl_cpu::set_f32_gemv_enabled(false);
  check({"MatMul", "", {Operand{rand({1, 64}, 5)}, Operand{rand({64, 96}, 6), true}}, {}, 64, false}, "switched off");
  dnnl_cpu::set_f32_gemv_enabled(true);
}

TEST(CpuMatMulGemv, LayoutCheckAcceptsOnlyTheGemvPanels) {
  using tag = dnnl::memory::format_tag;
  auto desc = [](int64_t k, int64_t n, tag t) { return dnnl::memory::desc({k, n}, dnnl::memory::data_type::f32, t); };
  EXPECT_EQ(dnnl_cpu::gemv_panel_rows(desc(576, 960, tag::BA16a64b)), 576);
  EXPECT_EQ(dnnl_cpu::gemv_panel_rows(desc(33, 17, tag::BA16a64b)), 48);  // K padded to the 16-row block
  EXPECT_EQ(dnnl_cpu::gemv_panel_rows(desc(576, 960, tag::ab)), 0);
  EXPECT_EQ(dnnl_cpu::gemv_panel_rows(desc(576, 960, tag::ba)), 0);
  EXPECT_EQ(dnnl_cpu::gemv_panel_rows(desc(576, 960, tag::BA16a48b)), 0);
  EXPECT_EQ(dnnl_cpu::gemv_panel_rows(desc(576, 960, tag::BA16a32b)), 0);
  EXPECT_EQ(dnnl_cpu::gemv_panel_rows(
                dnnl::memory::desc({576, 960}, dnnl::memory::data_type::bf16, tag::BA16a64b)), 0);
}

}  // namespace
}  // namespace octet
