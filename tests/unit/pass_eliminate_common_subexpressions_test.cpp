// Common-subexpression elimination: repeated nodes go, by content-equal constants and by
// symbolically equal shape values too; nodes that differ or must stay apart are kept; on
// the real decoder fixtures, the optimized graph computes what it computed without it.
#include <gtest/gtest.h>

#include "onnx/model_io.h"
#include "pass_test_util.h"
#include "passes/pipeline.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

// Per "layer": Slice(table, [0], Unsqueeze(Shape(past_l)[2] + Shape(x)[1]), [0], [1]),
// then Gather by the positions: a Llama rotary-table slice, each layer with its own
// constants and its own past input (all of one symbolic length).
std::shared_ptr<Graph> rotary_slices(int layers, bool same_length_symbol = true) {
  PassGraph b;
  b.input("x", DType::Float32, {1, Dim::symbol("seq"), 4});
  b.input("pos", DType::Int64, {1, Dim::symbol("seq")});
  b.init("table", testing::ramp(DType::Float32, {32, 4}));
  for (int l = 0; l < layers; ++l) {
    const std::string s = std::to_string(l);
    b.input("past" + s, DType::Float32,
            {1, 2, Dim::symbol(same_length_symbol ? "past" : "past" + s), 4});
    b.init("zero" + s, Tensor::from_vector<int64_t>({1}, {0}));
    b.init("one" + s, Tensor::from_vector<int64_t>({1}, {1}));
    b.init("two" + s, Tensor::scalar<int64_t>(2));
    b.init("axis1_" + s, Tensor::scalar<int64_t>(1));
    b.node("Shape", {"past" + s}, {"ps" + s});
    b.node("Gather", {"ps" + s, "two" + s}, {"plen" + s});
    b.node("Shape", {"x"}, {"xs" + s});
    b.node("Gather", {"xs" + s, "axis1_" + s}, {"slen" + s});
    b.node("Add", {"plen" + s, "slen" + s}, {"total" + s});
    b.node("Unsqueeze", {"total" + s, "zero" + s}, {"end" + s});
    b.node("Slice", {"table", "zero" + s, "end" + s, "zero" + s, "one" + s}, {"cos" + s});
    b.node("Gather", {"cos" + s, "pos"}, {"g" + s});
    b.node("Mul", {"x", "g" + s}, {"y" + s});
    b.output("y" + s);
  }
  return b.done();
}

NamedTensors rotary_inputs(int layers) {
  NamedTensors in = {{"x", testing::ramp(DType::Float32, {1, 3, 4})},
                     {"pos", Tensor::from_vector<int64_t>({1, 3}, {5, 6, 7})}};
  for (int l = 0; l < layers; ++l) in.emplace_back("past" + std::to_string(l), Tensor(DType::Float32, {1, 2, 5, 4}));
  return in;
}

TEST(EliminateCommonSubexpressions, LayersShareOneRotarySliceWithTheSameResult) {
  auto g = testing::rewrite_and_compare([] { return rotary_slices(3); }, passes::eliminate_common_subexpressions(),
                                        rotary_inputs(3), 0.0);
  run_pass(*g, passes::eliminate_dead_code());
  // One Slice and one position Gather serve the three layers; each layer keeps its Mul
  // (its output is a graph output of its own).
  EXPECT_EQ(count_ops(*g, "Slice"), 1);
  EXPECT_EQ(count_ops(*g, "Mul"), 3);
  int position_gathers = 0;
  for (const Node* n : g->nodes()) position_gathers += n->op_type() == "Gather" && n->input(1)->name() == "pos";
  EXPECT_EQ(position_gathers, 1);
}

TEST(EliminateCommonSubexpressions, DifferentSymbolsConstantsOrAttributesStayApart) {
  // Past lengths of different symbols: the slice ends differ, so the Slices stay.
  auto apart = rotary_slices(2, false);
  run_pass(*apart, passes::eliminate_common_subexpressions());
  EXPECT_EQ(count_ops(*apart, "Slice"), 2);

  PassGraph b;
  b.input("x", DType::Float32, {2, 3});
  b.init("c1", Tensor::from_vector<float>({3}, {1, 2, 3}));
  b.init("c2", Tensor::from_vector<float>({3}, {1, 2, 4}));  // one element differs
  b.node("Add", {"x", "c1"}, {"a1"});
  b.node("Add", {"x", "c2"}, {"a2"});
  b.node("Softmax", {"x"}, {"s0"}, {Attribute::make_int("axis", 0)});
  b.node("Softmax", {"x"}, {"s1"}, {Attribute::make_int("axis", 1)});
  b.node("RandomNormalLike", {"x"}, {"r1"});
  b.node("RandomNormalLike", {"x"}, {"r2"});
  for (const char* o : {"a1", "a2", "s0", "s1", "r1", "r2"}) b.output(o);
  auto g = b.done();
  EXPECT_EQ(run_pass(*g, passes::eliminate_common_subexpressions()).passes[0].rewrites, 0);
  EXPECT_EQ(g->node_count(), 6u);
}

TEST(EliminateCommonSubexpressions, GraphOutputsKeepTheirProducersAndEqualConstantsMerge) {
  auto make = [] {
    PassGraph c;
    c.input("x", DType::Float32, {2, 3});
    c.init("c1", Tensor::from_vector<float>({3}, {1, 2, 3}));
    c.init("c2", Tensor::from_vector<float>({3}, {1, 2, 3}));  // equal bytes, another name
    c.node("Add", {"x", "c1"}, {"a1"});
    c.node("Add", {"x", "c2"}, {"a2"});
    c.node("Add", {"x", "c2"}, {"out"});  // a graph output: keeps its own node
    c.node("Mul", {"a1", "a2"}, {"y"});
    c.output("y");
    c.output("out");
    return c.done();
  };
  auto g = testing::rewrite_and_compare(make, passes::eliminate_common_subexpressions(),
                                        {{"x", testing::ramp(DType::Float32, {2, 3})}}, 0.0);
  EXPECT_EQ(count_ops(*g, "Add"), 2);  // a2 went into a1; "out" stays
  const Node* mul = g->value("y")->producer();
  EXPECT_EQ(mul->input(0), mul->input(1));
  EXPECT_EQ(g->value("out")->producer()->op_type(), "Add");
}

// The real decoder fixtures (tiny Llama with GQA and RoPE, tiny GPT-2, exported with past):
// the full pipeline with and without the pass gives the same logits and presents, and
// the pass removes the per-layer copies.
class CseFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(CseFixture, OptimizedDecoderComputesTheSameWithFewerNodes) {
  const std::string path = std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/" + GetParam() + ".onnx";
  auto with = std::shared_ptr<Graph>(load_model(path).graph);
  auto without = std::shared_ptr<Graph>(load_model(path).graph);
  OptimizeOptions off;
  off.disabled_passes.insert("eliminate_common_subexpressions");
  optimize(*without, off);
  OptimizeReport report = optimize(*with);
  const PassStats* cse = report.find("eliminate_common_subexpressions");
  ASSERT_NE(cse, nullptr);
  EXPECT_GT(cse->rewrites, 0) << GetParam();
  EXPECT_LT(with->node_count(), without->node_count());
  // A 2-token step after a 3-token past.
  NamedTensors in;
  int seed = 0;
  for (const Value* v : with->inputs()) {
    if (v->is_initializer()) continue;
    const std::string& n = v->name();
    if (n == "input_ids") in.emplace_back(n, Tensor::from_vector<int64_t>({1, 2}, {7, 11}));
    else if (n == "attention_mask") in.emplace_back(n, Tensor::from_vector<int64_t>({1, 5}, {1, 1, 1, 1, 1}));
    else if (n == "position_ids") in.emplace_back(n, Tensor::from_vector<int64_t>({1, 2}, {3, 4}));
    else {
      const DimVector& d = *v->type.dims;
      in.emplace_back(n, testing::ramp(DType::Float32, {1, *d[1].constant(), 3, *d[3].constant()}, ++seed));
    }
  }
  const double err = testing::max_relative_error(testing::run_graph(with, in), testing::run_graph(without, in));
  EXPECT_LE(err, 0.0) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(Decoders, CseFixture, ::testing::Values("llama_gen_with_past", "gpt2_gen_with_past"));

}  // namespace
}  // namespace octet
