// fuse_blocked_dq_matmul: MatMul on a blocked DequantizeLinear weight (int4/uint4/int8/uint8,
// axis 0) becomes com.microsoft.MatMulNBits computing the same product, and the
// DequantizeLinear and its constants go in the same rewrite unless something else reads
// them; anything MatMulNBits cannot hold (block not a power of 2 >= 16, another axis) is left alone.
#include "pass_test_util.h"
#include "quant/block_quant.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

struct Spec {
  int bits = 4;
  bool symmetric = true;
  int64_t K = 40, N = 9, block = 16, axis = 0;
};

// `also_read`: the dequantized weight is a graph output too (another reader of the DQ).
std::shared_ptr<Graph> make(const Spec& s, bool also_read = false) {
  const Tensor w = testing::ramp(DType::Float32, {s.K, s.N}, 3, 1.0f);
  const quant::BlockedDq dq = quant::to_blocked_dq(
      quant::quantize_blocks_rtn(w.data<float>(), s.K, s.N, s.bits, s.block, s.symmetric));
  PassGraph b(21);
  b.input("a", DType::Float32, {Dim(2), Dim(3), Dim(s.K)});
  b.init("q", dq.q);
  b.init("s", dq.scales);
  std::vector<std::string> ins = {"q", "s"};
  if (dq.zero_points) b.init("z", *dq.zero_points), ins.push_back("z");
  b.node("DequantizeLinear", ins, {"w"},
         {Attribute::make_int("axis", s.axis), Attribute::make_int("block_size", s.block)});
  b.node("MatMul", {"a", "w"}, {"y"});
  b.output("y");
  if (also_read) b.output("w");
  return b.done();
}

NamedTensors input(const Spec& s) { return {{"a", testing::ramp(DType::Float32, {2, 3, s.K}, 5)}}; }

TEST(PassFuseBlockedDqMatMul, EveryWeightTypeBecomesMatMulNBits) {
  for (int bits : {4, 8})
    for (bool sym : {true, false})
      for (int64_t block : {16, 32}) {
        const Spec s{bits, sym, 40, 9, block};
        auto g = testing::rewrite_and_compare([&] { return make(s); }, passes::fuse_blocked_dq_matmul(), input(s), 1e-5);
        EXPECT_EQ(count_ops(*g, "MatMulNBits", "com.microsoft"), 1) << bits << " " << sym << " " << block;
        EXPECT_EQ(count_ops(*g, "MatMul"), 0);
      }
}

// The quantized weight is never held twice: without another reader the DequantizeLinear and
// q / s / z leave with the MatMul (no dead-code pass runs here); with one they stay.
TEST(PassFuseBlockedDqMatMul, DropsTheDequantizeLinearItReplaces) {
  for (bool sym : {true, false})
    for (bool also_read : {false, true}) {
      const Spec s{4, sym, 40, 9, 16};
      auto g = testing::rewrite_and_compare([&] { return make(s, also_read); }, passes::fuse_blocked_dq_matmul(),
                                            input(s), 1e-5);
      const std::string at = std::string(sym ? "sym" : "asym") + (also_read ? ", w also read" : "");
      EXPECT_EQ(count_ops(*g, "DequantizeLinear"), also_read ? 1 : 0) << at;
      EXPECT_EQ(g->find_value("q") != nullptr, also_read) << at;
      EXPECT_EQ(g->find_value("s") != nullptr, also_read) << at;
      if (!sym) {
        EXPECT_EQ(g->find_value("z") != nullptr, also_read) << at;
      }
    }
}

TEST(PassFuseBlockedDqMatMul, LeavesWhatMatMulNBitsCannotHold) {
  const Spec odd_block{4, true, 40, 9, 24};
  auto g = testing::rewrite_and_compare([&] { return make(odd_block); }, passes::fuse_blocked_dq_matmul(),
                                        input(odd_block), 0.0);
  EXPECT_EQ(count_ops(*g, "MatMulNBits", "com.microsoft"), 0);
  EXPECT_EQ(count_ops(*g, "MatMul"), 1);
}

}  // namespace
}  // namespace octet
