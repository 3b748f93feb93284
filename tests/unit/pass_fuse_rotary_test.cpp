// Rotary embedding (rotate_half form) -> octet.ApplyRotary: the pass on the spellings
// exporters write and its near misses, and the optimized kernel against the reference
// (which runs the seven ONNX ops it replaces) on edge shapes.
#include <gtest/gtest.h>

#include <limits>

#include "cpu_test_util.h"
#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

struct Spelling {
  bool axes_positive = false;  // axes 3 instead of -1
  bool end_max = true;         // the second half's end INT64_MAX (torch's x[..., d/2:]) or d
  bool swap_mul = false;       // Mul(cos, x) and Mul(sin, r)
  bool swap_add = false;       // Add(r*sin, x*cos)
  bool cos_2d = false;         // cos/sin [seq, d] instead of [batch, 1, seq, d]
};

constexpr int64_t kD = 8;

// q: [batch, 2, seq, 8] rotated as Llama's apply_rotary_pos_emb does.
std::shared_ptr<Graph> rotary(const Spelling& s) {
  PassGraph b(13);
  b.input("q", DType::Float32, {Dim::symbol("batch"), 2, Dim::symbol("seq"), kD});
  if (s.cos_2d) {
    b.input("cos", DType::Float32, {Dim::symbol("seq"), kD});
    b.input("sin", DType::Float32, {Dim::symbol("seq"), kD});
  } else {
    b.input("cos", DType::Float32, {Dim::symbol("batch"), 1, Dim::symbol("seq"), kD});
    b.input("sin", DType::Float32, {Dim::symbol("batch"), 1, Dim::symbol("seq"), kD});
  }
  b.init("zero", Tensor::from_vector<int64_t>({1}, {0}));
  b.init("half", Tensor::from_vector<int64_t>({1}, {kD / 2}));
  b.init("end", Tensor::from_vector<int64_t>({1}, {s.end_max ? std::numeric_limits<int64_t>::max() : kD}));
  b.init("axes", Tensor::from_vector<int64_t>({1}, {s.axes_positive ? 3 : -1}));
  b.node("Slice", {"q", "zero", "half", "axes"}, {"x1"});
  b.node("Slice", {"q", "half", "end", "axes"}, {"x2"});
  b.node("Neg", {"x2"}, {"n"});
  b.node("Concat", {"n", "x1"}, {"r"}, {Attribute::make_int("axis", s.axes_positive ? 3 : -1)});
  if (s.swap_mul) {
    b.node("Mul", {"cos", "q"}, {"a"});
    b.node("Mul", {"sin", "r"}, {"c"});
  } else {
    b.node("Mul", {"q", "cos"}, {"a"});
    b.node("Mul", {"r", "sin"}, {"c"});
  }
  if (s.swap_add) b.node("Add", {"c", "a"}, {"y"});
  else b.node("Add", {"a", "c"}, {"y"});
  b.output("y");
  return b.done();
}

NamedTensors rotary_inputs(bool cos_2d, int64_t batch = 2, int64_t seq = 3) {
  std::vector<int64_t> c = cos_2d ? std::vector<int64_t>{seq, kD} : std::vector<int64_t>{batch, 1, seq, kD};
  return {{"q", testing::ramp(DType::Float32, {batch, 2, seq, kD}, 1)},
          {"cos", testing::ramp(DType::Float32, c, 2, 1.0f)},
          {"sin", testing::ramp(DType::Float32, c, 3, 1.0f)}};
}

TEST(FuseRotary, EverySpellingBecomesOneNodeWithTheSameBits) {
  for (int v = 0; v < 32; ++v) {
    const Spelling s{(v & 1) != 0, (v & 2) != 0, (v & 4) != 0, (v & 8) != 0, (v & 16) != 0};
    SCOPED_TRACE(v);
    // Tolerance 0: the fused kernel rounds each product and the sum as the Mul, Mul, Add did.
    auto g = testing::rewrite_and_compare([&] { return rotary(s); }, passes::fuse_rotary(), rotary_inputs(s.cos_2d), 0);
    ASSERT_EQ(g->node_count(), 1u);
    const Node* n = g->nodes()[0];
    EXPECT_EQ(n->op_type(), "ApplyRotary");
    EXPECT_EQ(n->domain(), "octet");
    EXPECT_EQ(n->input(0), g->value("q"));
    EXPECT_EQ(n->input(1), g->value("cos"));
    EXPECT_EQ(n->input(2), g->value("sin"));
    EXPECT_EQ(g->opset_version("octet"), 1);
  }
}

TEST(FuseRotary, TheReferenceKernelsAgreeWithTheUnfusedGraph) {
  auto original = rotary({});
  auto fused = rotary({});
  run_pass(*fused, passes::fuse_rotary());
  ASSERT_EQ(count_ops(*fused, "ApplyRotary", "octet"), 1);
  const NamedTensors in = rotary_inputs(false, 1, 5);
  EXPECT_EQ(testing::max_relative_error(testing::run_graph_with(fused, in, KernelChoice::Reference),
                                        testing::run_graph_with(original, in, KernelChoice::Reference)),
            0);
}

// Each near miss keeps its seven nodes.
TEST(FuseRotary, LeavesNearMissesAlone) {
  auto expect_untouched = [](const std::shared_ptr<Graph>& g, const char* why) {
    run_pass(*g, passes::fuse_rotary());
    EXPECT_EQ(count_ops(*g, "ApplyRotary", "octet"), 0) << why;
  };
  {  // Concat(x1, -x2): not rotate_half
    auto g = rotary({});
    Node* concat = g->value("r")->producer();
    GraphPatch p = make_patch(*g);
    Node* swapped = p.add_node("Concat", {g->value("x1"), g->value("n")}, 1, {Attribute::make_int("axis", -1)});
    p.replace_uses(g->value("r"), swapped->output(0));
    p.remove_node(concat);
    p.apply();
    expect_untouched(g, "halves swapped");
  }
  {  // the rotated half read elsewhere
    auto g = rotary({});
    GraphPatch p = make_patch(*g);
    Node* extra = p.add_node("Relu", {g->value("r")}, 1);
    p.apply();
    g->mark_output(extra->output(0));
    expect_untouched(g, "rotated half has a second reader");
  }
  {  // cos grows x: [batch, 2, seq, 8] * [batch, 4, seq, 8] would not even broadcast; use a
     // cos with a leading dim x lacks instead
    PassGraph b(13);
    b.input("q", DType::Float32, {2, 3, kD});
    b.input("cos", DType::Float32, {4, 2, 3, kD});
    b.input("sin", DType::Float32, {2, 3, kD});
    b.init("zero", Tensor::from_vector<int64_t>({1}, {0}));
    b.init("half", Tensor::from_vector<int64_t>({1}, {kD / 2}));
    b.init("end", Tensor::from_vector<int64_t>({1}, {kD}));
    b.init("axes", Tensor::from_vector<int64_t>({1}, {-1}));
    b.node("Slice", {"q", "zero", "half", "axes"}, {"x1"});
    b.node("Slice", {"q", "half", "end", "axes"}, {"x2"});
    b.node("Neg", {"x2"}, {"n"});
    b.node("Concat", {"n", "x1"}, {"r"}, {Attribute::make_int("axis", -1)});
    b.node("Mul", {"q", "cos"}, {"a"});
    b.node("Mul", {"r", "sin"}, {"c"});
    b.node("Add", {"a", "c"}, {"y"});
    b.output("y");
    expect_untouched(b.done(), "cos broadcasts x to a higher rank");
  }
  {  // the second half taken from the wrong place: [3, 7) instead of [4, 8)
    auto g = rotary({});
    Node* slice = g->value("x2")->producer();
    GraphPatch p = make_patch(*g);
    Value* three = p.add_initializer("three", Tensor::from_vector<int64_t>({1}, {3}));
    Value* seven = p.add_initializer("seven", Tensor::from_vector<int64_t>({1}, {7}));
    Node* other = p.add_node("Slice", {g->value("q"), three, seven, g->value("axes")}, 1);
    p.replace_uses(g->value("x2"), other->output(0));
    p.remove_node(slice);
    p.apply();
    infer_graph(*g);
    expect_untouched(g, "not the second half");
  }
}

TEST(FuseRotary, SmolLmShapedModelRunsTheFusedOpInThePipeline) {
  auto g = rotary({});
  optimize(*g);
  EXPECT_EQ(count_ops(*g, "ApplyRotary", "octet"), 1);
  EXPECT_EQ(count_ops(*g, "Slice"), 0);
}

}  // namespace

namespace testing {
namespace {

// The optimized kernel against the reference on edge shapes: rank 1, D = 2, cos/sin
// broadcast from 1-D/2-D, full-shape cos/sin, empty tensors, many rows for the threads.
TEST(CpuApplyRotary, MatchesTheReferenceBitForBit) {
  struct Case {
    std::vector<int64_t> x, cos;
  };
  const std::vector<Case> cases = {
      {{8}, {8}},
      {{2}, {2}},
      {{3, 2}, {1, 2}},
      {{1, 9, 1, 64}, {1, 1, 1, 64}},
      {{2, 3, 5, 16}, {5, 16}},
      {{2, 3, 5, 16}, {2, 3, 5, 16}},
      {{2, 3, 5, 16}, {2, 1, 5, 16}},
      {{2, 3, 5, 16}, {3, 1, 16}},
      {{2, 0, 5, 16}, {5, 16}},
      {{4, 32, 128, 64}, {4, 1, 128, 64}},  // enough work for the thread team
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    CpuCall call{"ApplyRotary",
                 {random_f32(c.x, seed), random_f32(c.cos, seed + 1, -1, 1), random_f32(c.cos, seed + 2, -1, 1)},
                 {},
                 "octet"};
    call.threads = 3;
    seed += 3;
    expect_matches_reference(call, kExact, shape_to_string(c.x) + " cos " + shape_to_string(c.cos));
  }
}

TEST(CpuApplyRotary, OffThePathCasesGoToTheReference) {
  // cos broadcast along D itself: the reference kernel computes it.
  expect_matches_reference({"ApplyRotary", {random_f32({2, 8}, 1), random_f32({2, 1}, 2), random_f32({2, 1}, 3)}, {}, "octet"},
                           kExact);
}

TEST(CpuApplyRotary, BadInputsSayWhatIsWrong) {
  // An odd last dim cannot be split in halves; inference refuses the node.
  CpuCall odd{"ApplyRotary", {random_f32({2, 7}, 1), random_f32({7}, 2), random_f32({7}, 3)}, {}, "octet"};
  try {
    run_call(odd, KernelChoice::Optimized);
    FAIL() << "an odd last dim ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("odd last dim"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace testing
}  // namespace octet
