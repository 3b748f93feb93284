// merge_sibling_matmuls: MatMulNBits (or constant-weight float MatMul) nodes reading one A
// become one product with N concatenated and a Split. The merged MatMulNBits must give
// the separate products' values bit for bit, on the decode GEMV (1-4 rows: float and
// integer activations) and the prefill GEMM, at every ISA level and 1 and 2 threads; the
// near misses (another A, a weight that is not constant, other bits or block size, a
// bias) are left alone or merged only with what matches them.
#include <gtest/gtest.h>


#include "kernels/cpu/matmul_nbits.h"
#include "kernels/dispatch/cpu_features.h"
#include "nbits_test_util.h"
#include "pass_test_util.h"
#include "quant/block_quant.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

struct Proj {
  int64_t N = 16;
  int bits = 4;
  int64_t block = 32;
  bool symmetric = false;
  std::string a = "a";       // the input it reads
  bool constant_b = true;    // false: B is a graph input
};

constexpr int64_t kK = 80;  // not a multiple of the blocks: the last block is padded

// One MatMulNBits per projection, each output a graph output.
std::shared_ptr<Graph> make(const std::vector<Proj>& projs, const std::vector<int64_t>& rows, int64_t opset = 21) {
  PassGraph b(opset);
  b.input("a", DType::Float32, {Dim(rows[0]), Dim(rows[1]), Dim(kK)});
  b.input("a2", DType::Float32, {Dim(rows[0]), Dim(rows[1]), Dim(kK)});
  for (size_t i = 0; i < projs.size(); ++i) {
    const Proj& p = projs[i];
    const std::string id = std::to_string(i);
    const Tensor w = testing::ramp(DType::Float32, {kK, p.N}, static_cast<int>(3 + i), 1.0f);
    const quant::NbitsTensors t =
        quant::to_matmul_nbits(quant::quantize_blocks_rtn(w.data<float>(), kK, p.N, p.bits, p.block, p.symmetric));
    if (p.constant_b) b.init("b" + id, t.b);
    else b.input("b" + id, DType::UInt8, {Dim(t.b.shape()[0]), Dim(t.b.shape()[1]), Dim(t.b.shape()[2])});
    b.init("s" + id, t.scales);
    std::vector<std::string> ins = {p.a, "b" + id, "s" + id};
    if (t.zero_points) b.init("z" + id, *t.zero_points), ins.push_back("z" + id);
    b.node("MatMulNBits", ins, {"y" + id},
           {Attribute::make_int("K", kK), Attribute::make_int("N", p.N), Attribute::make_int("bits", p.bits),
            Attribute::make_int("block_size", p.block)},
           "com.microsoft");
    b.output("y" + id);
  }
  b.g->opset_imports["com.microsoft"] = 1;
  return b.done();
}

NamedTensors inputs(const std::shared_ptr<Graph>& g, const std::vector<int64_t>& rows) {
  NamedTensors in = {{"a", testing::ramp(DType::Float32, {rows[0], rows[1], kK}, 5)},
                     {"a2", testing::ramp(DType::Float32, {rows[0], rows[1], kK}, 6)}};
  for (Value* v : g->inputs())
    if (v->name()[0] == 'b') {  // a non-constant B: the bytes the constant would have held
      const DimVector& d = *v->type.dims;
      Tensor t(DType::UInt8, {d[0].value(), d[1].value(), d[2].value()});
      for (int64_t i = 0; i < t.numel(); ++i) t.mutable_raw()[i] = static_cast<uint8_t>(i * 37 + 11);
      in.push_back({v->name(), t});
    }
  return in;
}

// Merges, then runs both graphs on the optimized kernels: the same bytes everywhere.
std::shared_ptr<Graph> merge_and_compare(const std::vector<Proj>& projs, const std::vector<int64_t>& rows) {
  std::shared_ptr<Graph> original = make(projs, rows), merged = make(projs, rows);
  run_pass(*merged, passes::merge_sibling_matmuls());
  EXPECT_TRUE(verify_graph(*merged).empty());
  testing::expect_nbits_rewrite_identical(merged, original, inputs(original, rows),
                                          "rows " + std::to_string(rows[0] * rows[1]));
  return merged;
}

TEST(PassMergeSiblingMatMuls, QkvAndGateUpAreBitIdentical) {
  // q/k/v-like (N not a multiple of the 16-column panel among them), 4 and 8 bits, with
  // and without zero points; decode rows 1 and 3, prefill 2 x 5.
  for (int bits : {4, 8})
    for (bool sym : {false, true})
      for (std::vector<int64_t> rows : {std::vector<int64_t>{1, 1}, {1, 3}, {2, 5}}) {
        const std::vector<Proj> projs = {{48, bits, 32, sym}, {9, bits, 32, sym}, {23, bits, 32, sym}};
        auto g = merge_and_compare(projs, rows);
        EXPECT_EQ(count_ops(*g, "MatMulNBits", "com.microsoft"), 1) << bits << " " << sym;
        EXPECT_EQ(count_ops(*g, "Split"), 1);
        EXPECT_EQ(g->initializers().size(), sym ? 3u : 4u) << "the old weights are gone, the split sizes came";
      }
}

TEST(PassMergeSiblingMatMuls, NearMissesStayApart) {
  const std::vector<int64_t> rows = {1, 1};
  // Another input: nothing to merge.
  auto g = merge_and_compare({{16}, {Proj{16, 4, 32, false, "a2"}}}, rows);
  EXPECT_EQ(count_ops(*g, "MatMulNBits", "com.microsoft"), 2);
  // A B that is not constant: left out; the other two merge.
  g = merge_and_compare({{16}, {Proj{16, 4, 32, false, "a", false}}, {32}}, rows);
  EXPECT_EQ(count_ops(*g, "MatMulNBits", "com.microsoft"), 2);
  EXPECT_EQ(count_ops(*g, "Split"), 1);
  // Other bits, other block size: groups of their own.
  g = merge_and_compare({{16, 4, 32}, {16, 8, 32}, {16, 4, 64}}, rows);
  EXPECT_EQ(count_ops(*g, "MatMulNBits", "com.microsoft"), 3);
  g = merge_and_compare({{16, 4, 32}, {16, 8, 32}, {16, 4, 64}, {8, 8, 32}, {24, 4, 64}}, rows);
  EXPECT_EQ(count_ops(*g, "MatMulNBits", "com.microsoft"), 3);
  EXPECT_EQ(count_ops(*g, "Split"), 2);
  // Zero points on one, not the other: apart.
  g = merge_and_compare({{16, 4, 32, true}, {16, 4, 32, false}}, rows);
  EXPECT_EQ(count_ops(*g, "MatMulNBits", "com.microsoft"), 2);
}

TEST(PassMergeSiblingMatMuls, OldOpsetWritesSplitSizesAsAttribute) {
  const std::vector<Proj> projs = {{16}, {8}};
  std::shared_ptr<Graph> original = make(projs, {1, 1}, 11), merged = make(projs, {1, 1}, 11);
  run_pass(*merged, passes::merge_sibling_matmuls());
  ASSERT_EQ(count_ops(*merged, "Split"), 1);
  for (Node* n : merged->nodes())
    if (n->op_type() == "Split") {
      EXPECT_EQ(n->inputs().size(), 1u);
      EXPECT_EQ(n->attr_ints("split"), (std::vector<int64_t>{16, 8}));
    }
  testing::expect_nbits_rewrite_identical(merged, original, inputs(original, {1, 1}), "opset 11");
}

// Float MatMuls with constant [K, N_i] weights: merged, equal within float rounding (oneDNN
// may block another N differently); a MatMul whose weight is an input stays.
std::shared_ptr<Graph> make_float(bool second_constant) {
  PassGraph b(17);
  b.input("a", DType::Float32, {Dim(1), Dim(2), Dim(kK)});
  b.init("w0", testing::ramp(DType::Float32, {kK, 24}, 1));
  b.init("w1", testing::ramp(DType::Float32, {kK, 7}, 2));
  if (second_constant) b.init("w2", testing::ramp(DType::Float32, {kK, 40}, 3));
  else b.input("w2", DType::Float32, {Dim(kK), Dim(40)});
  for (int i = 0; i < 3; ++i) {
    const std::string id = std::to_string(i);
    b.node("MatMul", {"a", "w" + id}, {"y" + id});
    b.node("Relu", {"y" + id}, {"r" + id});
    b.output("r" + id);
  }
  return b.done();
}

TEST(PassMergeSiblingMatMuls, FloatMatMulsMerge) {
  for (bool all_constant : {true, false}) {
    NamedTensors in = {{"a", testing::ramp(DType::Float32, {1, 2, kK}, 4)}};
    if (!all_constant) in.push_back({"w2", testing::ramp(DType::Float32, {kK, 40}, 3)});
    auto g = testing::rewrite_and_compare([&] { return make_float(all_constant); }, passes::merge_sibling_matmuls(), in,
                                          1e-6);
    EXPECT_EQ(count_ops(*g, "MatMul"), all_constant ? 1 : 2);
    EXPECT_EQ(count_ops(*g, "Split"), 1);
  }
}

}  // namespace
}  // namespace octet
