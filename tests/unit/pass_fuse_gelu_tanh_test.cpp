// tanh-GeLU fusion (GPT-2's NewGELU) and the cases it must leave alone.
#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

enum class Cube { Pow, MulMul };

// 0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * x^3))) as GPT-2 exports it.
void add_gelu(PassGraph& b, Cube cube, const std::string& coef = "coef", const std::string& x = "x") {
  if (cube == Cube::Pow) {
    b.node("Pow", {x, "three"}, {"cube"});
  } else {
    b.node("Mul", {x, x}, {"square"});
    b.node("Mul", {"square", x}, {"cube"});
  }
  b.node("Mul", {"cube", coef}, {"term"});
  b.node("Add", {x, "term"}, {"inner"});
  b.node("Mul", {"inner", "k"}, {"arg"});
  b.node("Tanh", {"arg"}, {"t"});
  b.node("Add", {"t", "one"}, {"one_plus"});
  b.node("Mul", {x, "half"}, {"hx"});
  b.node("Mul", {"hx", "one_plus"}, {"y"});
}

PassGraph base(DType t = DType::Float32) {
  PassGraph b;
  b.input("x", t, {Dim::symbol("batch"), 4, 16});
  b.scalar("three", 3.0f, t);
  b.scalar("coef", 0.044714998453855515f, t);  // the value GPT-2's export stores
  b.scalar("k", 0.7978845834732056f, t);
  b.scalar("one", 1.0f, t);
  b.scalar("half", 0.5f, t);
  return b;
}

TEST(FuseGeluTanh, PowAndMulCubes) {
  for (Cube cube : {Cube::Pow, Cube::MulMul}) {
    auto make = [&] {
      PassGraph b = base();
      add_gelu(b, cube);
      b.output("y");
      return b.done();
    };
    auto g = testing::rewrite_and_compare(make, passes::fuse_gelu_tanh(),
                                          {{"x", testing::ramp(DType::Float32, {2, 4, 16})}}, 1e-6);
    ASSERT_EQ(g->node_count(), 1u);
    const Node* gelu = g->nodes()[0];
    EXPECT_EQ(gelu->domain(), "octet");
    EXPECT_EQ(gelu->op_type(), "Gelu");
    EXPECT_EQ(gelu->attr_string("approximate", ""), "tanh");
    EXPECT_EQ(g->outputs()[0]->name(), "y");
  }
}

TEST(FuseGeluTanh, Float16Model) {
  auto make = [] {
    PassGraph b = base(DType::Float16);
    add_gelu(b, Cube::Pow);
    b.output("y");
    return b.done();
  };
  auto g = testing::rewrite_and_compare(make, passes::fuse_gelu_tanh(),
                                        {{"x", testing::ramp(DType::Float16, {2, 4, 16})}}, 5e-3);
  EXPECT_EQ(count_ops(*g, "Gelu", "octet"), 1);
}

TEST(FuseGeluTanh, LeavesNearMissesAlone) {
  auto fused = [](const std::function<void(PassGraph&)>& tweak) {
    PassGraph b = base();
    tweak(b);
    auto g = b.done();
    run_pass(*g, passes::fuse_gelu_tanh());
    return count_ops(*g, "Gelu", "octet");
  };
  EXPECT_EQ(fused([](PassGraph& b) { add_gelu(b, Cube::Pow); b.output("y"); }), 1);
  EXPECT_EQ(fused([](PassGraph& b) {  // wrong cubic coefficient
              b.scalar("coef2", 0.05f);
              add_gelu(b, Cube::Pow, "coef2");
              b.output("y");
            }), 0);
  EXPECT_EQ(fused([](PassGraph& b) {  // the cube is read elsewhere
              add_gelu(b, Cube::Pow);
              b.output("y");
              b.output("cube");
            }), 0);
  EXPECT_EQ(fused([](PassGraph& b) {  // x^3 of another tensor
              b.input("z", DType::Float32, {Dim::symbol("batch"), 4, 16});
              b.node("Pow", {"z", "three"}, {"cube"});
              b.node("Mul", {"cube", "coef"}, {"term"});
              b.node("Add", {"x", "term"}, {"inner"});
              b.node("Mul", {"inner", "k"}, {"arg"});
              b.node("Tanh", {"arg"}, {"t"});
              b.node("Add", {"t", "one"}, {"one_plus"});
              b.node("Mul", {"x", "half"}, {"hx"});
              b.node("Mul", {"hx", "one_plus"}, {"y"});
              b.output("y");
            }), 0);
}

}  // namespace
}  // namespace octet
