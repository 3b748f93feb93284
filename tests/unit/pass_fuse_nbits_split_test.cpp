// fuse_nbits_split: MatMulNBits -> Split(last axis) -> octet.MatMulNBits writing the parts.
// The parts equal the Split's outputs bit for bit on the optimized kernels: the packed
// decode GEMV storing panels into the parts (parts at multiples of 16), the copy path
// (parts elsewhere, float activations, prefill GEMM past 4 rows); 4- and 8-bit, with and
// without zero points and bias; every ISA level, 1 and 2 threads; and on the reference
// kernels. Each Split spelling; the near misses stay as they were.
#include <gtest/gtest.h>

#include "kernels/cpu/matmul_nbits.h"
#include "nbits_test_util.h"
#include "pass_test_util.h"
#include "quant/block_quant.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

enum class SplitForm { Input, Attribute, NumOutputs };

struct Case {
  int bits = 4;
  bool symmetric = true;
  bool bias = false;
  int64_t rows = 1;
  int64_t K = 80;
  std::vector<int64_t> sizes = {32, 16, 16};  // N = their sum
  SplitForm form = SplitForm::Input;
  int64_t axis = -1;
  bool y_is_output = false;
  bool sizes_from_input = false;  // the split sizes a graph input (not constant)
};

std::shared_ptr<Graph> make(const Case& c) {
  const int64_t opset = c.form == SplitForm::Input ? 13 : c.form == SplitForm::Attribute ? 11 : 18;
  PassGraph b(opset);
  b.g->opset_imports["com.microsoft"] = 1;
  int64_t N = 0;
  for (int64_t s : c.sizes) N += s;
  b.input("a", DType::Float32, {Dim(1), Dim(c.rows), Dim(c.K)});
  const Tensor w = testing::nbits_weights(c.K, N, 3, 32);
  const quant::NbitsTensors t =
      quant::to_matmul_nbits(quant::quantize_blocks_rtn(w.data<float>(), c.K, N, c.bits, 32, c.symmetric));
  b.init("b", t.b);
  b.init("s", t.scales);
  std::vector<std::string> ins = {"a", "b", "s", "", "", ""};
  if (t.zero_points) b.init("z", *t.zero_points), ins[3] = "z";
  if (c.bias) b.init("bias", testing::random_f32({N}, 11)), ins[5] = "bias";
  while (!ins.empty() && ins.back().empty()) ins.pop_back();
  b.node("MatMulNBits", ins, {"y"},
         {Attribute::make_int("K", c.K), Attribute::make_int("N", N), Attribute::make_int("bits", c.bits),
          Attribute::make_int("block_size", 32)},
         "com.microsoft");
  std::vector<std::string> outs;
  for (size_t i = 0; i < c.sizes.size(); ++i) outs.push_back("part" + std::to_string(i));
  std::vector<Attribute> attrs = {Attribute::make_int("axis", c.axis)};
  if (c.form == SplitForm::Input) {
    if (c.sizes_from_input) b.input("sizes", DType::Int64, {Dim(static_cast<int64_t>(c.sizes.size()))});
    else b.init("sizes", Tensor::from_vector<int64_t>({static_cast<int64_t>(c.sizes.size())}, c.sizes));
    b.node("Split", {"y", "sizes"}, outs, attrs);
  } else if (c.form == SplitForm::Attribute) {
    attrs.push_back(Attribute::make_ints("split", c.sizes));
    b.node("Split", {"y"}, outs, attrs);
  } else {
    attrs.push_back(Attribute::make_int("num_outputs", static_cast<int64_t>(c.sizes.size())));
    b.node("Split", {"y"}, outs, attrs);
  }
  for (const std::string& o : outs) b.output(o);
  if (c.y_is_output) b.output("y");
  return b.done();
}

NamedTensors inputs(const Case& c) { return {{"a", testing::random_f32({1, c.rows, c.K}, 5, -4, 4)}}; }

void fuse_and_compare(const Case& c, const std::string& label) {
  SCOPED_TRACE(label);
  auto fused = testing::rewrite_and_compare([&] { return make(c); }, passes::fuse_nbits_split(), inputs(c), 0.0);
  ASSERT_EQ(fused->node_count(), 1u);
  const Node* n = fused->nodes()[0];
  EXPECT_EQ(n->domain(), "octet");
  EXPECT_EQ(n->op_type(), "MatMulNBits");
  EXPECT_EQ(n->outputs().size(), c.sizes.size());
  EXPECT_EQ(n->attr_ints("split"), c.sizes);
  auto original = make(c);
  const NamedTensors in = inputs(c);
  testing::expect_nbits_rewrite_identical(fused, original, in, label);
}

TEST(FuseNbitsSplit, PartsBitIdenticalOnEveryPath) {
  for (int bits : {4, 8})
    for (bool symmetric : {true, false})
      for (int64_t rows : {1, 3, 8})
        for (const std::vector<int64_t>& sizes : std::vector<std::vector<int64_t>>{{32, 16, 16}, {20, 25, 19}}) {
          Case c;
          c.bits = bits, c.symmetric = symmetric, c.rows = rows, c.sizes = sizes, c.bias = rows == 3;
          fuse_and_compare(c, "bits " + std::to_string(bits) + (symmetric ? " sym" : " asym") + " rows " +
                                  std::to_string(rows) + " parts from " + std::to_string(sizes[0]));
        }
}

TEST(FuseNbitsSplit, EverySplitSpelling) {
  Case c;
  c.form = SplitForm::Attribute;
  fuse_and_compare(c, "split attribute");
  c.form = SplitForm::NumOutputs;
  c.sizes = {48, 48};
  fuse_and_compare(c, "num_outputs");
}

void expect_untouched(const Case& c, const std::string& what) {
  SCOPED_TRACE(what);
  testing::expect_pass_leaves_alone(*make(c), passes::fuse_nbits_split(), "MatMulNBits", "octet");
}

TEST(FuseNbitsSplit, NearMissesStayApart) {
  Case c;
  c.y_is_output = true;
  expect_untouched(c, "Y also a graph output");
  c = Case{};
  c.sizes_from_input = true;
  expect_untouched(c, "sizes not constant");
  c = Case{};
  c.form = SplitForm::NumOutputs;
  c.sizes = {22, 21};  // 43 columns in 2 parts: opset 18 gives unequal parts (22, 21), not N / 2
  expect_untouched(c, "num_outputs not dividing N");
  {
    // Split of the rows axis: [1, 4, N] into two [1, 2, N].
    SCOPED_TRACE("another axis");
    PassGraph b(13);
    b.g->opset_imports["com.microsoft"] = 1;
    b.input("a", DType::Float32, {Dim(1), Dim(4), Dim(64)});
    const Tensor w = testing::nbits_weights(64, 32, 3, 32);
    const quant::NbitsTensors t = quant::to_matmul_nbits(quant::quantize_blocks_rtn(w.data<float>(), 64, 32, 4, 32, true));
    b.init("b", t.b);
    b.init("s", t.scales);
    b.node("MatMulNBits", {"a", "b", "s"}, {"y"},
           {Attribute::make_int("K", 64), Attribute::make_int("N", 32), Attribute::make_int("bits", 4),
            Attribute::make_int("block_size", 32)},
           "com.microsoft");
    b.init("sizes", Tensor::from_vector<int64_t>({2}, {2, 2}));
    b.node("Split", {"y", "sizes"}, {"p0", "p1"}, {Attribute::make_int("axis", 1)});
    b.output("p0");
    b.output("p1");
    auto g = b.done();
    run_pass(*g, passes::fuse_nbits_split());
    EXPECT_EQ(count_ops(*g, "MatMulNBits", "octet"), 0);
    EXPECT_EQ(count_ops(*g, "Split"), 1);
  }
}

}  // namespace
}  // namespace octet
