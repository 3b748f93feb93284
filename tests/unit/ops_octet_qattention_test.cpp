// octet.QAttention (docs/quantization.md section 2): the inference rule shared with
// octet.Attention plus the checks of the eight quantization parameters, the reference
// kernel on a case computed by hand, and the reference kernel against the fake-quant
// graph it stands for (Reshape/Transpose per head, QuantizeLinear/DequantizeLinear on both
// inputs of each MatMul, scale, mask, causal Where, Softmax, head merge) run through the
// reference kernels of the standard ops.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops_shape_test_util.h"
#include "qattention_test_util.h"
#include "ref_math_test_util.h"

namespace octet {
namespace {

using testing::contains;
using testing::error_of;
using testing::S;

// Builds QAttention(q, k, v, mask?, params) with the given parameter types and shapes.
struct ParamSpec {
  DType scale_type = DType::Float32, zp_type = DType::UInt8;
  DimVector scale_dims = {}, zp_dims = {};
};

std::string infer_error(DimVector q, ParamSpec p, std::vector<Attribute> attrs, int params = 8) {
  testing::GraphBuilder b;
  b.g.opset_imports["octet"] = 1;
  b.input("q", DType::Float32, q);
  std::vector<std::string> ins = {"q", "q", "q", ""};
  for (int i = 0; i < params; ++i) {
    std::string name = "p";
    name += std::to_string(i);  // (not "p" + ...: GCC 12's -Wrestrict misfires on it)
    b.input(name, i % 2 ? p.zp_type : p.scale_type, i % 2 ? p.zp_dims : p.scale_dims);
    ins.push_back(name);
  }
  b.g.add_node("QAttention", ins, {"y"}, std::move(attrs), "octet", "qattn");
  return error_of([&] { b.infer(); });
}

std::vector<Attribute> heads(int64_t h) { return {Attribute::make_int("num_heads", h)}; }

TEST(OctetQAttention, InferenceAsAttention) {
  testing::GraphBuilder b;
  b.g.opset_imports["octet"] = 1;
  b.input("q", DType::Float32, DimVector{S("batch"), S("seq"), 64});
  b.input("v", DType::Float32, DimVector{S("batch"), S("seq"), 32});
  b.input("mask", DType::Float32, DimVector{S("batch"), 1, 1, S("seq")});
  b.input("s", DType::Float32, DimVector{});
  b.input("s1", DType::Float32, DimVector{1});
  b.input("zu", DType::UInt8, DimVector{});
  b.input("zs", DType::Int8, DimVector{1});
  b.g.add_node("QAttention", {"q", "q", "v", "mask", "s", "zu", "s1", "zs", "s", "zu", "s1", "zs"}, {"y"},
               heads(4), "octet");
  b.g.add_node("QAttention", {"q", "q", "v", "", "s", "zu", "s", "zu", "s", "zu", "s", "zu"}, {"y2"},
               {Attribute::make_int("num_heads", 2), Attribute::make_int("seq_first", 1)}, "octet");
  b.infer();
  EXPECT_EQ(dims_to_string(b.dims("y")), "[batch,seq,32]");
  EXPECT_EQ(dims_to_string(b.dims("y2")), "[batch,seq,32]");
}

TEST(OctetQAttention, InferenceErrorsNameTheNode) {
  const DimVector x = {2, 5, 16};
  EXPECT_TRUE(contains(infer_error(x, {}, heads(3)), "node 'qattn' (octet.QAttention): "));
  EXPECT_TRUE(contains(infer_error(x, {}, heads(3)), "do not split into num_heads = 3"));
  EXPECT_TRUE(contains(infer_error(x, {}, heads(4), 7), "12 inputs, got 11"));
  EXPECT_TRUE(contains(infer_error(x, {DType::Float16}, heads(4)), "requires float32"));
  EXPECT_TRUE(contains(infer_error(x, {DType::Float32, DType::Int16}, heads(4)), "must be uint8 or int8"));
  EXPECT_TRUE(contains(infer_error(x, {DType::Float32, DType::UInt8, {2}}, heads(4)), "must be a scalar"));
  EXPECT_TRUE(contains(infer_error(x, {DType::Float32, DType::UInt8, {}, {1, 1}}, heads(4)), "must be a scalar"));
  EXPECT_EQ(infer_error(x, {DType::Float32, DType::Int8, {1}, {S("n")}}, heads(4)), "");  // checked at run time

  // A missing parameter (empty name) is an error, and Q must be float32.
  testing::GraphBuilder b;
  b.g.opset_imports["octet"] = 1;
  b.input("q", DType::Float16, x);
  b.input("s", DType::Float32, DimVector{});
  b.input("z", DType::UInt8, DimVector{});
  b.g.add_node("QAttention", {"q", "q", "q", "", "s", "z", "s", "", "s", "z", "s", "z"}, {"y"}, heads(4), "octet");
  EXPECT_TRUE(contains(error_of([&] { b.infer(); }), "all eight scales and zero points are required"));
}

// Runs the one-node graph on the reference kernel.
Tensor run_reference(const std::shared_ptr<Graph>& g, const NamedTensors& in) {
  SessionOptions ref;
  ref.kernels = KernelChoice::Reference;
  return Session(g, ref).run(in)[0].second;
}

TEST(OctetQAttention, ReferenceKernelByHand) {
  // One head, Dk = 1, Dv = 2. q = 1.25 / 0.5 = 2.5 rounds half to even: 2 (u8 zp 0).
  // k = (0, 1) / 0.25 + zp 10 -> (10, 14), centered (0, 4): acc = (0, 8).
  // s = scale * (0.5 * 0.25 * acc) = (0, ln 3) with scale = ln 3: p = (1/4, 3/4).
  // p / 0.125 = (2, 6) (int8 zp -5: stored -3, 1). v / 0.5 + zp 3 (int8):
  //   channel 0: (1, 5) -> (5, 13), centered (2, 10)
  //   channel 1: (100, -100) -> (203, -197) saturate to (127, -128), centered (124, -131)
  // y = 0.125 * 0.5 * (2 * v0 + 6 * v1) = (0.0625 * 64, 0.0625 * -538) = (4, -33.625).
  // (Rounding q half away from zero, to 3, would give p = (0.16, 0.84) -> (1, 7) quanta.)
  using testing::f32;
  using testing::tensor;
  auto g = std::make_shared<Graph>();
  g->opset_imports["octet"] = 1;
  const std::vector<std::pair<std::string, Tensor>> params = {
      {"qs", f32({}, {0.5f})}, {"qz", tensor<uint8_t>({}, {0})},  {"ks", f32({1}, {0.25f})},
      {"kz", tensor<uint8_t>({1}, {10})}, {"vs", f32({}, {0.5f})}, {"vz", tensor<int8_t>({}, {3})},
      {"ps", f32({}, {0.125f})}, {"pz", tensor<int8_t>({}, {-5})}};
  g->add_input("q", TensorType(DType::Float32, DimVector{1, 1, 1}));
  g->add_input("k", TensorType(DType::Float32, DimVector{1, 2, 1}));
  g->add_input("v", TensorType(DType::Float32, DimVector{1, 2, 2}));
  g->add_input("mask", TensorType(DType::Float32, DimVector{1, 1, 1, 2}));
  std::vector<std::string> ins = {"q", "k", "v", "mask"};
  for (auto& [name, t] : params) {
    g->add_initializer(name, std::make_shared<Tensor>(t));
    ins.push_back(name);
  }
  g->add_node("QAttention", ins, {"y"},
              {Attribute::make_int("num_heads", 1), Attribute::make_float("scale", std::log(3.0f))}, "octet");
  g->mark_output(g->value("y"));
  NamedTensors in = {{"q", f32({1, 1, 1}, {1.25f})},
                     {"k", f32({1, 2, 1}, {0, 1.0f})},
                     {"v", f32({1, 2, 2}, {1, 100, 5, -100})},
                     {"mask", f32({1, 1, 1, 2}, {0, 0})}};
  std::vector<float> y = run_reference(g, in).to_float_vector();
  ASSERT_EQ(y.size(), 2u);
  EXPECT_FLOAT_EQ(y[0], 4.0f);
  EXPECT_FLOAT_EQ(y[1], -33.625f);
  // Hiding key 1: p = (1, 0) -> (8, 0) quanta: y = 0.0625 * 8 * (2, 124) = (1, 62).
  in[3].second = f32({1, 1, 1, 2}, {0, std::numeric_limits<float>::lowest()});
  y = run_reference(g, in).to_float_vector();
  EXPECT_FLOAT_EQ(y[0], 1.0f);
  EXPECT_FLOAT_EQ(y[1], 62.0f);
  // The optimized kernel agrees exactly on these.
  EXPECT_EQ(Session(g).run(in)[0].second.to_float_vector(), y);
}

// ---- the fake-quant graph of standard ONNX ops

struct FakeQuantBuilder {
  Graph& g;
  const testing::QCase& c;
  int n = 0;

  std::string fresh() { return "t" + std::to_string(n++); }
  std::string node(const std::string& op, std::vector<std::string> ins, std::vector<Attribute> attrs = {}) {
    const std::string out = fresh();
    g.add_node(op, ins, {out}, std::move(attrs));
    return out;
  }
  std::string constant(Tensor t) {
    const std::string name = fresh();
    g.add_initializer(name, std::make_shared<Tensor>(std::move(t)));
    return name;
  }
  // QuantizeLinear -> DequantizeLinear with the case's parameters for q, k, v or p.
  std::string qdq(const std::string& x, int which) {
    const char* names[] = {"q", "k", "v", "p"};
    const std::string s = std::string(names[which]) + "_scale", z = std::string(names[which]) + "_zp";
    return node("DequantizeLinear", {node("QuantizeLinear", {x, s, z}), s, z});
  }
  // [B, S, H*D] (or [S, B, H*D]) -> [B, H, S, D], permuted by `perm` after the split.
  std::string split_heads(const std::string& x, int64_t len, int64_t d, std::vector<int64_t> perm) {
    std::string t = x;
    if (c.seq_first) t = node("Transpose", {t}, {Attribute::make_ints("perm", {1, 0, 2})});
    t = node("Reshape", {t, constant(Tensor::from_vector<int64_t>({4}, {c.batch, len, c.heads, d}))});
    return node("Transpose", {t}, {Attribute::make_ints("perm", perm)});
  }
};

std::shared_ptr<Graph> fake_quant_graph(const testing::QCase& c, float scale) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 21;
  for (const char* name : {"q", "k", "v"}) {
    const int64_t len = name[0] == 'q' ? c.q_len : c.kv_len, d = name[0] == 'v' ? c.head_v : c.head_k;
    const auto shape = testing::lead_shape(c, len, c.heads * d);
    g->add_input(name, TensorType(DType::Float32, DimVector(shape.begin(), shape.end())));
  }
  for (auto& [name, t] : testing::qattention_params(c)) g->add_initializer(name, std::make_shared<Tensor>(t));
  FakeQuantBuilder b{*g, c};
  const std::string q = b.qdq(b.split_heads("q", c.q_len, c.head_k, {0, 2, 1, 3}), 0);
  const std::string kt = b.qdq(b.split_heads("k", c.kv_len, c.head_k, {0, 2, 3, 1}), 1);
  const std::string v = b.qdq(b.split_heads("v", c.kv_len, c.head_v, {0, 2, 1, 3}), 2);
  std::string s = b.node("Mul", {b.node("MatMul", {q, kt}), b.constant(Tensor::from_vector<float>({}, {scale}))});
  if (!c.mask_shape.empty()) {
    g->add_input("mask", TensorType(DType::Float32, DimVector(c.mask_shape.begin(), c.mask_shape.end())));
    s = b.node("Add", {s, "mask"});
  }
  if (c.causal) {  // GPT-2's Where(visible, s, finfo.min)
    std::vector<uint8_t> visible;
    for (int64_t i = 0; i < c.q_len; ++i)
      for (int64_t j = 0; j < c.kv_len; ++j) visible.push_back(j <= i + (c.kv_len - c.q_len));
    Tensor cond(DType::Bool, {c.q_len, c.kv_len});
    std::copy(visible.begin(), visible.end(), cond.mutable_raw());
    s = b.node("Where", {b.constant(cond), s, b.constant(Tensor::from_vector<float>({}, {std::numeric_limits<float>::lowest()}))});
  }
  const std::string p = b.qdq(b.node("Softmax", {s}, {Attribute::make_int("axis", -1)}), 3);
  std::string y = b.node("Transpose", {b.node("MatMul", {p, v})}, {Attribute::make_ints("perm", {0, 2, 1, 3})});
  y = b.node("Reshape", {y, b.constant(Tensor::from_vector<int64_t>({3}, {c.batch, c.q_len, c.heads * c.head_v}))});
  if (c.seq_first) y = b.node("Transpose", {y}, {Attribute::make_ints("perm", {1, 0, 2})});
  g->add_node("Identity", {y}, {"y"});
  g->mark_output(g->value("y"));
  return g;
}

void expect_matches_fake_quant(const testing::QCase& c) {
  const float scale = 0.37f;
  const NamedTensors in = testing::qattention_inputs(c);
  const Tensor want = run_reference(fake_quant_graph(c, scale), in);
  const Tensor got = run_reference(testing::qattention_graph(c, scale), in);
  const testing::QCompare r = testing::compare_qattention(got, want, c, c.describe());
  // Flips (see qattention_test_util.h) are rare: the scores differ in their last bits only.
  EXPECT_LE(r.loose, r.elements / 50) << c.describe();
  if (r.loose) std::printf("[ flips    ] %s: %lld of %lld outputs\n", c.describe().c_str(), (long long)r.loose, (long long)r.elements);
}

TEST(OctetQAttention, ReferenceMatchesFakeQuantGraph) {
  using namespace testing;
  for (auto with : {with_u8, with_u8_pzp, with_s8, with_s8_asym}) {
    QCase c;
    c.batch = 2, c.q_len = 7, c.kv_len = 7, c.heads = 3, c.head_k = 8, c.head_v = 8;
    expect_matches_fake_quant(with(c));
    c.mask_shape = {2, 1, 1, 7};  // padding mask
    expect_matches_fake_quant(with(c));
    c.mask_shape = {};
    c.causal = true;
    c.q_len = 5, c.kv_len = 9, c.head_v = 4;  // causal with a past
    expect_matches_fake_quant(with(c));
    c.seq_first = true;
    c.mask_shape = {1, 1, 5, 9};
    expect_matches_fake_quant(with(c));
    c.causal = false;
    c.mask_shape = {};
    c.batch = 1, c.q_len = 33, c.kv_len = 33, c.heads = 2, c.head_k = 16, c.head_v = 16;
    expect_matches_fake_quant(with(c));
  }
}

}  // namespace
}  // namespace octet
