// fuse_bmm_attention (the BART-family per-head [B*H,S,D] layout: Marian, Whisper) and
// fuse_grouped_attention's T5 forms (no scale, K^T as Transpose(0,2,3,1) of the head
// split), on hand-built chains shaped as transformers 4.36 exports them: each test asserts
// the fusion happened (op counts) and that the fused graph computes what the chain did,
// outputs (present.* included) compared on the same inputs. The exported fixtures
// themselves are checked against onnxruntime in tests/python/test_seq2seq_attention.py.
#include <gtest/gtest.h>

#include "onnx/model_io.h"
#include "onnx/subgraph.h"
#include "pass_test_util.h"
#include "passes/pattern.h"

namespace octet {
namespace {

using testing::PassGraph;

constexpr int64_t B = 2, H = 3, D = 4, E = H * D;

// Where the keys and values come from.
enum class Kv { Projections, PastConcat, CrossInputs };

struct Options {
  Kv kv = Kv::Projections;
  int64_t s = 5, past = 0, t = 5;  // query rows, cached rows, key rows
  bool mask = false;
  bool mask_first_reshaped = false;  // the mask is the Add's first input and itself a Reshape
  float score_scale = 0;  // a Mul of the scores when non-zero (BART scales Q instead)
};

Value* shape_const(PassGraph& p, const std::string& name, std::vector<int64_t> dims) {
  return p.init(name, passes::int64s(dims));
}

// x [B,L,E] -> Reshape [B,L,H,D] -> Transpose(0,2,1,3): `name` [B,H,L,D].
void head_split(PassGraph& p, const std::string& x, const std::string& name, int64_t len) {
  shape_const(p, name + "_shape", {B, len, H, D});
  p.node("Reshape", {x, name + "_shape"}, {name + "_split"});
  p.node("Transpose", {name + "_split"}, {name}, {Attribute::make_ints("perm", {0, 2, 1, 3})});
}

// `x4` [B,H,L,Dx] -> Reshape [B*H,L,Dx].
void merge_heads(PassGraph& p, const std::string& x4, const std::string& name, int64_t len) {
  shape_const(p, name + "_shape", {B * H, len, D});
  p.node("Reshape", {x4, name + "_shape"}, {name});
}

std::shared_ptr<Graph> bmm_chain(const Options& o) {
  PassGraph p;
  p.input("hidden", DType::Float32, {B, o.s, E});
  p.node("Neg", {"hidden"}, {"xq"});  // stand-ins for the projections
  head_split(p, "xq", "q4", o.s);
  if (o.kv == Kv::CrossInputs) {
    p.input("k4", DType::Float32, {B, H, o.t, D});
    p.input("v4", DType::Float32, {B, H, o.t, D});
  } else {
    p.node("Sigmoid", {"hidden"}, {"xk"});
    p.node("Tanh", {"hidden"}, {"xv"});
    const bool past = o.kv == Kv::PastConcat;
    head_split(p, "xk", past ? "k_new" : "k4", o.s);
    head_split(p, "xv", past ? "v_new" : "v4", o.s);
    if (past) {
      p.input("past_k", DType::Float32, {B, H, o.past, D});
      p.input("past_v", DType::Float32, {B, H, o.past, D});
      p.node("Concat", {"past_k", "k_new"}, {"k4"}, {Attribute::make_int("axis", 2)});
      p.node("Concat", {"past_v", "v_new"}, {"v4"}, {Attribute::make_int("axis", 2)});
      p.output("k4");  // present.N.decoder.key / value
      p.output("v4");
    }
  }
  merge_heads(p, "q4", "q3", o.s);
  merge_heads(p, "k4", "k3", o.t);
  merge_heads(p, "v4", "v3", o.t);
  p.node("Transpose", {"k3"}, {"kt"}, {Attribute::make_ints("perm", {0, 2, 1})});
  p.node("MatMul", {"q3", "kt"}, {"scores"});
  std::string s = "scores";
  if (o.score_scale != 0) {
    p.scalar("score_scale", o.score_scale);
    p.node("Mul", {s, "score_scale"}, {"scaled"});
    s = "scaled";
  }
  if (o.mask) {
    p.input("mask", DType::Float32, {B, 1, o.s, o.t});
    shape_const(p, "scores4_shape", {B, H, o.s, o.t});
    shape_const(p, "scores3_shape", {B * H, o.s, o.t});
    p.node("Reshape", {s, "scores4_shape"}, {"scores4"});
    if (o.mask_first_reshaped) {
      shape_const(p, "mask_shape", {B, 1, o.s, o.t});
      p.node("Reshape", {"mask", "mask_shape"}, {"mask_view"});
      p.node("Add", {"mask_view", "scores4"}, {"masked4"});
    } else {
      p.node("Add", {"scores4", "mask"}, {"masked4"});
    }
    p.node("Reshape", {"masked4", "scores3_shape"}, {"masked"});
    s = "masked";
  }
  p.node("Softmax", {s}, {"probs"}, {Attribute::make_int("axis", -1)});
  p.node("MatMul", {"probs", "v3"}, {"mixed3"});
  shape_const(p, "mixed4_shape", {B, H, o.s, D});
  shape_const(p, "y_shape", {B, o.s, E});
  p.node("Reshape", {"mixed3", "mixed4_shape"}, {"mixed4"});
  p.node("Transpose", {"mixed4"}, {"merged"}, {Attribute::make_ints("perm", {0, 2, 1, 3})});
  p.node("Reshape", {"merged", "y_shape"}, {"y"});
  p.node("Add", {"y", "hidden"}, {"out"});  // the out projection's residual
  p.output("out");
  return p.done();
}

// Runs the pass on the chain `o` describes and compares with the chain; returns the graph.
std::shared_ptr<Graph> fuse(const Options& o, const Pass& pass) {
  auto make = [&] { return bmm_chain(o); };
  return testing::rewrite_and_compare(make, pass, testing::ramp_inputs(*make()), 1e-5);
}

TEST(FuseBmmAttention, EncoderSelfAttentionBecomesAttentionOnTheProjections) {
  Options o;
  o.mask = true;  // Marian's padding mask (Whisper's encoder has none: next test)
  auto g = fuse(o, passes::fuse_bmm_attention());
  EXPECT_EQ(testing::count_ops(*g, "Attention", "octet"), 1);
  EXPECT_EQ(testing::count_ops(*g, "Softmax"), 0);
  EXPECT_EQ(testing::count_ops(*g, "Transpose"), 0);  // the head splits went too
}

TEST(FuseBmmAttention, UnmaskedScaledScores) {
  Options o;
  o.score_scale = 0.125f;
  auto g = fuse(o, passes::fuse_bmm_attention());
  ASSERT_EQ(testing::count_ops(*g, "Attention", "octet"), 1);
  for (const Node* n : g->nodes())
    if (n->op_type() == "Attention") {
      EXPECT_FLOAT_EQ(n->attr_float("scale", 0), 0.125f);
    }
}

TEST(FuseBmmAttention, DecoderSelfAttentionWithPastKeepsThePresentConcats) {
  Options o;
  o.kv = Kv::PastConcat;
  o.s = 1, o.past = 6, o.t = 7;
  auto g = fuse(o, passes::fuse_bmm_attention());
  EXPECT_EQ(testing::count_ops(*g, "GroupedAttention", "octet"), 1);
  EXPECT_EQ(testing::count_ops(*g, "Concat"), 2);  // present.N.* still computed (compared above)
  for (const Node* n : g->nodes())
    if (n->op_type() == "GroupedAttention") {
      EXPECT_EQ(n->input(1)->name(), "k4");
      EXPECT_EQ(n->input(2)->name(), "v4");
    }
}

TEST(FuseBmmAttention, CausalPrefillWithMask) {
  Options o;
  o.kv = Kv::PastConcat;
  o.s = 4, o.past = 2, o.t = 6;
  o.mask = true;
  auto g = fuse(o, passes::fuse_bmm_attention());
  EXPECT_EQ(testing::count_ops(*g, "GroupedAttention", "octet"), 1);
  EXPECT_EQ(testing::count_ops(*g, "Reshape"), 3);  // the Q and new K/V head splits only
}

TEST(FuseBmmAttention, CrossAttentionReadsTheEncoderKeysAndValuesInPlace) {
  Options o;
  o.kv = Kv::CrossInputs;
  o.s = 1, o.t = 9;
  o.mask = true;
  auto g = fuse(o, passes::fuse_bmm_attention());
  ASSERT_EQ(testing::count_ops(*g, "GroupedAttention", "octet"), 1);
  for (const Node* n : g->nodes())
    if (n->op_type() == "GroupedAttention") {
      EXPECT_EQ(n->input(1)->name(), "k4");  // past_key_values.N.encoder.key, no copy
      EXPECT_EQ(n->input(3)->name(), "mask");
    }
}

TEST(FuseBmmAttention, TellsTheScoresFromAMaskThatIsAlsoAReshape) {
  Options o;
  o.kv = Kv::CrossInputs;
  o.s = 2, o.t = 7;
  o.mask = o.mask_first_reshaped = true;
  auto g = fuse(o, passes::fuse_bmm_attention());
  ASSERT_EQ(testing::count_ops(*g, "GroupedAttention", "octet"), 1);
  for (const Node* n : g->nodes())
    if (n->op_type() == "GroupedAttention") {
      EXPECT_EQ(n->input(3)->name(), "mask_view");
    }
}

TEST(FuseBmmAttention, LeavesAChainWhoseProbabilitiesAreReadElsewhere) {
  Options o;
  auto g = bmm_chain(o);
  g->mark_output(g->value("probs"));  // output_attentions
  run_pass(*g, passes::fuse_bmm_attention());
  EXPECT_EQ(testing::count_ops(*g, "Attention", "octet"), 0);
  EXPECT_EQ(testing::count_ops(*g, "Softmax"), 1);
}

// T5's decoder without past: Q4 [B,H,S,D]; the key head split R [B,T,H,D] read twice,
// Transpose(0,2,1,3) -> present key and Transpose(0,2,3,1) -> K^T; V4 the present value;
// no scale; the relative position bias (+ mask) [1,H,S,T] added to the scores.
std::shared_ptr<Graph> t5_chain() {
  constexpr int64_t S = 5;
  PassGraph p;
  p.input("hidden", DType::Float32, {B, S, E});
  p.input("position_bias", DType::Float32, {1, H, S, S});
  p.node("Neg", {"hidden"}, {"xq"});
  p.node("Sigmoid", {"hidden"}, {"xk"});
  p.node("Tanh", {"hidden"}, {"xv"});
  head_split(p, "xq", "q4", S);
  head_split(p, "xk", "present_key", S);
  head_split(p, "xv", "present_value", S);
  p.node("Transpose", {"present_key_split"}, {"kt"}, {Attribute::make_ints("perm", {0, 2, 3, 1})});
  p.node("MatMul", {"q4", "kt"}, {"scores"});
  p.node("Add", {"scores", "position_bias"}, {"biased"});
  p.node("Softmax", {"biased"}, {"probs"}, {Attribute::make_int("axis", -1)});
  p.node("MatMul", {"probs", "present_value"}, {"mixed"});
  p.node("Transpose", {"mixed"}, {"merged"}, {Attribute::make_ints("perm", {0, 2, 1, 3})});
  shape_const(p, "y_shape", {B, S, E});
  p.node("Reshape", {"merged", "y_shape"}, {"y"});
  p.node("Add", {"y", "hidden"}, {"out"});
  p.output("out");
  p.output("present_key");
  p.output("present_value");
  return p.done();
}

TEST(FuseGroupedAttention, T5UnscaledWithPositionBiasAndTheKeyTransposedFromItsHeadSplit) {
  auto g = testing::rewrite_and_compare(t5_chain, passes::fuse_grouped_attention(), testing::ramp_inputs(*t5_chain()), 1e-5);
  ASSERT_EQ(testing::count_ops(*g, "GroupedAttention", "octet"), 1);
  for (const Node* n : g->nodes())
    if (n->op_type() == "GroupedAttention") {
      EXPECT_FLOAT_EQ(n->attr_float("scale", 0), 1.0f);
      EXPECT_EQ(n->input(1)->name(), "present_key");
      EXPECT_EQ(n->input(3)->name(), "position_bias");
    }
}

// decoder_model_merged: `octet optimize` writes the If's branches as they are, but the If
// kernel loads each branch (load_subgraph) and optimizes it before running it: both
// branches' attention fuses there, as in the split files.
TEST(FuseBmmAttention, MergedDecoderBranchesFuseAsTheIfKernelLoadsThem) {
  for (const char* model : {"marian", "whisper", "t5"}) {
    Model m = load_model(std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/seq2seq/" + model +
                         "/decoder_model_merged.onnx");
    const Node* branch_if = nullptr;
    for (const Node* n : m.graph->nodes())
      if (n->op_type() == "If") branch_if = n;
    ASSERT_TRUE(branch_if) << model;
    for (const char* attr : {"then_branch", "else_branch"}) {
      Model branch = load_subgraph(*branch_if, attr);
      const int softmaxes = testing::count_ops(*branch.graph, "Softmax");
      optimize(*branch.graph);
      EXPECT_EQ(softmaxes, 4) << model << " " << attr;  // 2 layers x (self + cross)
      EXPECT_EQ(testing::count_ops(*branch.graph, "GroupedAttention", "octet"), softmaxes) << model << " " << attr;
      EXPECT_EQ(testing::count_ops(*branch.graph, "Softmax"), 0) << model << " " << attr;
    }
  }
}

}  // namespace
}  // namespace octet
