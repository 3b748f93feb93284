// Erf-GeLU fusion in the orders exporters write it, and the cases it must leave alone.
#include <gtest/gtest.h>

#include <cmath>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

enum class Order { HalfFirst, HalfLast, HalfInside };
enum class Scale { DivSqrt2, MulInvSqrt2 };

// 0.5 * x * (1 + erf(x / sqrt2)) in one of the exporter orderings, with `x` = Relu(in) so
// that x also has a reader outside the pattern, as a residual would.
void add_gelu(PassGraph& b, const std::string& p, Order order, Scale scale, const std::string& half = "half",
              const std::string& one = "one", const std::string& x = "x") {
  if (scale == Scale::DivSqrt2) b.node("Div", {x, "sqrt2"}, {p + "scaled"});
  else b.node("Mul", {"inv_sqrt2", x}, {p + "scaled"});
  b.node("Erf", {p + "scaled"}, {p + "erf"});
  b.node("Add", {one, p + "erf"}, {p + "one_plus"});
  switch (order) {
    case Order::HalfFirst:  // HF BERT
      b.node("Mul", {x, half}, {p + "hx"});
      b.node("Mul", {p + "hx", p + "one_plus"}, {p + "y"});
      break;
    case Order::HalfLast:  // torch.nn.GELU (ViT)
      b.node("Mul", {x, p + "one_plus"}, {p + "xm"});
      b.node("Mul", {p + "xm", half}, {p + "y"});
      break;
    case Order::HalfInside:
      b.node("Mul", {half, p + "one_plus"}, {p + "h"});
      b.node("Mul", {x, p + "h"}, {p + "y"});
      break;
  }
}

std::shared_ptr<Graph> gelu_graph(Order order, Scale scale, DType t = DType::Float32) {
  PassGraph b;
  b.input("in", t, {2, Dim::symbol("seq"), 8});
  b.scalar("sqrt2", 1.4142135f, t);
  b.scalar("inv_sqrt2", 0.70710678f, t);
  b.scalar("half", 0.5f, t);
  b.scalar("one", 1.0f, t);
  b.node("Relu", {"in"}, {"x"});
  add_gelu(b, "g_", order, scale);
  b.node("Add", {"g_y", "x"}, {"y"});  // residual: x is read outside the pattern
  b.output("y");
  return b.done();
}

TEST(FuseGeluErf, EveryExporterOrdering) {
  for (Order order : {Order::HalfFirst, Order::HalfLast, Order::HalfInside})
    for (Scale scale : {Scale::DivSqrt2, Scale::MulInvSqrt2}) {
      SCOPED_TRACE(static_cast<int>(order) * 10 + static_cast<int>(scale));
      auto g = testing::rewrite_and_compare([&] { return gelu_graph(order, scale); }, passes::fuse_gelu_erf(),
                                            {{"in", testing::ramp(DType::Float32, {2, 5, 8})}}, 1e-6);
      EXPECT_EQ(count_ops(*g, "Gelu", "octet"), 1);
      EXPECT_EQ(count_ops(*g, "Erf"), 0);
      EXPECT_EQ(count_ops(*g, "Mul"), 0);
      EXPECT_EQ(g->opset_version("octet"), 1);
      const Node* gelu = g->value("y")->producer()->input(0)->producer();
      ASSERT_NE(gelu, nullptr);
      EXPECT_EQ(gelu->attr_string("approximate", ""), "none");
      EXPECT_EQ(gelu->input(0), g->value("x"));
    }
}

TEST(FuseGeluErf, SharedConstantsServeTwoGelusAndStayIntact) {
  auto make = [] {
    PassGraph b;
    b.input("x", DType::Float32, {3, 8});
    b.scalar("sqrt2", 1.4142135f);
    b.scalar("half", 0.5f);
    b.scalar("one", 1.0f);
    add_gelu(b, "a_", Order::HalfFirst, Scale::DivSqrt2);
    b.node("Neg", {"a_y"}, {"x2"});
    add_gelu(b, "b_", Order::HalfLast, Scale::DivSqrt2, "half", "one", "x2");
    b.output("b_y");
    return b.done();
  };
  auto g = testing::rewrite_and_compare(make, passes::fuse_gelu_erf(), {{"x", testing::ramp(DType::Float32, {3, 8})}});
  EXPECT_EQ(count_ops(*g, "Gelu", "octet"), 2);
  EXPECT_FLOAT_EQ(g->value("half")->constant()->data<float>()[0], 0.5f);
  EXPECT_FLOAT_EQ(g->value("one")->constant()->data<float>()[0], 1.0f);
}

TEST(FuseGeluErf, ConstantNodesAndHalfPrecisionConstants) {
  // Exporters write the constants as Constant nodes; 16-bit graphs round them.
  auto make = [] {
    PassGraph b;
    b.input("x", DType::Float32, {4});
    b.constant_node("sqrt2", 1.4142135f);
    b.constant_node("half", 0.5f);
    b.constant_node("one", 1.0f);
    add_gelu(b, "", Order::HalfFirst, Scale::DivSqrt2);
    b.output("y");
    return b.done();
  };
  auto g = testing::rewrite_and_compare(make, passes::fuse_gelu_erf(), {{"x", testing::ramp(DType::Float32, {4})}});
  EXPECT_EQ(count_ops(*g, "Gelu", "octet"), 1);

  for (DType t : {DType::Float16, DType::BFloat16}) {
    auto h = testing::rewrite_and_compare([&] { return gelu_graph(Order::HalfLast, Scale::DivSqrt2, t); },
                                          passes::fuse_gelu_erf(), {{"in", testing::ramp(t, {2, 5, 8})}},
                                          t == DType::Float16 ? 5e-3 : 3e-2);
    EXPECT_EQ(count_ops(*h, "Gelu", "octet"), 1) << dtype_name(t);
  }
}

TEST(FuseGeluErf, OnnxFunctionBodyThroughThePipeline) {
  // ONNX's own Gelu function body (the backend tests' *_expanded models): constants through
  // CastLike, sqrt(2) computed, 1 + erf written as Sum. Folding makes the constants plain.
  auto make = [] {
    PassGraph b(20);
    b.input("x", DType::Float32, {3, 4});
    b.constant_node("Half", 0.5f);
    b.constant_node("One", 1.0f);
    b.constant_node("Two", 2.0f);
    b.node("CastLike", {"Half", "x"}, {"HalfCast"});
    b.node("CastLike", {"One", "x"}, {"OneCast"});
    b.node("CastLike", {"Two", "x"}, {"TwoCast"});
    b.node("Sqrt", {"TwoCast"}, {"SqrtTwo"});
    b.node("Div", {"x", "SqrtTwo"}, {"XSqrt"});
    b.node("Erf", {"XSqrt"}, {"ErfXSqrt"});
    b.node("Sum", {"OneCast", "ErfXSqrt"}, {"Phi"});
    b.node("Mul", {"HalfCast", "x"}, {"MultX"});
    b.node("Mul", {"MultX", "Phi"}, {"y"});
    b.output("y");
    return b.done();
  };
  std::shared_ptr<Graph> original = make(), g = make();
  OptimizeOptions opts;
  opts.verify = true;
  optimize(*g, opts);
  ASSERT_EQ(g->node_count(), 1u);
  EXPECT_EQ(g->nodes()[0]->op_type(), "Gelu");
  NamedTensors in = {{"x", testing::ramp(DType::Float32, {3, 4})}};
  EXPECT_LE(testing::max_relative_error(testing::run_graph(g, in), testing::run_graph(original, in)), 1e-6);
}

TEST(FuseGeluErf, LeavesNearMissesAlone) {
  auto fused = [](const std::function<void(PassGraph&)>& tweak) {
    PassGraph b;
    b.input("x", DType::Float32, {2, 8});
    b.scalar("sqrt2", 1.4142135f);
    b.scalar("half", 0.5f);
    b.scalar("one", 1.0f);
    tweak(b);
    auto g = b.done();
    run_pass(*g, passes::fuse_gelu_erf());
    return count_ops(*g, "Gelu", "octet");
  };
  // The baseline matches...
  EXPECT_EQ(fused([](PassGraph& b) { add_gelu(b, "", Order::HalfFirst, Scale::DivSqrt2); b.output("y"); }), 1);
  // ...an intermediate read elsewhere must survive, so no fusion:
  EXPECT_EQ(fused([](PassGraph& b) {
              add_gelu(b, "", Order::HalfFirst, Scale::DivSqrt2);
              b.output("y");
              b.output("erf");
            }), 0);
  EXPECT_EQ(fused([](PassGraph& b) {
              add_gelu(b, "", Order::HalfFirst, Scale::DivSqrt2);
              b.node("Relu", {"hx"}, {"other"});
              b.output("y");
              b.output("other");
            }), 0);
  // ...a wrong constant:
  EXPECT_EQ(fused([](PassGraph& b) {
              b.scalar("not_half", 0.4f);
              add_gelu(b, "", Order::HalfFirst, Scale::DivSqrt2, "not_half");
              b.output("y");
            }), 0);
  // ...a "scalar" whose extra dims would broadcast the result to a higher rank:
  EXPECT_EQ(fused([](PassGraph& b) {
              b.init("one3d", Tensor::from_vector<float>({1, 1, 1}, {1.0f}));
              add_gelu(b, "", Order::HalfFirst, Scale::DivSqrt2, "half", "one3d");
              b.output("y");
            }), 0);
  // ...0.5 * (1 + erf(x / sqrt2)) times some other tensor than x:
  EXPECT_EQ(fused([](PassGraph& b) {
              b.input("z", DType::Float32, {2, 8});
              b.node("Div", {"x", "sqrt2"}, {"scaled"});
              b.node("Erf", {"scaled"}, {"erf"});
              b.node("Add", {"erf", "one"}, {"one_plus"});
              b.node("Mul", {"z", "half"}, {"hz"});
              b.node("Mul", {"hz", "one_plus"}, {"y"});
              b.output("y");
            }), 0);
}

}  // namespace
}  // namespace octet
