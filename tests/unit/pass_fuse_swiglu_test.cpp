// SiLU(gate) * up -> octet.SwiGLU: both forms (halves of one Split, two values), every
// Split spelling, both Mul operand orders; the fused graph equals the unfused one bit for
// bit on the optimized kernels at every ISA level (and within the reference's rounding on
// the reference kernels); and each condition that must leave the graph alone.
#include <gtest/gtest.h>

#include "cpu_test_util.h"
#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

enum class SplitForm { Input, Attribute, NumOutputs };

struct Options {
  SplitForm form = SplitForm::Input;
  int64_t width = 2 * 24;              // X's last axis
  int64_t axis = -1;                   // the Split's axis
  std::vector<int64_t> sizes = {24, 24};
  bool swap_muls = false;              // Mul(s, g) and Mul(u, a) instead
  bool up_read_twice = false;          // u is also a graph output
  bool gate_read_twice = false;        // g is also a graph output
  bool sigmoid_read_twice = false;     // the Sigmoid's output is also a graph output
};

std::shared_ptr<Graph> split_graph(const Options& o) {
  const int64_t opset = o.form == SplitForm::Input ? 13 : o.form == SplitForm::Attribute ? 11 : 18;
  PassGraph b(opset);
  b.input("x", DType::Float32, {Dim::symbol("batch"), 3, o.width});
  std::vector<Attribute> attrs = {Attribute::make_int("axis", o.axis)};
  switch (o.form) {
    case SplitForm::Input:
      b.init("sizes", Tensor::from_vector<int64_t>({2}, o.sizes));
      b.node("Split", {"x", "sizes"}, {"g", "u"}, attrs);
      break;
    case SplitForm::Attribute:
      attrs.push_back(Attribute::make_ints("split", o.sizes));
      b.node("Split", {"x"}, {"g", "u"}, attrs);
      break;
    case SplitForm::NumOutputs:
      attrs.push_back(Attribute::make_int("num_outputs", 2));
      b.node("Split", {"x"}, {"g", "u"}, attrs);
      break;
  }
  b.node("Sigmoid", {"g"}, {"s"});
  if (o.swap_muls) {
    b.node("Mul", {"s", "g"}, {"a"});
    b.node("Mul", {"u", "a"}, {"y"});
  } else {
    b.node("Mul", {"g", "s"}, {"a"});
    b.node("Mul", {"a", "u"}, {"y"});
  }
  b.output("y");
  if (o.up_read_twice) b.output("u");
  if (o.gate_read_twice) b.output("g");
  if (o.sigmoid_read_twice) b.output("s");
  return b.done();
}

std::shared_ptr<Graph> two_input_graph(std::vector<Dim> g_dims, std::vector<Dim> u_dims) {
  PassGraph b(17);
  b.input("g", DType::Float32, g_dims);
  b.input("u", DType::Float32, u_dims);
  b.node("Sigmoid", {"g"}, {"s"});
  b.node("Mul", {"s", "g"}, {"a"});
  b.node("Mul", {"u", "a"}, {"y"});
  b.output("y");
  return b.done();
}

// Runs the pass on a copy and compares: reference kernels within the reference sigmoid's
// rounding of the same chain (they are the same ops), optimized kernels bit for bit at
// every ISA level.
std::shared_ptr<Graph> fuse_and_compare(const std::function<std::shared_ptr<Graph>()>& make, const NamedTensors& in) {
  auto g = testing::rewrite_and_compare(make, passes::fuse_swiglu(), in, 0.0);
  auto original = make();
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel scoped(level);
    for (int threads : {1, 2}) {
      SessionOptions opts;
      opts.threads = threads;
      const NamedTensors want = Session(std::shared_ptr<const Graph>(original), opts).run(in);
      Session fused(std::shared_ptr<const Graph>(g), opts);
      EXPECT_TRUE(fused.reference_ops().empty()) << "the fused graph fell back to a reference kernel";
      const NamedTensors got = fused.run(in);
      EXPECT_EQ(got.size(), want.size());
      for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
        testing::expect_close(got[i].second, want[i].second, testing::kExact,
                              std::string("optimized at ") + isa_name(level) + " threads " + std::to_string(threads));
    }
  }
  return g;
}

NamedTensors split_inputs(int64_t width, int64_t batch = 2) {
  return {{"x", testing::random_f32({batch, 3, width}, 7, -9, 9)}};
}

TEST(FuseSwiGlu, HalvesOfOneSplitEverySpelling) {
  for (SplitForm form : {SplitForm::Input, SplitForm::Attribute, SplitForm::NumOutputs})
    for (bool swap : {false, true}) {
      SCOPED_TRACE(std::to_string(static_cast<int>(form)) + (swap ? " swapped" : ""));
      Options o;
      o.form = form, o.swap_muls = swap;
      auto g = fuse_and_compare([&] { return split_graph(o); }, split_inputs(o.width));
      ASSERT_EQ(g->node_count(), 1u);
      const Node* n = g->nodes()[0];
      EXPECT_EQ(n->domain(), "octet");
      EXPECT_EQ(n->op_type(), "SwiGLU");
      ASSERT_EQ(n->inputs().size(), 1u);
      EXPECT_EQ(n->input(0), g->value("x"));
      EXPECT_EQ(n->output(0)->type.to_string(), g->outputs()[0]->type.to_string());
    }
}

TEST(FuseSwiGlu, OddHalvesAndOneRow) {
  // A half of 17 (vector tails) and a batch of 1.
  Options o;
  o.width = 34, o.sizes = {17, 17};
  auto g = fuse_and_compare([&] { return split_graph(o); }, split_inputs(34, 1));
  EXPECT_EQ(count_ops(*g, "SwiGLU", "octet"), 1);
  EXPECT_EQ(count_ops(*g, "Split"), 0);
}

TEST(FuseSwiGlu, TwoValuesOfOneShape) {
  auto make = [] { return two_input_graph({Dim::symbol("n"), 19}, {Dim::symbol("n"), 19}); };
  auto g = fuse_and_compare(make, {{"g", testing::random_f32({4, 19}, 1, -9, 9)}, {"u", testing::random_f32({4, 19}, 2)}});
  ASSERT_EQ(g->node_count(), 1u);
  EXPECT_EQ(g->nodes()[0]->op_type(), "SwiGLU");
  EXPECT_EQ(g->nodes()[0]->inputs().size(), 2u);
}

TEST(FuseSwiGlu, UpReadElsewhereKeepsTheSplitAndTakesTwoInputs) {
  Options o;
  o.up_read_twice = true;
  auto g = fuse_and_compare([&] { return split_graph(o); }, split_inputs(o.width));
  EXPECT_EQ(count_ops(*g, "Split"), 1);
  ASSERT_EQ(count_ops(*g, "SwiGLU", "octet"), 1);
  for (const Node* n : g->nodes())
    if (n->op_type() == "SwiGLU") {
      EXPECT_EQ(n->inputs().size(), 2u);
    }
}

// Each condition that fails leaves the graph as it was.
void expect_untouched(const std::function<std::shared_ptr<Graph>()>& make, const std::string& what) {
  SCOPED_TRACE(what);
  testing::expect_pass_leaves_alone(*make(), passes::fuse_swiglu(), "SwiGLU", "octet");
}

TEST(FuseSwiGlu, LeavesOtherGraphsAlone) {
  {
    Options o;
    o.gate_read_twice = true;
    expect_untouched([&] { return split_graph(o); }, "gate read elsewhere");
  }
  {
    Options o;
    o.sigmoid_read_twice = true;
    expect_untouched([&] { return split_graph(o); }, "sigmoid read elsewhere");
  }
  {
    // Unequal parts: g [.., 1] and u [.., 47] differ in shape (Mul broadcasts g), so
    // neither form applies.
    Options o;
    o.sizes = {1, 47};
    expect_untouched([&] { return split_graph(o); }, "unequal split");
  }
  // u broadcasting into g (a different shape): Mul would broadcast, SwiGLU does not.
  expect_untouched([] { return two_input_graph({3, 8}, {8}); }, "broadcast up");
  expect_untouched([] { return two_input_graph({3, 8}, {1, 8}); }, "broadcast up, same rank");
  // Shapes not known equal: two different symbols.
  expect_untouched([] { return two_input_graph({Dim::symbol("a"), 8}, {Dim::symbol("b"), 8}); }, "unknown shapes");
  {
    // A SiLU alone (no up): Sigmoid and one Mul.
    PassGraph b(17);
    b.input("g", DType::Float32, {4, 8});
    b.node("Sigmoid", {"g"}, {"s"});
    b.node("Mul", {"g", "s"}, {"y"});
    b.output("y");
    auto g = b.done();
    expect_untouched([&] { return g; }, "SiLU alone");
  }
  {
    // Sigmoid(g) * h with h not g: not a SiLU.
    PassGraph b(17);
    b.input("g", DType::Float32, {4, 8});
    b.input("h", DType::Float32, {4, 8});
    b.input("u", DType::Float32, {4, 8});
    b.node("Sigmoid", {"g"}, {"s"});
    b.node("Mul", {"h", "s"}, {"a"});
    b.node("Mul", {"a", "u"}, {"y"});
    b.output("y");
    auto g = b.done();
    expect_untouched([&] { return g; }, "gate times another value");
  }
}

TEST(FuseSwiGlu, SplitOnAnotherAxisTakesTwoInputs) {
  // Split of axis 1 ([b, 6, w] -> two [b, 3, w]): not the halves of the last axis, but g
  // and u have one shape, so the two-input form applies and the Split stays.
  auto g = fuse_and_compare([&] {
    PassGraph c(13);
    c.input("x", DType::Float32, {2, 6, 8});
    c.init("sizes", Tensor::from_vector<int64_t>({2}, {3, 3}));
    c.node("Split", {"x", "sizes"}, {"g", "u"}, {Attribute::make_int("axis", 1)});
    c.node("Sigmoid", {"g"}, {"s"});
    c.node("Mul", {"g", "s"}, {"a"});
    c.node("Mul", {"a", "u"}, {"y"});
    c.output("y");
    return c.done();
  }, {{"x", testing::random_f32({2, 6, 8}, 3, -9, 9)}});
  EXPECT_EQ(count_ops(*g, "Split"), 1);
  EXPECT_EQ(count_ops(*g, "SwiGLU", "octet"), 1);
}

}  // namespace
}  // namespace octet
