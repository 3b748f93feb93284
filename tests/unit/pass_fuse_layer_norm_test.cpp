// Decomposed LayerNorm -> LayerNormalization. The fixtures' torch exports already carry
// LayerNormalization, so these hand-built graphs are the decomposed form's only test.
#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

struct Spec {
  int64_t opset = 17;
  bool square_by_mul = false;  // Mul(d, d) instead of Pow(d, 2)
  bool gamma = true, beta = true;
  std::vector<int64_t> axes = {-1};
  bool d_read_elsewhere = false;
};

std::shared_ptr<Graph> layer_norm(const Spec& s) {
  PassGraph b(s.opset);
  b.input("x", DType::Float32, {Dim::symbol("batch"), Dim::symbol("seq"), 8});
  b.scalar("two", 2.0f);
  b.scalar("eps", 1e-5f);
  b.init("gamma", testing::ramp(DType::Float32, {8}, 1, 1.0f));
  b.init("beta", testing::ramp(DType::Float32, {8}, 2, 1.0f));
  std::vector<Attribute> reduce_attrs;
  std::vector<std::string> axes_input;
  if (s.opset >= 18) {
    b.init("axes", Tensor::from_vector<int64_t>({static_cast<int64_t>(s.axes.size())}, s.axes));
    axes_input = {"axes"};
  } else {
    reduce_attrs.push_back(Attribute::make_ints("axes", s.axes));
  }
  auto reduce = [&](const std::string& in, const std::string& out) {
    std::vector<std::string> ins = {in};
    ins.insert(ins.end(), axes_input.begin(), axes_input.end());
    b.node("ReduceMean", ins, {out}, reduce_attrs);
  };
  reduce("x", "mean");
  b.node("Sub", {"x", "mean"}, {"d"});
  if (s.square_by_mul) b.node("Mul", {"d", "d"}, {"sq"});
  else b.node("Pow", {"d", "two"}, {"sq"});
  reduce("sq", "var");
  b.node("Add", {"var", "eps"}, {"ve"});
  b.node("Sqrt", {"ve"}, {"std"});
  b.node("Div", {"d", "std"}, {"n"});
  std::string out = "n";
  if (s.gamma) {
    b.node("Mul", {"gamma", out}, {"scaled"});
    out = "scaled";
  }
  if (s.beta) {
    b.node("Add", {out, "beta"}, {"shifted"});
    out = "shifted";
  }
  b.node("Relu", {out}, {"y"});
  b.output("y");
  if (s.d_read_elsewhere) {
    b.node("Neg", {"d"}, {"other"});
    b.output("other");
  }
  return b.done();
}

NamedTensors inputs() { return {{"x", testing::ramp(DType::Float32, {2, 3, 8}, 0, 4.0f)}}; }

TEST(FuseLayerNorm, DecomposedFormsBecomeOneNode) {
  for (bool by_mul : {false, true})
    for (int64_t opset : {17, 18}) {
      Spec s;
      s.square_by_mul = by_mul;
      s.opset = opset;
      auto g = testing::rewrite_and_compare([&] { return layer_norm(s); }, passes::fuse_layer_norm(), inputs(), 1e-5);
      ASSERT_EQ(count_ops(*g, "LayerNormalization"), 1) << by_mul << " " << opset;
      EXPECT_EQ(g->node_count(), 2u);  // LayerNormalization + Relu
      const Node* ln = g->value("y")->producer()->input(0)->producer();
      EXPECT_EQ(ln->attr_int("axis", 0), -1);
      EXPECT_FLOAT_EQ(ln->attr_float("epsilon", 0), 1e-5f);
      EXPECT_EQ(ln->input(1), g->value("gamma"));
      EXPECT_EQ(ln->input(2), g->value("beta"));
    }
}

TEST(FuseLayerNorm, WithoutScaleOrBiasAndOverTwoAxes) {
  Spec plain;
  plain.gamma = plain.beta = false;
  auto g = testing::rewrite_and_compare([&] { return layer_norm(plain); }, passes::fuse_layer_norm(), inputs(), 1e-5);
  ASSERT_EQ(count_ops(*g, "LayerNormalization"), 1);
  const Node* ln = g->value("y")->producer()->input(0)->producer();
  EXPECT_EQ(ln->input(1)->constant()->to_float_vector(), std::vector<float>(8, 1.0f));  // made-up Scale of ones
  EXPECT_EQ(ln->input(2), nullptr);

  // Over [seq, hidden] the normalized dims include a symbol: no Scale of ones can be made.
  Spec two_axes = plain;
  two_axes.axes = {1, 2};
  auto h = layer_norm(two_axes);
  run_pass(*h, passes::fuse_layer_norm());
  EXPECT_EQ(count_ops(*h, "LayerNormalization"), 0);
  // With gamma over those two axes it would need [seq, 8] gamma; an [8] gamma is 1 on the seq axis: not a norm param.
  Spec two_axes_gamma;
  two_axes_gamma.axes = {-2, -1};
  auto k = layer_norm(two_axes_gamma);
  run_pass(*k, passes::fuse_layer_norm());
  EXPECT_EQ(count_ops(*k, "LayerNormalization"), 0);
}

TEST(FuseLayerNorm, LeavesNearMissesAlone) {
  Spec shared;
  shared.d_read_elsewhere = true;  // x - mean is read outside the pattern
  auto g = layer_norm(shared);
  run_pass(*g, passes::fuse_layer_norm());
  EXPECT_EQ(count_ops(*g, "LayerNormalization"), 0);

  Spec old;
  old.opset = 16;  // no LayerNormalization before opset 17
  auto h = layer_norm(old);
  run_pass(*h, passes::fuse_layer_norm());
  EXPECT_EQ(count_ops(*h, "LayerNormalization"), 0);

  Spec middle;
  middle.axes = {1};  // not the trailing axes
  auto k = layer_norm(middle);
  run_pass(*k, passes::fuse_layer_norm());
  EXPECT_EQ(count_ops(*k, "LayerNormalization"), 0);
}

}  // namespace
}  // namespace octet
