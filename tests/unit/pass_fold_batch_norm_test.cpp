// Inference BatchNormalization -> folded into Conv/ConvTranspose, or Mul + Add.
#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

// Positive variances: ramp() gives values in [-span, span], shifted up.
Tensor variance(int64_t c, int seed) {
  Tensor t = testing::ramp(DType::Float32, {c}, seed, 1.0f);
  for (int64_t i = 0; i < c; ++i) t.mutable_data<float>()[i] += 1.5f;
  return t;
}

void bn_params(PassGraph& b, int64_t c, const std::string& prefix = "bn") {
  b.init(prefix + "_s", testing::ramp(DType::Float32, {c}, 3, 2.0f));
  b.init(prefix + "_b", testing::ramp(DType::Float32, {c}, 4, 1.0f));
  b.init(prefix + "_m", testing::ramp(DType::Float32, {c}, 5, 0.5f));
  b.init(prefix + "_v", variance(c, 6));
}

// X -> Conv or ConvTranspose (stride 2, pads 1, optional bias, groups) -> BatchNormalization -> Relu.
std::shared_ptr<Graph> conv_bn(const std::string& op, int64_t group, bool bias, bool share_weight = false) {
  PassGraph b(15);
  const int64_t cin = 4, cout = 6;
  b.input("x", DType::Float32, {Dim::symbol("batch"), cin, 5, 7});
  const std::vector<int64_t> ws =
      op == "Conv" ? std::vector<int64_t>{cout, cin / group, 3, 3} : std::vector<int64_t>{cin, cout / group, 4, 4};
  b.init("w", testing::ramp(DType::Float32, ws, 1, 0.5f));
  std::vector<std::string> ins = {"x", "w"};
  if (bias) {
    b.init("cb", testing::ramp(DType::Float32, {cout}, 2, 0.5f));
    ins.push_back("cb");
  }
  const std::vector<Attribute> attrs = {Attribute::make_ints("strides", {2, 2}), Attribute::make_ints("pads", {1, 1, 1, 1}),
                                        Attribute::make_int("group", group)};
  b.node(op, ins, {"conv"}, attrs);
  bn_params(b, cout);
  b.node("BatchNormalization", {"conv", "bn_s", "bn_b", "bn_m", "bn_v"}, {"bn"}, {Attribute::make_float("epsilon", 1e-3f)});
  b.node("Relu", {"bn"}, {"y"});
  b.output("y");
  if (share_weight) {  // a second reader of W: folding would have to copy it
    b.node(op, {"x", "w"}, {"other"}, attrs);
    b.output("other");
  }
  return b.done();
}

NamedTensors image() { return {{"x", testing::ramp(DType::Float32, {2, 4, 5, 7}, 9)}}; }

TEST(FoldBatchNorm, IntoConvAndConvTranspose) {
  for (const char* op : {"Conv", "ConvTranspose"})
    for (int64_t group : {1, 2})
      for (bool bias : {true, false}) {
        auto g = testing::rewrite_and_compare([&] { return conv_bn(op, group, bias); }, passes::fold_batch_norm(),
                                              image(), 1e-5);
        EXPECT_EQ(count_ops(*g, "BatchNormalization"), 0) << op;
        EXPECT_EQ(count_ops(*g, op), 1) << op;
        const Node* conv = nullptr;
        for (const Node* n : g->nodes())
          if (n->op_type() == op) conv = n;
        ASSERT_NE(conv, nullptr);
        EXPECT_NE(conv->input(1)->name(), "w");  // a new weight; the original is untouched
        ASSERT_NE(conv->input(2), nullptr);
        EXPECT_EQ(conv->attr_ints("strides"), (std::vector<int64_t>{2, 2}));
      }
}

TEST(FoldBatchNorm, SharedWeightBecomesScaleAndShift) {
  auto g = testing::rewrite_and_compare([] { return conv_bn("ConvTranspose", 1, true, true); },
                                        passes::fold_batch_norm(), image(), 1e-5);
  EXPECT_EQ(count_ops(*g, "BatchNormalization"), 0);
  EXPECT_EQ(count_ops(*g, "Mul"), 1);
  EXPECT_EQ(count_ops(*g, "Add"), 1);
  // The shared weight keeps its contents.
  std::shared_ptr<Graph> fresh = conv_bn("ConvTranspose", 1, true, true);
  const Tensor* before = fresh->value("w")->constant().get();
  const Tensor* after = g->value("w")->constant().get();
  ASSERT_EQ(before->numel(), after->numel());
  for (int64_t i = 0; i < before->numel(); ++i) EXPECT_EQ(before->data<float>()[i], after->data<float>()[i]);
}

TEST(FoldBatchNorm, OnAGraphInputRank2And3) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{3, 6}, std::vector<int64_t>{2, 6, 5}}) {
    auto make = [&] {
      PassGraph b(15);
      b.input("x", DType::Float32, DimVector(shape.begin(), shape.end()));
      bn_params(b, 6);
      b.node("BatchNormalization", {"x", "bn_s", "bn_b", "bn_m", "bn_v"}, {"y"});
      b.output("y");
      return b.done();
    };
    auto g = testing::rewrite_and_compare(make, passes::fold_batch_norm(),
                                          {{"x", testing::ramp(DType::Float32, shape, 7)}}, 1e-6);
    EXPECT_EQ(count_ops(*g, "Mul"), 1);
  }
}

TEST(FoldBatchNorm, LeavesWhatItCannotFold) {
  // Statistics fed at run time, or training outputs: untouched.
  PassGraph b(15);
  b.input("x", DType::Float32, {1, 2, 3});
  b.input("mean", DType::Float32, {2});
  b.init("p", Tensor::from_vector<float>({2}, {1, 1}));
  b.node("BatchNormalization", {"x", "p", "p", "mean", "p"}, {"y"});
  b.output("y");
  std::shared_ptr<Graph> g = b.done();
  run_pass(*g, passes::fold_batch_norm());
  EXPECT_EQ(count_ops(*g, "BatchNormalization"), 1);
}

}  // namespace
}  // namespace octet
