// Three MatMulBias projections of one input feeding octet.Attention become one packed
// projection that the attention reads through channel_ranges.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "passes/pattern.h"

namespace octet {
namespace {

using testing::count_ops;
using passes::constant_value;
using testing::PassGraph;

struct Options {
  bool separate_inputs = false;  // K reads another tensor than Q and V
  bool gelu_on_v = false;        // V's projection has an activation
  bool k_also_output = false;    // K's projection is also a graph output
  int64_t v_width = 16;          // V's channels (H * Dv)
};

std::shared_ptr<Graph> qkv_graph(const Options& o) {
  PassGraph b;
  b.input("x", DType::Float32, {2, 5, 12});
  b.input("x2", DType::Float32, {2, 5, 12});
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const std::string n = names[i];
    const int64_t width = i == 2 ? o.v_width : 16;
    b.init(n + "_w", testing::ramp(DType::Float32, {12, width}, 10 + i, 0.5f));
    b.init(n + "_b", testing::ramp(DType::Float32, {width}, 20 + i, 0.2f));
    std::vector<Attribute> attrs;
    if (i == 2 && o.gelu_on_v) attrs.push_back(Attribute::make_string("activation", "gelu"));
    const std::string in = i == 1 && o.separate_inputs ? "x2" : "x";
    b.node("MatMulBias", {in, n + "_w", n + "_b"}, {n}, attrs, "octet");
  }
  b.node("Attention", {"q", "k", "v"}, {"y"}, {Attribute::make_int("num_heads", 2)}, "octet");
  b.output("y");
  if (o.k_also_output) b.output("k");
  return b.done();
}

NamedTensors inputs() {
  return {{"x", testing::ramp(DType::Float32, {2, 5, 12}, 1)}, {"x2", testing::ramp(DType::Float32, {2, 5, 12}, 2)}};
}

TEST(FuseAttentionQkv, ThreeProjectionsBecomeOnePackedProduct) {
  for (int64_t v_width : {16, 8}) {  // Dv = Dk, and Dv != Dk
    Options o;
    o.v_width = v_width;
    auto g = testing::rewrite_and_compare([&] { return qkv_graph(o); }, passes::fuse_attention_qkv(), inputs(), 1e-6);
    EXPECT_EQ(count_ops(*g, "MatMulBias", "octet"), 1);
    const Node* attention = nullptr;
    for (const Node* n : g->nodes())
      if (n->op_type() == "Attention") attention = n;
    ASSERT_NE(attention, nullptr);
    EXPECT_EQ(attention->attr_ints("channel_ranges"), (std::vector<int64_t>{0, 16, 16, 32, 32, 32 + v_width}));
    const Node* packed = attention->input(0)->producer();
    ASSERT_EQ(packed->op_type(), "MatMulBias");
    EXPECT_EQ(packed->input(0), g->value("x"));
    EXPECT_EQ(constant_value(packed->input(1))->shape(), (std::vector<int64_t>{12, 32 + v_width}));
    // The original weights are untouched (dead-code elimination drops them later).
    EXPECT_EQ(constant_value(g->value("q_w"))->shape(), (std::vector<int64_t>{12, 16}));
  }
}

TEST(FuseAttentionQkv, ProjectionsThatCannotMergeStay) {
  Options separate, gelu, shared;
  separate.separate_inputs = true;
  gelu.gelu_on_v = true;
  shared.k_also_output = true;
  for (const Options& o : {separate, gelu, shared}) {
    auto g = qkv_graph(o);
    EXPECT_EQ(run_pass(*g, passes::fuse_attention_qkv()).passes[0].rewrites, 0);
    EXPECT_EQ(count_ops(*g, "MatMulBias", "octet"), 3);
  }
}

}  // namespace
}  // namespace octet
