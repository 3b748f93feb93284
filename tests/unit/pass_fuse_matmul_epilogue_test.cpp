// octet.MatMulBias + Gelu / + Add(residual) -> octet.MatMulBias with its epilogue.
#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

// x -> MatMulBias -> [Gelu] -> [Add(residual)] -> y, as fuse_matmul_bias and fuse_gelu leave a block.
struct Block {
  std::string gelu;            // "" none, else octet.Gelu's approximate
  bool residual = false;
  bool residual_first = false;  // Add(r, h) rather than Add(h, r)
  bool onnx_gelu = false;       // ai.onnx Gelu (opset 20) instead of octet.Gelu
  DimVector residual_dims = {Dim::symbol("batch"), Dim::symbol("seq"), 6};
};

std::shared_ptr<Graph> block(const Block& o) {
  PassGraph b(o.onnx_gelu ? 20 : 17);
  b.g->opset_imports["octet"] = 1;
  b.input("x", DType::Float32, {Dim::symbol("batch"), Dim::symbol("seq"), 4});
  b.init("w", testing::ramp(DType::Float32, {4, 6}, 1, 1.0f));
  b.init("bias", testing::ramp(DType::Float32, {6}, 2, 1.0f));
  b.node("MatMulBias", {"x", "w", "bias"}, {"h"}, {}, "octet");
  std::string last = "h";
  if (!o.gelu.empty()) {
    b.node("Gelu", {last}, {"g"}, {Attribute::make_string("approximate", o.gelu)}, o.onnx_gelu ? "" : "octet");
    last = "g";
  }
  if (o.residual) {
    b.input("r", DType::Float32, o.residual_dims);
    if (o.residual_first) b.node("Add", {"r", last}, {"y"});
    else b.node("Add", {last, "r"}, {"y"});
    last = "y";
  }
  b.output(last);
  return b.done();
}

NamedTensors inputs(bool residual) {
  NamedTensors in = {{"x", testing::ramp(DType::Float32, {2, 3, 4})}};
  if (residual) in.emplace_back("r", testing::ramp(DType::Float32, {2, 3, 6}, 5));
  return in;
}

const Node* only_node(const Graph& g) {
  EXPECT_EQ(g.node_count(), 1u);
  return g.nodes()[0];
}

TEST(FuseMatMulEpilogue, GeluBecomesTheActivation) {
  for (const char* approx : {"none", "tanh"})
    for (bool onnx : {false, true}) {
      auto g = testing::rewrite_and_compare([&] { return block({approx, false, false, onnx}); },
                                            passes::fuse_matmul_epilogue(), inputs(false), 1e-5);
      const Node* n = only_node(*g);
      EXPECT_EQ(n->attr_string("activation", ""), std::string(approx) == "tanh" ? "gelu_tanh" : "gelu");
      EXPECT_EQ(n->output(0)->name(), "g");  // the graph output keeps its name
    }
}

TEST(FuseMatMulEpilogue, SameShapeAddBecomesTheResidualInEitherOrder) {
  for (bool first : {false, true}) {
    auto g = testing::rewrite_and_compare([&] { return block({"", true, first}); }, passes::fuse_matmul_epilogue(),
                                          inputs(true), 1e-6);
    const Node* n = only_node(*g);
    EXPECT_EQ(n->input(3), g->value("r"));
    EXPECT_FALSE(n->has_attr("activation"));
  }
}

TEST(FuseMatMulEpilogue, GeluThenResidualFoldOverTwoRounds) {
  auto make = [] { return block({"tanh", true}); };
  std::shared_ptr<Graph> original = make(), g = make();
  OptimizeReport first = run_pass(*g, passes::fuse_matmul_epilogue());
  EXPECT_EQ(first.detail("octet.MatMulBias+gelu_tanh"), 1);
  OptimizeReport second = run_pass(*g, passes::fuse_matmul_epilogue());
  EXPECT_EQ(second.detail("octet.MatMulBias+residual"), 1);
  const Node* n = only_node(*g);
  EXPECT_EQ(n->attr_string("activation", ""), "gelu_tanh");
  EXPECT_EQ(n->input(3), g->value("r"));
  EXPECT_LE(testing::max_relative_error(testing::run_graph(g, inputs(true)), testing::run_graph(original, inputs(true))),
            1e-5);
  // The optimizer's pipeline does both in its rounds.
  std::shared_ptr<Graph> piped = make();
  optimize(*piped);
  EXPECT_EQ(count_ops(*piped, "MatMulBias", "octet"), 1);
  EXPECT_EQ(piped->node_count(), 1u);
}

TEST(FuseMatMulEpilogue, LeavesNearMissesAlone) {
  auto fused = [](const std::shared_ptr<Graph>& g) {
    OptimizeReport r = run_pass(*g, passes::fuse_matmul_epilogue());
    return r.find("fuse_matmul_epilogue")->rewrites;
  };
  // A residual that broadcasts (a bias-like row, or other symbols) is not the output's shape.
  EXPECT_EQ(fused(block({"", true, false, false, DimVector{6}})), 0);
  EXPECT_EQ(fused(block({"", true, false, false, DimVector{Dim::symbol("b2"), Dim::symbol("seq"), 6}})), 0);
  {  // the MatMulBias result is also a graph output
    auto g = block({"none"});
    g->mark_output(g->value("h"));
    EXPECT_EQ(fused(g), 0);
  }
  {  // read twice: by the Gelu and by the Add
    PassGraph b;
    b.g->opset_imports["octet"] = 1;
    b.input("x", DType::Float32, {3, 4});
    b.init("w", testing::ramp(DType::Float32, {4, 6}, 1));
    b.init("bias", testing::ramp(DType::Float32, {6}, 2));
    b.node("MatMulBias", {"x", "w", "bias"}, {"h"}, {}, "octet");
    b.node("Gelu", {"h"}, {"g"}, {}, "octet");
    b.node("Add", {"g", "h"}, {"y"});
    b.output("y");
    EXPECT_EQ(fused(b.done()), 0);
  }
  {  // no Gelu after a residual: the epilogue's order is bias, activation, residual
    auto with_gelu = [&] {
      PassGraph b;
      b.g->opset_imports["octet"] = 1;
      b.input("x", DType::Float32, {3, 4});
      b.input("r", DType::Float32, {3, 6});
      b.init("w", testing::ramp(DType::Float32, {4, 6}, 1));
      b.init("bias", testing::ramp(DType::Float32, {6}, 2));
      b.node("MatMulBias", {"x", "w", "bias", "r"}, {"h"}, {}, "octet");
      b.node("Gelu", {"h"}, {"g"}, {}, "octet");
      b.node("Add", {"g", "r"}, {"y"});
      b.output("y");
      return b.done();
    };
    EXPECT_EQ(fused(with_gelu()), 0);
  }
}

}  // namespace
}  // namespace octet
