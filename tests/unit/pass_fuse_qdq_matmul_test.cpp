// fuse_qdq_matmul's fold of a smoothing Mul (SmoothQuant's explicit 1/s): Mul(x, c) ->
// Q -> DQ -> MatMul(DQ(W)) becomes one octet.QMatMul with a_channel_scale = c, computing
// what the Q/DQ graph computes; a Mul with another reader stays.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "qmatmul_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;
using testing::ramp;

constexpr int64_t K = 24, N = 10;

std::shared_ptr<Graph> smoothed_matmul(bool mul_also_output, bool c_rank2) {
  PassGraph b;
  b.input("x", DType::Float32, {2, 7, K});
  Tensor c = ramp(DType::Float32, {K}, 3, 0.5f);
  for (int64_t i = 0; i < K; ++i) c.mutable_data<float>()[i] += 1.0f;  // in [0.5, 1.5]
  b.init("c", c_rank2 ? Tensor(DType::Float32, {1, K}, c.buffer()) : c);
  b.init("s", Tensor::scalar<float>(3.0f / 255));
  b.init("z", Tensor::scalar<uint8_t>(128));
  Tensor w(DType::Int8, {K, N});
  for (int64_t i = 0; i < w.numel(); ++i) w.mutable_data<int8_t>()[i] = static_cast<int8_t>((i * 37) % 255 - 127);
  b.init("w", w);
  b.init("ws", ramp(DType::Float32, {N}, 4, 0.001f));
  b.node("Mul", {"x", "c"}, {"xs"});
  b.node("QuantizeLinear", {"xs", "s", "z"}, {"xq"});
  b.node("DequantizeLinear", {"xq", "s", "z"}, {"xd"});
  b.node("DequantizeLinear", {"w", "ws"}, {"wd"}, {Attribute::make_int("axis", 1)});
  b.node("MatMul", {"xd", "wd"}, {"y"});
  b.output("y");
  if (mul_also_output) b.output("xs");
  return b.done();
}

void expect_fold(bool mul_also_output, bool c_rank2) {
  std::shared_ptr<Graph> original = smoothed_matmul(mul_also_output, c_rank2);
  std::shared_ptr<Graph> lowered = smoothed_matmul(mul_also_output, c_rank2);
  optimize(*lowered);
  ASSERT_EQ(count_ops(*lowered, "QMatMul", "octet"), 1);
  const Node* qmm = nullptr;
  for (const Node* n : lowered->nodes())
    if (n->op_type() == "QMatMul") qmm = n;
  if (mul_also_output) {
    EXPECT_EQ(count_ops(*lowered, "Mul"), 1);
    EXPECT_LE(qmm->inputs().size(), 8u);
  } else {
    EXPECT_EQ(count_ops(*lowered, "Mul"), 0);
    ASSERT_EQ(qmm->inputs().size(), 9u);
    EXPECT_EQ(qmm->input(8)->constant()->rank(), 1);
  }
  const NamedTensors in{{"x", ramp(DType::Float32, {2, 7, K}, 1, 2.0f)}};
  const Tensor want = Session(std::shared_ptr<const Graph>(original), {}).run(in)[0].second;
  testing::qmm::expect_close(testing::run_graph(lowered, in)[0].second, want, "lowered vs Q/DQ graph");
}

TEST(FuseQdqMatmul, SmoothingMulFoldsIntoTheInputQuantization) { expect_fold(false, false); }
TEST(FuseQdqMatmul, SmoothingMulOfRankTwoFoldsAsAVector) { expect_fold(false, true); }
TEST(FuseQdqMatmul, SmoothingMulWithAnotherReaderStays) { expect_fold(true, false); }

}  // namespace
}  // namespace octet
