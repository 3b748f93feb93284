// octet.MatMulBias with GeLU(erf) at a big Y, run as column panels of the packed B
// (src/kernels/cpu/dnnl_matmul_panels.cpp): the width rule, and at every ISA level (one
// child process per OCTET_ISA) and at 1 and 2 threads, the output against the reference
// kernel and bit for bit against the one-product path (the panels switched off). Shapes: K
// below and off the 16-row block, N off the 64-column block (a short last panel ending in
// a partial block), DINOv2-S's FFN up-projection. Where the panels must run (B packed as
// 64-column panels: oneDNN at AVX-512) the state's counter says they did; below AVX-512
// oneDNN keeps another layout and the one product runs.
#include <gtest/gtest.h>

#include <cstring>

#include "cpu_matmul_test_util.h"
#include "isa_child_runs.h"
#include "kernels/cpu/dnnl_common.h"

namespace octet {
namespace {

using testing::mm::Operand;
using testing::mm::rand;

std::vector<Attribute> gelu() { return {Attribute::make_string("activation", "gelu")}; }

struct Shape {
  int64_t m, k, n;
};

std::string label(const Shape& s, int threads) {
  return std::to_string(s.m) + "x" + std::to_string(s.k) + "x" + std::to_string(s.n) + " at " +
         std::to_string(threads) + " thread(s), " + isa_name(dnnl_cpu::engine_isa());
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.numel() * sizeof(float)) == 0;
}

TEST(CpuMatMulGeluPanels, WidthFollowsEachThreadsShareOfY) {
  // DINOv2-S's up-projection: Y 1.6 MB at 1 thread; A (257 x 384) and a 384-column panel of
  // B and Y fit in 1 MiB. At 2 threads each core writes 0.8 MB: the one product.
  EXPECT_EQ(dnnl_cpu::gelu_panel_width(257, 384, 1536, 1), 384);
  EXPECT_EQ(dnnl_cpu::gelu_panel_width(257, 384, 1536, 2), 0);
  EXPECT_EQ(dnnl_cpu::gelu_panel_width(128, 384, 1536, 1), 0);  // MiniLM: Y 0.8 MB
  EXPECT_EQ(dnnl_cpu::gelu_panel_width(600, 40, 1040, 2), 768);  // 300 rows per thread
  EXPECT_EQ(dnnl_cpu::gelu_panel_width(4096, 8192, 4096, 1), 64);  // never below one block
  EXPECT_EQ(dnnl_cpu::gelu_panel_width(8192, 4, 64, 1), 0);  // one block: nothing to split
}

TEST(CpuMatMulGeluPanels, MatchReferenceAndTheOneProductBitForBit) {
  testing::mm::PanelGemmOff off;  // the panel GEMM would take these shapes
  uint64_t seed = 7;
  for (const Shape& s : {Shape{257, 40, 1040}, Shape{600, 40, 1040}, Shape{257, 384, 1536}, Shape{1100, 17, 300}}) {
    const std::vector<std::optional<Operand>> ins = {Operand{rand({1, s.m, s.k}, seed++)},
                                                     Operand{rand({s.k, s.n}, seed++), true},
                                                     Operand{rand({s.n}, seed++), true}};
    auto g = testing::mm::one_node("MatMulBias", ins, gelu(), "octet");
    const Tensor want = testing::mm::session(g, KernelChoice::Reference).run(testing::mm::feeds(ins))[0].second;
    std::vector<const Tensor*> tensors;
    for (const auto& op : ins) tensors.push_back(&op->value);
    for (int threads : {1, 2}) {
      const std::string what = label(s, threads);
      testing::mm::DirectKernel panels(g), whole(g);
      const Tensor got = panels.run(tensors, threads);
      dnnl_cpu::set_gelu_panels_enabled(false);
      const Tensor one_product = whole.run(tensors, threads);
      dnnl_cpu::set_gelu_panels_enabled(true);
      testing::mm::expect_close(got, want, s.k, what);
      EXPECT_TRUE(same_bits(got, one_product)) << what;
      const bool expected = dnnl_cpu::engine_isa() == IsaLevel::Avx512 &&
                            dnnl_cpu::gelu_panel_width(s.m, s.k, s.n, threads) > 0;
      EXPECT_EQ(panels.matmul().gelu_panel_runs(), expected ? 1 : 0) << what;
      EXPECT_EQ(whole.matmul().gelu_panel_runs(), 0) << what;
      EXPECT_EQ(panels.matmul().reference_runs(), 0) << what;
    }
  }
}

TEST(CpuMatMulGeluPanels, OnlyTheOwnGeluTakesThem) {
  testing::mm::PanelGemmOff off;  // the panel GEMM would take these shapes
  // GeLU(tanh) (oneDNN's post-op) and GeLU with a residual (the post-op before the add)
  // keep the one product at a Y that would be split.
  const Shape s{600, 40, 1040};
  for (bool tanh : {true, false}) {
    std::vector<std::optional<Operand>> ins = {Operand{rand({s.m, s.k}, 1)}, Operand{rand({s.k, s.n}, 2), true},
                                               Operand{rand({s.n}, 3), true}};
    if (!tanh) ins.push_back(Operand{rand({s.m, s.n}, 4)});
    const std::vector<Attribute> attrs = {Attribute::make_string("activation", tanh ? "gelu_tanh" : "gelu")};
    testing::mm::DirectKernel kernel(testing::mm::one_node("MatMulBias", ins, attrs, "octet"));
    std::vector<const Tensor*> tensors;
    for (const auto& op : ins) tensors.push_back(&op->value);
    kernel.run(tensors);
    EXPECT_EQ(kernel.matmul().gelu_panel_runs(), 0) << (tanh ? "gelu_tanh" : "gelu + residual");
  }
}

// oneDNN's ISA is fixed per process: every level in a child process of its own.
TEST(CpuMatMulGeluPanels, EveryIsaLevel) {
  testing::expect_child_runs_pass_at_every_isa("CpuMatMulGeluPanels.*", "cpu_matmul_gelu_panels");
}

}  // namespace
}  // namespace octet
