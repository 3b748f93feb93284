// octet.QMatMul -> per-row LayerNormQuantize of its float output -> one QMatMul with the
// LayerNorm in its epilogue (norm_dynamic_type). The rewrite changes no number: with the
// reference kernels and with the optimized ones the graph's outputs (the QMatMul's float
// Y, the per-token reader's output that reads Q, the normalized Y) are the same bits as
// the original graph's, at 1 and 2 threads and at every ISA level (child runs).
#include <gtest/gtest.h>

#include "int8_rewrite_test_util.h"
#include "isa_child_runs.h"
#include "qmatmul_test_util.h"

namespace octet {
namespace {

using testing::PassGraph;

struct Options {
  std::vector<int64_t> x_shape = {2, 9, 24};
  std::string norm_type = "uint8";  // the LayerNormQuantize's dynamic_type
  bool smoothed = false;            // q_scale / q_bias (a SmoothQuant twin)
  bool norm_bias = true;
  bool normalized_y = false;        // the LayerNormQuantize's float Y is read (post-LN: the residual)
  bool y_read = true;               // the QMatMul's float output is read elsewhere too (pre-LN: the residual)
  bool per_row_a = false;           // the QMatMul reads a per-row quantized A (FFN down-projection)
  bool gelu = false;
  // Cases that must stay:
  bool static_norm = false;         // the LayerNormQuantize is static (y_scale)
  bool param_input = false;         // the LayerNorm scale is a graph input, not a constant
};

std::shared_ptr<Graph> make(const Options& o) {
  PassGraph b;
  b.g->opset_imports["octet"] = 1;
  const int64_t k = o.x_shape.back(), n = 40, r = 16;
  DimVector y_dims(o.x_shape.begin(), o.x_shape.end() - 1);
  y_dims.push_back(Dim(n));
  b.input("x", DType::Float32, DimVector(o.x_shape.begin(), o.x_shape.end()));
  b.input("res", DType::Float32, y_dims);
  b.init("w1", testing::qmm::rand_int8({k, n}, 3));
  b.init("sb1", testing::ramp(DType::Float32, {n}, 6, 1.0f / (127.0f * std::sqrt(float(k)))));
  b.init("b1", testing::ramp(DType::Float32, {n}, 4, 0.5f));
  b.init("os", testing::ramp(DType::Float32, {n}, 5, 0.3f));
  std::vector<std::string> p_ins = {"x", "", "", "w1", "sb1", "", "b1", "res", "", "os"};
  std::vector<Attribute> p_attrs = {Attribute::make_string("dynamic_type", "uint8")};
  if (o.gelu) p_attrs.push_back(Attribute::make_string("activation", "gelu"));
  if (o.per_row_a) {
    // A quantized per row by a LayerNormQuantize of x (as FC1's rows reach FC2).
    b.init("g0", testing::ramp(DType::Float32, {k}, 7, 1.0f));
    b.node("LayerNormQuantize", {"x", "g0"}, {"qx", "sx", "zx"},
           {Attribute::make_string("dynamic_type", "uint8"), Attribute::make_float("epsilon", 1e-6f)}, "octet");
    p_ins[0] = "qx", p_ins[1] = "sx", p_ins[2] = "zx";
  }
  b.node("QMatMul", p_ins, {"h"}, p_attrs, "octet");
  // The LayerNorm of h: parameters with a nonzero mean, so the normalization matters.
  if (o.param_input) b.input("g", DType::Float32, {Dim(n)});
  else b.init("g", testing::ramp(DType::Float32, {n}, 8, 1.5f));
  b.init("be", testing::ramp(DType::Float32, {n}, 9, 0.2f));
  b.init("qg", testing::ramp(DType::Float32, {n}, 10, 0.7f));
  b.init("qb", testing::ramp(DType::Float32, {n}, 11, 0.1f));
  b.init("ys", Tensor::scalar<float>(0.02f));
  std::vector<std::string> l_ins = {"h", "g", o.norm_bias ? "be" : ""};
  if (o.static_norm) l_ins.push_back("ys");
  if (o.smoothed) l_ins.resize(7), l_ins[5] = "qg", l_ins[6] = "qb";
  std::vector<Attribute> l_attrs = {Attribute::make_float("epsilon", 1e-6f)};
  if (!o.static_norm) l_attrs.push_back(Attribute::make_string("dynamic_type", o.norm_type));
  std::vector<std::string> l_outs = {"q"};
  if (!o.static_norm) l_outs.insert(l_outs.end(), {"qs", "qz"});
  if (o.normalized_y) l_outs.push_back("ny");
  b.node("LayerNormQuantize", l_ins, l_outs, l_attrs, "octet");
  // The per-token reader of Q.
  b.init("w2", testing::qmm::rand_int8({n, r}, 12));
  b.init("sb2", Tensor::scalar<float>(1.0f / (127.0f * std::sqrt(float(n)))));
  if (o.static_norm) {
    b.init("zq", Tensor::scalar<uint8_t>(0));
    b.node("QMatMul", {"q", "ys", "zq", "w2", "sb2"}, {"out"}, {}, "octet");
  } else {
    b.node("QMatMul", {"q", "qs", "qz", "w2", "sb2"}, {"out"},
           {Attribute::make_string("dynamic_type", o.norm_type)}, "octet");
  }
  b.output("out");
  if (o.y_read) b.output("h");
  if (o.normalized_y) b.output("ny");
  return b.done();
}

NamedTensors inputs_for(const Options& o) {
  std::vector<int64_t> y_shape(o.x_shape.begin(), o.x_shape.end() - 1);
  y_shape.push_back(40);
  NamedTensors in = {{"x", testing::ramp(DType::Float32, o.x_shape, 1, 2.0f)},
                     {"res", testing::ramp(DType::Float32, y_shape, 7, 3.0f)}};
  if (o.param_input) in.emplace_back("g", testing::ramp(DType::Float32, {40}, 8, 1.5f));
  return in;
}

void expect_rewrite(const Options& o) {
  auto original = make(o), fused = make(o);
  EXPECT_EQ(run_pass(*fused, passes::fuse_qmatmul_layer_norm()).passes[0].rewrites, 1);
  EXPECT_TRUE(verify_graph(*fused).empty());
  int normalizing = 0;
  for (const Node* n : fused->nodes()) {
    if (n->op_type() != "QMatMul" || !n->has_attr("norm_dynamic_type")) continue;
    ++normalizing;
    EXPECT_EQ(n->attr_string("norm_dynamic_type", ""), o.norm_type);
    EXPECT_EQ(n->outputs().size(), o.normalized_y ? 5u : 4u);
    EXPECT_EQ(n->output(1)->type.dtype, DType::UInt8);
    EXPECT_EQ(n->output(3)->type.dtype, DType::Int32);
  }
  EXPECT_EQ(normalizing, 1);
  testing::expect_rewrite_keeps_bits(original, fused, inputs_for(o));
}

TEST(FuseQMatMulLayerNorm, RewritesKeepTheNumbers) {
  for (int v = 0; v < 10; ++v) {
    Options o;
    o.norm_type = v % 2 ? "int8" : "uint8";
    o.smoothed = v == 2 || v == 3 || v == 7;
    o.normalized_y = v == 3 || v == 4 || v == 7;  // post-LN: Y read only through the LayerNorm
    o.y_read = !o.normalized_y;
    o.per_row_a = v == 5 || v == 7;
    o.gelu = v == 6;
    o.norm_bias = v != 6;
    if (v == 8) o.x_shape = {1, 1, 24};  // one row
    if (v == 4) o.x_shape = {3, 70, 24};  // 210 rows: uneven thread shares
    // 14000 rows: at N = 40 a row block holds 6553 rows (1 MiB of sums), so each thread's
    // share runs in two or three blocks and the epilogue writes rows past the first block.
    if (v == 9) o.x_shape = {2, 7000, 24};
    SCOPED_TRACE("variant " + std::to_string(v));
    expect_rewrite(o);
  }
}

TEST(FuseQMatMulLayerNorm, RewritesKeepTheNumbersAtEveryIsa) {
  testing::expect_child_runs_pass_at_every_isa("FuseQMatMulLayerNorm.RewritesKeepTheNumbers",
                                               "fuse_qmatmul_layer_norm");
}

TEST(FuseQMatMulLayerNorm, CasesThatMustStay) {
  Options static_norm, param_input;
  static_norm.static_norm = true;
  param_input.param_input = true;
  for (const Options& o : {static_norm, param_input}) {
    auto g = make(o);
    EXPECT_EQ(run_pass(*g, passes::fuse_qmatmul_layer_norm()).passes[0].rewrites, 0);
    for (const Node* n : g->nodes()) EXPECT_FALSE(n->has_attr("norm_dynamic_type"));
  }
}

// A normalizing QMatMul's Y feeds its LayerNorm outputs: later passes (a re-optimized
// file) must not fold a Mul (LayerScale) or an Add (residual) into it.
TEST(FuseQMatMulLayerNorm, LaterFoldsLeaveANormalizingNodeAlone) {
  for (int v = 0; v < 2; ++v) {
    PassGraph b;
    b.g->opset_imports["octet"] = 1;
    b.input("x", DType::Float32, {Dim(4), Dim(8)});
    b.input("r", DType::Float32, {Dim(4), Dim(16)});
    b.init("w", testing::qmm::rand_int8({8, 16}, 3));
    b.init("sb", Tensor::scalar<float>(0.01f));
    b.init("g", testing::ramp(DType::Float32, {16}, 8, 1.5f));
    b.init("lam", testing::ramp(DType::Float32, {16}, 9, 0.5f));
    b.node("QMatMul", {"x", "", "", "w", "sb"}, {"h"}, {Attribute::make_string("dynamic_type", "uint8")}, "octet");
    b.node("LayerNormQuantize", {"h", "g"}, {"q", "qs", "qz"}, {Attribute::make_string("dynamic_type", "uint8")},
           "octet");
    b.node(v == 0 ? "Mul" : "Add", {"h", v == 0 ? "lam" : "r"}, {"m"});
    b.output("q");
    b.output("m");
    auto g = b.done();
    ASSERT_EQ(run_pass(*g, passes::fuse_qmatmul_layer_norm()).passes[0].rewrites, 1);
    const Pass later = v == 0 ? passes::fold_matmul_output_scale() : passes::fuse_matmul_epilogue();
    EXPECT_EQ(run_pass(*g, later).passes[0].rewrites, 0) << (v == 0 ? "Mul" : "Add") << " was folded";
  }
}

// Bad input gets a clear error: a LayerNorm parameter without norm_dynamic_type, and
// norm_dynamic_type with a per-row Y.
TEST(FuseQMatMulLayerNorm, InferenceRefusesInconsistentNodes) {
  for (int v = 0; v < 2; ++v) {
    PassGraph b;
    b.g->opset_imports["octet"] = 1;
    b.input("x", DType::Float32, {Dim(4), Dim(8)});
    b.init("w", testing::qmm::rand_int8({8, 16}, 3));
    b.init("sb", Tensor::scalar<float>(0.01f));
    b.init("g", testing::ramp(DType::Float32, {16}, 8, 1.5f));
    std::vector<std::string> ins = {"x", "", "", "w", "sb", "", "", "", "", "", "", "", "g"};
    std::vector<Attribute> attrs;
    std::vector<std::string> outs = {"y"};
    if (v == 1) {
      attrs = {Attribute::make_string("norm_dynamic_type", "uint8"), Attribute::make_string("y_dynamic_type", "uint8")};
      outs = {"y", "q", "s", "z"};
    }
    try {
      b.node("QMatMul", ins, outs, attrs, "octet");
      b.output("y");
      b.done();
      ADD_FAILURE() << "variant " << v << " was accepted";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(v == 0 ? "without norm_dynamic_type" : "exclude each other"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace octet
