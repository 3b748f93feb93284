// fuse_qbmm_attention: the static int8 form of the BART-family per-head [B*H,S,D] ("bmm")
// attention that `octet quantize --calib` writes for Marian / Whisper encoders (Q/DQ on
// both inputs of Q.K^T and of P.V, the softmax either a Softmax or written out per row),
// on hand-built chains: each test asserts the fusion into octet.QAttention on the
// projections, with the chain's own scales and zero points, and that the fused graph
// computes what the fake-quant chain did. The exported fixtures are checked against
// onnxruntime in tests/python/test_seq2seq_attention.py.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "passes/pattern.h"

namespace octet {
namespace {

using testing::PassGraph;

constexpr int64_t B = 2, H = 3, D = 4, E = H * D;

struct Options {
  int64_t s = 5;
  bool rows = true;         // the written-out per-row softmax (--attention int8), else Softmax + Q/DQ
  bool mask = false;        // Marian's padding mask, added to the [B,H,S,T] view
  bool cross_kv = false;    // K4 / V4 are graph inputs (a decoder's cross-attention): not fused
  float score_scale = 0;    // a Mul of the scores when non-zero
  bool v_quantized = true;  // false: P.V reads the float V (a chain no QAttention computes)
};

Value* shape_const(PassGraph& p, const std::string& name, std::vector<int64_t> dims) {
  return p.init(name, passes::int64s(dims));
}

// x -> QuantizeLinear -> DequantizeLinear: `name`, per-tensor uint8 (scale, zero point).
void fake_quant(PassGraph& p, const std::string& x, const std::string& name, float scale, int zero_point) {
  p.scalar(name + "_scale", scale);
  p.init(name + "_zp", Tensor::scalar<uint8_t>(static_cast<uint8_t>(zero_point)));
  p.node("QuantizeLinear", {x, name + "_scale", name + "_zp"}, {name + "_q"});
  p.node("DequantizeLinear", {name + "_q", name + "_scale", name + "_zp"}, {name});
}

std::shared_ptr<Graph> qbmm_chain(const Options& o) {
  const int64_t S = o.s, T = o.s;
  PassGraph p;
  p.input("hidden", DType::Float32, {B, S, E});
  p.node("Neg", {"hidden"}, {"xq"});  // stand-ins for the projections
  p.node("Sigmoid", {"hidden"}, {"xk"});
  p.node("Tanh", {"hidden"}, {"xv"});
  for (const char* x : {"q", "k", "v"}) {
    const std::string n = x;
    if (n != "q" && o.cross_kv) {
      p.input(n + "4", DType::Float32, {B, H, T, D});
    } else {
      shape_const(p, n + "_split_shape", {B, S, H, D});
      p.node("Reshape", {"x" + n, n + "_split_shape"}, {n + "_split"});
      p.node("Transpose", {n + "_split"}, {n + "4"}, {Attribute::make_ints("perm", {0, 2, 1, 3})});
    }
    shape_const(p, n + "3_shape", {B * H, n == "q" ? S : T, D});
    p.node("Reshape", {n + "4", n + "3_shape"}, {n + "3"});
  }
  p.node("Transpose", {"k3"}, {"kt"}, {Attribute::make_ints("perm", {0, 2, 1})});
  fake_quant(p, "q3", "q3_dq", 6.0f / 255, 128);  // Neg of a ramp in [-3, 3]
  fake_quant(p, "kt", "kt_dq", 1.0f / 255, 0);    // Sigmoid
  fake_quant(p, "v3", "v3_dq", 2.0f / 255, 128);  // Tanh
  p.node("MatMul", {"q3_dq", "kt_dq"}, {"scores"});
  std::string s = "scores";
  if (o.score_scale != 0) {
    p.scalar("score_scale", o.score_scale);
    p.node("Mul", {s, "score_scale"}, {"scaled"});
    s = "scaled";
  }
  if (o.mask) {
    p.input("mask", DType::Float32, {B, 1, S, T});
    shape_const(p, "scores4_shape", {B, H, S, T});
    shape_const(p, "scores3_shape", {B * H, S, T});
    p.node("Reshape", {s, "scores4_shape"}, {"scores4"});
    p.node("Add", {"scores4", "mask"}, {"masked4"});
    p.node("Reshape", {"masked4", "scores3_shape"}, {"masked"});
    s = "masked";
  }
  if (o.rows) {  // E = exp(s - rowmax), (Q/DQ(E) . V) / rowsum(E)
    p.node("ReduceMax", {s}, {"row_max"}, {Attribute::make_ints("axes", {-1}), Attribute::make_int("keepdims", 1)});
    p.node("Sub", {s, "row_max"}, {"shifted"});
    p.node("Exp", {"shifted"}, {"probs"});
    p.init("sum_axes", passes::int64s({-1}));
    p.node("ReduceSum", {"probs", "sum_axes"}, {"row_sum"}, {Attribute::make_int("keepdims", 1)});
    fake_quant(p, "probs", "p_dq", 1.0f / 255, 0);
    p.node("MatMul", {"p_dq", o.v_quantized ? "v3_dq" : "v3"}, {"unnormalized"});
    p.node("Div", {"unnormalized", "row_sum"}, {"mixed3"});
  } else {
    p.node("Softmax", {s}, {"probs"}, {Attribute::make_int("axis", -1)});
    fake_quant(p, "probs", "p_dq", 1.0f / 255, 0);
    p.node("MatMul", {"p_dq", o.v_quantized ? "v3_dq" : "v3"}, {"mixed3"});
  }
  shape_const(p, "mixed4_shape", {B, H, S, D});
  shape_const(p, "y_shape", {B, S, E});
  p.node("Reshape", {"mixed3", "mixed4_shape"}, {"mixed4"});
  p.node("Transpose", {"mixed4"}, {"merged"}, {Attribute::make_ints("perm", {0, 2, 1, 3})});
  p.node("Reshape", {"merged", "y_shape"}, {"y"});
  p.node("Add", {"y", "hidden"}, {"out"});  // the out projection's residual
  p.output("out");
  return p.done();
}

NamedTensors feeds(const Graph& g) {
  NamedTensors in = testing::ramp_inputs(g);
  for (auto& [name, t] : in) {
    if (name != "mask") continue;  // padding: the last key of the second sequence hidden
    const int64_t keys = t.shape()[3];
    for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = i >= t.numel() / 2 && (i + 1) % keys == 0 ? -3.4e38f : 0;
  }
  return in;
}

// The fused graph against the fake-quant chain: both compute the same integer products,
// so they agree to float rounding (1e-5 of the output's scale).
std::shared_ptr<Graph> fuse(const Options& o) {
  auto make = [&] { return qbmm_chain(o); };
  return testing::rewrite_and_compare(make, passes::fuse_qbmm_attention(), feeds(*make()), 1e-5);
}

const Node* the_qattention(const Graph& g) {
  const Node* found = nullptr;
  for (const Node* n : g.nodes())
    if (n->op_type() == "QAttention" && n->domain() == "octet") found = n;
  return found;
}

TEST(FuseQBmmAttention, WhisperEncoderRowSoftmaxBecomesQAttentionOnTheProjections) {
  Options o;
  auto g = fuse(o);
  const Node* qa = the_qattention(*g);
  ASSERT_NE(qa, nullptr);
  EXPECT_EQ(testing::count_ops(*g, "QAttention", "octet"), 1);
  for (const char* gone : {"Exp", "ReduceMax", "ReduceSum", "MatMul", "Transpose", "QuantizeLinear", "Div"})
    EXPECT_EQ(testing::count_ops(*g, gone), 0) << gone;
  EXPECT_EQ(qa->attr_int("num_heads", 0), H);
  EXPECT_EQ(qa->attr_int("row_probabilities", 0), 1);
  EXPECT_FLOAT_EQ(qa->attr_float("scale", 0), 1.0f);
  EXPECT_EQ(qa->input(0)->name(), "xq");
  EXPECT_EQ(qa->input(1)->name(), "xk");
  EXPECT_EQ(qa->input(2)->name(), "xv");
  EXPECT_EQ(qa->input(3), nullptr);
  // the chain's per-tensor parameters, unchanged: the layout does not change a per-tensor quantization
  const char* params[] = {"q3_dq_scale", "q3_dq_zp", "kt_dq_scale", "kt_dq_zp", "v3_dq_scale", "v3_dq_zp", "p_dq_scale", "p_dq_zp"};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(qa->input(4 + i)->name(), params[i]);
}

TEST(FuseQBmmAttention, MarianPaddingMaskAndScaledScores) {
  Options o;
  o.mask = true;
  o.score_scale = 0.5f;
  o.s = 7;
  auto g = fuse(o);
  const Node* qa = the_qattention(*g);
  ASSERT_NE(qa, nullptr);
  EXPECT_EQ(qa->input(3)->name(), "mask");
  EXPECT_FLOAT_EQ(qa->attr_float("scale", 0), 0.5f);
  EXPECT_EQ(testing::count_ops(*g, "Reshape"), 0);  // head splits, merges and the mask view all went
}

TEST(FuseQBmmAttention, SoftmaxWithQuantizedProbabilities) {
  Options o;
  o.rows = false;
  o.mask = true;
  auto g = fuse(o);
  const Node* qa = the_qattention(*g);
  ASSERT_NE(qa, nullptr);
  EXPECT_EQ(qa->attr_int("row_probabilities", 0), 0);
  EXPECT_EQ(testing::count_ops(*g, "Softmax"), 0);
}

// A decoder's attention reads 4-D caches (here the cross-attention's inputs): no
// QAttention, but octet.GroupedAttention on them with the four fake quantizations as
// inputs, computing what the chain computes (per-row and Softmax forms, with a mask).
TEST(FuseQBmmAttention, DecoderAttentionOverFourDimensionalInputsBecomesQuantizedGroupedAttention) {
  for (bool rows : {true, false})
    for (bool mask : {false, true}) {
      Options o;
      o.cross_kv = true;
      o.rows = rows;
      o.mask = mask;
      auto g = fuse(o);
      EXPECT_EQ(testing::count_ops(*g, "QAttention", "octet"), 0);
      EXPECT_EQ(testing::count_ops(*g, "Exp") + testing::count_ops(*g, "Softmax"), 0);
      EXPECT_EQ(testing::count_ops(*g, "QuantizeLinear"), 0);  // all four went into the op
      const Node* ga = nullptr;
      for (const Node* n : g->nodes())
        if (n->op_type() == "GroupedAttention") ga = n;
      ASSERT_NE(ga, nullptr);
      EXPECT_EQ(ga->attr_int("row_probabilities", -1), rows ? 1 : 0);
      ASSERT_EQ(ga->inputs().size(), 13u);
      EXPECT_EQ(ga->input(5)->name(), "q3_dq_scale");
      EXPECT_EQ(ga->input(7)->name(), "kt_dq_scale");
      EXPECT_EQ(ga->input(9)->name(), "v3_dq_scale");
      EXPECT_EQ(ga->input(11)->name(), "p_dq_scale");
      EXPECT_EQ(ga->input(3) != nullptr, mask);
    }
}

TEST(FuseQBmmAttention, LeavesAChainMissingAFakeQuantization) {
  Options o;
  o.v_quantized = false;
  auto g = qbmm_chain(o);
  run_pass(*g, passes::fuse_qbmm_attention());
  EXPECT_EQ(testing::count_ops(*g, "QAttention", "octet"), 0);
}

TEST(FuseQBmmAttention, LeavesAChainWhoseProbabilitiesAreReadElsewhere) {
  Options o;
  auto g = qbmm_chain(o);
  g->mark_output(g->value("probs"));
  run_pass(*g, passes::fuse_qbmm_attention());
  EXPECT_EQ(testing::count_ops(*g, "QAttention", "octet"), 0);
  EXPECT_EQ(testing::count_ops(*g, "Exp"), 1);
}

}  // namespace
}  // namespace octet
