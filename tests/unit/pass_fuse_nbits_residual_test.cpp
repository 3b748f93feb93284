// fuse_matmul_epilogue on com.microsoft.MatMulNBits: Add(Y, residual) -> octet.MatMulNBits
// with the residual as input 6. The fused node gives the unfused graph's bytes on the
// optimized kernels (decode GEMV at 1-4 rows with integer and float activations, prefill
// GEMM past 4 rows; 4- and 8-bit, with and without zero points and bias; every ISA level,
// 1 and 2 threads) and on the reference kernels; the near misses stay as they were.
#include <gtest/gtest.h>

#include "kernels/cpu/matmul_nbits.h"
#include "nbits_test_util.h"
#include "pass_test_util.h"
#include "quant/block_quant.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

struct Case {
  int bits = 4;
  bool symmetric = true;
  bool bias = false;
  int64_t rows = 1;
  int64_t K = 80, N = 40;        // K not a multiple of the block, N not of the 16-column panel
  bool residual_first = false;   // Add(residual, Y)
  bool y_is_output = false;      // Y also a graph output
  bool sibling = false;          // A read by a second MatMulNBits too
  std::vector<Dim> residual_dims;  // empty: Y's dims
  bool second_add = false;       // the sum read by another Add(., r)
};

std::shared_ptr<Graph> make(const Case& c) {
  PassGraph b(21);
  b.g->opset_imports["com.microsoft"] = 1;
  b.input("a", DType::Float32, {Dim(1), Dim(c.rows), Dim(c.K)});
  std::vector<Dim> rdims = c.residual_dims.empty() ? std::vector<Dim>{Dim(1), Dim(c.rows), Dim(c.N)} : c.residual_dims;
  b.input("r", DType::Float32, rdims);
  const int copies = c.sibling ? 2 : 1;
  for (int i = 0; i < copies; ++i) {
    const std::string id = std::to_string(i);
    const Tensor w = testing::nbits_weights(c.K, c.N, static_cast<uint32_t>(3 + i), 32);
    const quant::NbitsTensors t =
        quant::to_matmul_nbits(quant::quantize_blocks_rtn(w.data<float>(), c.K, c.N, c.bits, 32, c.symmetric));
    b.init("b" + id, t.b);
    b.init("s" + id, t.scales);
    std::vector<std::string> ins = {"a", "b" + id, "s" + id, "", "", ""};
    if (t.zero_points) b.init("z" + id, *t.zero_points), ins[3] = "z" + id;
    if (c.bias) b.init("bias" + id, testing::random_f32({c.N}, 11 + i)), ins[5] = "bias" + id;
    while (!ins.empty() && ins.back().empty()) ins.pop_back();
    b.node("MatMulNBits", ins, {"y" + id},
           {Attribute::make_int("K", c.K), Attribute::make_int("N", c.N), Attribute::make_int("bits", c.bits),
            Attribute::make_int("block_size", 32)},
           "com.microsoft");
  }
  if (c.residual_first) b.node("Add", {"r", "y0"}, {"out"});
  else b.node("Add", {"y0", "r"}, {"out"});
  if (c.second_add) {
    b.node("Add", {"out", "r"}, {"out2"});
    b.output("out2");
  } else {
    b.output("out");
  }
  if (c.y_is_output) b.output("y0");
  if (c.sibling) b.output("y1");
  return b.done();
}

NamedTensors inputs(const Case& c, const std::shared_ptr<Graph>& g) {
  const DimVector& rd = *g->value("r")->type.dims;
  std::vector<int64_t> rshape;
  for (const Dim& d : rd) rshape.push_back(d.value());
  return {{"a", testing::random_f32({1, c.rows, c.K}, 5, -4, 4)}, {"r", testing::random_f32(rshape, 6, -2, 2)}};
}

TEST(FuseNbitsResidual, BitIdenticalOnEveryPath) {
  for (int bits : {4, 8})
    for (bool symmetric : {true, false})
      for (bool bias : {false, true})
        for (int64_t rows : {1, 3, 8}) {
          Case c;
          c.bits = bits, c.symmetric = symmetric, c.bias = bias, c.rows = rows, c.residual_first = rows == 3;
          const std::string label = "bits " + std::to_string(bits) + (symmetric ? " sym" : " asym") +
                                    (bias ? " bias" : "") + " rows " + std::to_string(rows);
          SCOPED_TRACE(label);
          std::shared_ptr<Graph> original = make(c);
          auto fused = testing::rewrite_and_compare([&] { return make(c); }, passes::fuse_matmul_epilogue(),
                                                    inputs(c, original), 0.0);
          ASSERT_EQ(fused->node_count(), 1u);
          const Node* n = fused->nodes()[0];
          EXPECT_EQ(n->domain(), "octet");
          EXPECT_EQ(n->op_type(), "MatMulNBits");
          ASSERT_EQ(n->inputs().size(), 7u);
          EXPECT_EQ(n->input(6), fused->value("r"));
          const NamedTensors in = inputs(c, original);
          testing::expect_nbits_rewrite_identical(fused, original, in, label);
        }
}

void expect_untouched(const Case& c, const std::string& what) {
  SCOPED_TRACE(what);
  testing::expect_pass_leaves_alone(*make(c), passes::fuse_matmul_epilogue(), "MatMulNBits", "octet");
}

TEST(FuseNbitsResidual, NearMissesStayApart) {
  Case c;
  c.y_is_output = true;
  expect_untouched(c, "Y also a graph output");
  c = Case{};
  c.sibling = true;
  expect_untouched(c, "A read by a sibling MatMulNBits (merge_sibling_matmuls' to take)");
  c = Case{};
  c.residual_dims = {Dim(c.N)};
  expect_untouched(c, "a residual that broadcasts");
  c = Case{};
  c.residual_dims = {Dim(1), Dim(1), Dim(c.N)};
  c.rows = 3;
  expect_untouched(c, "a residual of another shape");
}

TEST(FuseNbitsResidual, OneResidualOnly) {
  // The fused node's sum read by another Add: that Add stays (one residual per node).
  Case c;
  c.second_add = true;
  auto g = make(c);
  run_pass(*g, passes::fuse_matmul_epilogue());
  EXPECT_EQ(count_ops(*g, "MatMulNBits", "octet"), 1);
  EXPECT_EQ(count_ops(*g, "Add"), 1);
}

}  // namespace
}  // namespace octet
