// Three static octet.QMatMul projections of one input feeding octet.QAttention become one
// packed int8 projection that the attention reads through channel_ranges; the outputs
// must be the same numbers as the three separate products, with the reference kernels and
// with the optimized ones at every ISA level (oneDNN's, chosen per process: child runs).
#include <gtest/gtest.h>

#include "isa_child_runs.h"
#include "pass_test_util.h"
#include "passes/pattern.h"
#include "qmatmul_test_util.h"

namespace octet {
namespace {

using passes::constant_value;
using testing::count_ops;
using testing::PassGraph;
using testing::run_graph_with;

struct Options {
  std::vector<int64_t> x_shape = {2, 5, 12};  // [B, S, K]
  int64_t v_width = 16;                       // V's channels (H * Dv); Q and K have 16
  DType act = DType::UInt8;                   // a_zero_point's type
  bool k_per_tensor = false;                  // K's b_scale one scalar (others per column)
  bool v_without_bias = false;
  bool q_zero_point = false;                  // Q has an explicit all-zero b_zero_point
  bool channel_scale = false;                 // all three fold the same smoothing Mul
  // Cases the pass must leave alone:
  bool k_other_scale = false;     // K quantizes A with another a_scale
  bool gelu_on_v = false;         // V has an activation
  bool k_also_output = false;     // K's output is a graph output too
  bool k_nonzero_zb = false;      // K's b_zero_point is not zero
  bool dynamic = false;           // the projections quantize A per row (no a_scale)
  std::string dynamic_type;       // with dynamic: the attribute ("" leaves it out: uint8)
  bool k_static = false;          // with dynamic: K alone quantizes A with a_scale
};

std::shared_ptr<Graph> qkv_graph(const Options& o) {
  PassGraph b;
  b.g->opset_imports["octet"] = 1;
  const int64_t k = o.x_shape.back();
  b.input("x", DType::Float32, DimVector(o.x_shape.begin(), o.x_shape.end()));
  b.init("sa", Tensor::scalar<float>(2.1f / 255.0f));
  b.init("sa2", Tensor::scalar<float>(1.7f / 255.0f));
  if (o.act == DType::UInt8) b.init("za", Tensor::scalar<uint8_t>(127));
  else b.init("za", Tensor::scalar<int8_t>(-2));
  std::vector<float> cs(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) cs[static_cast<size_t>(i)] = 0.5f + 0.1f * static_cast<float>(i % 7);
  Tensor channel(DType::Float32, {k});
  std::copy(cs.begin(), cs.end(), channel.mutable_data<float>());
  b.init("cs", std::move(channel));
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    const std::string n = names[i];
    const int64_t width = i == 2 ? o.v_width : 16;
    b.init(n + "_w", testing::qmm::rand_int8({k, width}, 10 + i));
    const bool per_tensor = i == 1 && o.k_per_tensor;
    Tensor sb(DType::Float32, per_tensor ? std::vector<int64_t>{} : std::vector<int64_t>{width});
    for (int64_t c = 0; c < sb.numel(); ++c)
      sb.mutable_data<float>()[c] = (0.6f + 0.05f * static_cast<float>((c + i) % 9)) / (127.0f * std::sqrt(float(k)));
    b.init(n + "_sb", std::move(sb));
    b.init(n + "_b", testing::ramp(DType::Float32, {width}, 20 + i, 0.2f));
    Tensor zb(DType::Int8, {width});
    for (int64_t c = 0; c < width; ++c) zb.mutable_data<int8_t>()[c] = i == 1 && o.k_nonzero_zb && c == 3 ? 1 : 0;
    b.init(n + "_zb", std::move(zb));
    const bool zero_point = (i == 0 && o.q_zero_point) || (i == 1 && o.k_nonzero_zb);
    const bool dynamic = o.dynamic && !(i == 1 && o.k_static);
    std::vector<std::string> ins = {"x", dynamic ? "" : (i == 1 && o.k_other_scale ? "sa2" : "sa"),
                                    dynamic ? "" : "za", n + "_w", n + "_sb", zero_point ? n + "_zb" : "",
                                    i == 2 && o.v_without_bias ? "" : n + "_b", "", o.channel_scale ? "cs" : ""};
    while (ins.back().empty()) ins.pop_back();
    std::vector<Attribute> attrs;
    if (i == 2 && o.gelu_on_v) attrs.push_back(Attribute::make_string("activation", "gelu"));
    if (dynamic && !o.dynamic_type.empty()) attrs.push_back(Attribute::make_string("dynamic_type", o.dynamic_type));
    b.node("QMatMul", ins, {n}, attrs, "octet");
  }
  // Q, K, V, P quantization parameters of the attention (uint8, mid-range zero points).
  const float qs[] = {0.03f, 0.035f, 0.02f, 1.0f / 255.0f};
  const int zs[] = {128, 120, 131, 0};
  std::vector<std::string> ins = {"q", "k", "v", ""};
  for (int i = 0; i < 4; ++i) {
    const std::string s = "attn_s" + std::to_string(i), z = "attn_z" + std::to_string(i);
    b.init(s, Tensor::scalar<float>(qs[i]));
    b.init(z, Tensor::scalar<uint8_t>(static_cast<uint8_t>(zs[i])));
    ins.push_back(s);
    ins.push_back(z);
  }
  b.node("QAttention", ins, {"y"}, {Attribute::make_int("num_heads", 2)}, "octet");
  b.output("y");
  if (o.k_also_output) b.output("k");
  return b.done();
}

std::vector<Options> merge_cases() {
  std::vector<Options> out;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 5, 12}, {1, 1, 12}, {3, 17, 7}, {1, 64, 40}}) {
    Options o;
    o.x_shape = shape;
    out.push_back(o);
  }
  Options narrow_v, int8_act, mixed, smooth, dynamic, dynamic_int8;
  dynamic.dynamic = true;  // octet quantize's per-token linear inputs: rows quantized at run time
  dynamic.x_shape = {2, 9, 24};
  dynamic_int8 = dynamic;
  dynamic_int8.dynamic_type = "int8";
  dynamic_int8.channel_scale = true;
  out.push_back(dynamic);
  out.push_back(dynamic_int8);
  narrow_v.v_width = 8;
  int8_act.act = DType::Int8;
  mixed.k_per_tensor = mixed.v_without_bias = mixed.q_zero_point = true;
  smooth.channel_scale = true;
  smooth.x_shape = {2, 9, 24};
  for (const Options& o : {narrow_v, int8_act, mixed, smooth}) out.push_back(o);
  return out;
}

// At the ISA level this process runs (see the child-run test below for all of them).
TEST(FuseQAttentionQkv, MergedProjectionGivesTheSameNumbers) {
  for (const Options& o : merge_cases()) {
    SCOPED_TRACE("x " + shape_to_string(o.x_shape) + " v_width " + std::to_string(o.v_width));
    auto original = qkv_graph(o), merged = qkv_graph(o);
    EXPECT_EQ(run_pass(*merged, passes::fuse_qattention_qkv()).passes[0].rewrites, 1);
    EXPECT_TRUE(verify_graph(*merged).empty());
    ASSERT_EQ(count_ops(*merged, "QMatMul", "octet"), 1);
    const Node* attention = nullptr;
    for (const Node* n : merged->nodes())
      if (n->op_type() == "QAttention") attention = n;
    ASSERT_NE(attention, nullptr);
    EXPECT_EQ(attention->attr_ints("channel_ranges"), (std::vector<int64_t>{0, 16, 16, 32, 32, 32 + o.v_width}));
    const Node* packed = attention->input(0)->producer();
    ASSERT_EQ(packed->op_type(), "QMatMul");
    const int64_t k = o.x_shape.back();
    EXPECT_EQ(constant_value(packed->input(3))->shape(), (std::vector<int64_t>{k, 32 + o.v_width}));
    EXPECT_EQ(constant_value(packed->input(4))->shape(), (std::vector<int64_t>{32 + o.v_width}));

    const NamedTensors in = {{"x", testing::ramp(DType::Float32, o.x_shape, 1, 1.2f)}};
    for (KernelChoice kernels : {KernelChoice::Reference, KernelChoice::Optimized}) {
      const NamedTensors want = run_graph_with(original, in, kernels), got = run_graph_with(merged, in, kernels);
      EXPECT_LE(testing::max_relative_error(got, want), 1e-6)
          << (kernels == KernelChoice::Reference ? "reference kernels" : "optimized kernels");
    }
  }
}

TEST(FuseQAttentionQkv, MergedProjectionGivesTheSameNumbersAtEveryIsa) {
  testing::expect_child_runs_pass_at_every_isa("FuseQAttentionQkv.MergedProjectionGivesTheSameNumbers",
                                               "fuse_qattention_qkv");
}

TEST(FuseQAttentionQkv, ProjectionsThatCannotMergeStay) {
  Options other_scale, gelu, shared, zb, mixed_dynamic;
  other_scale.k_other_scale = true;
  gelu.gelu_on_v = true;
  shared.k_also_output = true;
  zb.k_nonzero_zb = true;
  mixed_dynamic.dynamic = mixed_dynamic.k_static = true;  // K static, Q and V per row
  for (const Options& o : {other_scale, gelu, shared, zb, mixed_dynamic}) {
    auto g = qkv_graph(o);
    EXPECT_EQ(run_pass(*g, passes::fuse_qattention_qkv()).passes[0].rewrites, 0);
    EXPECT_EQ(count_ops(*g, "QMatMul", "octet"), 3);
  }
}

}  // namespace
}  // namespace octet
