// Decomposed RMSNorm -> RMSNormalization (ai.onnx from opset 23, octet domain before).
#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

enum class Divide { Div, Reciprocal, OneOver };

std::shared_ptr<Graph> rms_norm(int64_t opset, Divide divide, bool gamma, bool square_by_mul = false) {
  PassGraph b(opset);
  b.input("x", DType::Float32, {Dim::symbol("batch"), 8});
  b.scalar("two", 2.0f);
  b.scalar("eps", 1e-6f);
  b.scalar("one", 1.0f);
  b.init("weight", testing::ramp(DType::Float32, {8}, 3, 1.0f));
  if (square_by_mul) b.node("Mul", {"x", "x"}, {"sq"});
  else b.node("Pow", {"x", "two"}, {"sq"});
  if (opset >= 18) {
    b.init("axes", Tensor::from_vector<int64_t>({1}, {-1}));
    b.node("ReduceMean", {"sq", "axes"}, {"ms"});
  } else {
    b.node("ReduceMean", {"sq"}, {"ms"}, {Attribute::make_ints("axes", {-1})});
  }
  b.node("Add", {"ms", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"s"});
  switch (divide) {
    case Divide::Div: b.node("Div", {"x", "s"}, {"n"}); break;
    case Divide::Reciprocal:
      b.node("Reciprocal", {"s"}, {"r"});
      b.node("Mul", {"x", "r"}, {"n"});
      break;
    case Divide::OneOver:
      b.node("Div", {"one", "s"}, {"r"});
      b.node("Mul", {"r", "x"}, {"n"});
      break;
  }
  if (gamma) b.node("Mul", {"weight", "n"}, {"y"});
  else b.node("Identity", {"n"}, {"y"});
  b.output("y");
  return b.done();
}

TEST(FuseRmsNorm, EachSpellingAtEachOpset) {
  for (int64_t opset : {17, 23})
    for (Divide divide : {Divide::Div, Divide::Reciprocal, Divide::OneOver}) {
      SCOPED_TRACE(std::to_string(opset) + " " + std::to_string(static_cast<int>(divide)));
      auto g = testing::rewrite_and_compare([&] { return rms_norm(opset, divide, true); }, passes::fuse_rms_norm(),
                                            {{"x", testing::ramp(DType::Float32, {3, 8})}}, 1e-6);
      ASSERT_EQ(g->node_count(), 1u);
      const Node* n = g->nodes()[0];
      EXPECT_EQ(n->op_type(), "RMSNormalization");
      EXPECT_EQ(n->domain(), opset >= 23 ? "" : "octet");
      EXPECT_EQ(n->attr_int("axis", 0), -1);
      EXPECT_FLOAT_EQ(n->attr_float("epsilon", 0), 1e-6f);
      EXPECT_EQ(n->input(1), g->value("weight"));
    }
}

TEST(FuseRmsNorm, WithoutWeightAndSquaredByMul) {
  auto g = testing::rewrite_and_compare([] { return rms_norm(17, Divide::Reciprocal, false, true); },
                                        passes::fuse_rms_norm(), {{"x", testing::ramp(DType::Float32, {3, 8})}});
  ASSERT_EQ(count_ops(*g, "RMSNormalization", "octet"), 1);
  EXPECT_EQ(g->opset_version("octet"), 1);
}

TEST(FuseRmsNorm, LeavesNearMissesAlone) {
  auto g = rms_norm(17, Divide::Div, true);
  // The mean square is also read elsewhere.
  GraphPatch p = make_patch(*g);
  Node* extra = p.add_node("Neg", {g->value("ms")}, 1);
  p.apply();
  g->mark_output(extra->output(0));
  run_pass(*g, passes::fuse_rms_norm());
  EXPECT_EQ(count_ops(*g, "RMSNormalization", "octet"), 0);

  // Divides a different tensor by the RMS of x.
  PassGraph b;
  b.input("x", DType::Float32, {2, 8});
  b.input("z", DType::Float32, {2, 8});
  b.scalar("two", 2.0f);
  b.scalar("eps", 1e-6f);
  b.node("Pow", {"x", "two"}, {"sq"});
  b.node("ReduceMean", {"sq"}, {"ms"}, {Attribute::make_ints("axes", {-1})});
  b.node("Add", {"ms", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"s"});
  b.node("Div", {"z", "s"}, {"y"});
  b.output("y");
  auto h = b.done();
  run_pass(*h, passes::fuse_rms_norm());
  EXPECT_EQ(count_ops(*h, "RMSNormalization", "octet"), 0);
}

TEST(FuseRmsNorm, LayerNormIsFusedFirstInThePipeline) {
  // x - mean fed to an RMS pattern is a LayerNorm: the pipeline must produce that.
  PassGraph b;
  b.input("x", DType::Float32, {2, 8});
  b.scalar("two", 2.0f);
  b.scalar("eps", 1e-5f);
  b.node("ReduceMean", {"x"}, {"mean"}, {Attribute::make_ints("axes", {-1})});
  b.node("Sub", {"x", "mean"}, {"d"});
  b.node("Pow", {"d", "two"}, {"sq"});
  b.node("ReduceMean", {"sq"}, {"var"}, {Attribute::make_ints("axes", {-1})});
  b.node("Add", {"var", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"std"});
  b.node("Div", {"d", "std"}, {"y"});
  b.output("y");
  auto g = b.done();
  OptimizeOptions opts;
  opts.verify = true;
  optimize(*g, opts);
  EXPECT_EQ(count_ops(*g, "LayerNormalization"), 1);
  EXPECT_EQ(count_ops(*g, "RMSNormalization", "octet"), 0);
}

}  // namespace
}  // namespace octet
