// octet.QMatMul: the inference rule's checks, the reference kernel against a hand
// computation, and the reference kernel against the fake-quant float graph it replaces
// (QuantizeLinear -> DequantizeLinear -> MatMul -> Add [-> Gelu -> Add]) run through the
// ai.onnx reference kernels on random data.
#include <gtest/gtest.h>

#include <cmath>

#include "ops_shape_test_util.h"
#include "pass_test_util.h"
#include "qmatmul_test_util.h"
#include "ref_math_test_util.h"

namespace octet {
namespace {

using testing::contains;
using testing::error_of;
using testing::f32;
using testing::S;
using testing::tensor;

// Builds one QMatMul node over inputs of the given types and runs inference; returns its
// error ("" when it infers) and the output's dims in *out.
struct In {
  std::string name;
  DType type;
  std::optional<DimVector> dims;
};
std::string infer_error(const std::vector<std::optional<In>>& ins, std::vector<Attribute> attrs = {},
                        std::string* out = nullptr) {
  testing::GraphBuilder b;
  b.g.opset_imports["octet"] = 1;
  std::vector<std::string> names;
  for (const auto& i : ins) {
    names.push_back(i ? i->name : "");
    if (i) b.input(i->name, i->type, i->dims);
  }
  b.g.add_node("QMatMul", names, {"y"}, std::move(attrs), "octet", "qmm");
  const std::string err = error_of([&] { b.infer(); });
  if (err.empty() && out) *out = dims_to_string(b.dims("y")) + " " + dtype_name(b.type("y").dtype);
  return err;
}

const In kA{"a", DType::Float32, DimVector{S("batch"), S("seq"), 4}};
const In kScale{"s", DType::Float32, DimVector{}};
const In kZpU8{"z", DType::UInt8, DimVector{}};
const In kB{"b", DType::Int8, DimVector{4, 6}};
const In kSb{"sb", DType::Float32, DimVector{6}};
const In kZb{"zb", DType::Int8, DimVector{6}};
const In kBias{"bias", DType::Float32, DimVector{6}};
const In kRes{"r", DType::Float32, DimVector{S("batch"), S("seq"), 6}};

TEST(OctetQuantOps, QMatMulInfersTheOutput) {
  std::string out;
  EXPECT_EQ(infer_error({kA, kScale, kZpU8, kB, kSb, kZb, kBias, kRes}, {}, &out), "");
  EXPECT_EQ(out, "[batch,seq,6] float32");
  // Dynamic (no a_scale), per-tensor b_scale as [1], 1-D A.
  EXPECT_EQ(infer_error({In{"a", DType::Float32, DimVector{4}}, std::nullopt, std::nullopt, kB,
                         In{"sb", DType::Float32, DimVector{1}}},
                        {Attribute::make_string("dynamic_type", "int8")}, &out),
            "");
  EXPECT_EQ(out, "[6] float32");
  EXPECT_EQ(infer_error({kA, kScale, In{"z", DType::Int8, DimVector{1}}, kB, In{"sb", DType::Float32, DimVector{}},
                         In{"zb", DType::Int8, DimVector{}}},
                        {Attribute::make_string("activation", "gelu_tanh")}),
            "");
}

TEST(OctetQuantOps, QMatMulInferenceErrorsNameTheNodeAndInput) {
  auto expect = [](const std::string& err, const std::string& fragment) {
    EXPECT_TRUE(contains(err, "node 'qmm' (octet.QMatMul)")) << err;
    EXPECT_TRUE(contains(err, fragment)) << "want '" << fragment << "' in: " << err;
  };
  const std::optional<In> none;
  // Types.
  expect(infer_error({In{"a", DType::Float16, DimVector{2, 4}}, kScale, kZpU8, kB, kSb}), "input 0 'a'");
  expect(infer_error({kA, kScale, kZpU8, In{"b", DType::UInt8, DimVector{4, 6}}, kSb}), "requires int8");
  expect(infer_error({kA, kScale, In{"z", DType::Int32, DimVector{}}, kB, kSb}), "uint8 or int8");
  expect(infer_error({kA, kScale, kZpU8, kB, kSb, In{"zb", DType::UInt8, DimVector{6}}}), "input 5 'zb'");
  expect(infer_error({kA, kScale, kZpU8, kB, kSb, kZb, In{"bias", DType::Int32, DimVector{6}}}), "input 6 'bias'");
  // Ranks and shapes.
  expect(infer_error({kA, kScale, kZpU8, In{"b", DType::Int8, DimVector{2, 4, 6}}, kSb}), "must be 2-D [K, N]");
  expect(infer_error({In{"a", DType::Float32, DimVector{2, 5}}, kScale, kZpU8, kB, kSb}), "inner dimensions differ");
  expect(infer_error({kA, In{"s", DType::Float32, DimVector{4}}, kZpU8, kB, kSb}), "(a_scale) must be a scalar");
  expect(infer_error({kA, kScale, In{"z", DType::UInt8, DimVector{2}}, kB, kSb}), "(a_zero_point) must be a scalar");
  expect(infer_error({kA, kScale, kZpU8, kB, In{"sb", DType::Float32, DimVector{5}}}), "has 5 values; B has N = 6");
  expect(infer_error({kA, kScale, kZpU8, kB, In{"sb", DType::Float32, DimVector{1, 6}}}), "a scalar, [1] or [N]");
  expect(infer_error({kA, kScale, kZpU8, kB, kSb, In{"zb", DType::Int8, DimVector{}}}),
         "both be per tensor or both per column");
  expect(infer_error({kA, kScale, kZpU8, kB, kSb, kZb, In{"bias", DType::Float32, DimVector{5}}}),
         "(bias) has 5 elements");
  expect(infer_error({kA, kScale, kZpU8, kB, kSb, kZb, kBias, In{"r", DType::Float32, DimVector{6}}}),
         "(the residual) must have the output's shape");
  // a_zero_point only with a_scale; dynamic_type only without; attribute values.
  expect(infer_error({kA, none, kZpU8, kB, kSb}), "without a_scale");
  expect(infer_error({kA, kScale, kZpU8, kB, kSb}, {Attribute::make_string("dynamic_type", "int8")}),
         "dynamic_type applies only without a_scale");
  expect(infer_error({kA, none, none, kB, kSb}, {Attribute::make_string("dynamic_type", "int4")}),
         "dynamic_type must be");
  expect(infer_error({kA, kScale, kZpU8, kB, kSb}, {Attribute::make_string("activation", "relu")}),
         "activation must be");
  expect(infer_error({kA, kScale, kZpU8, kB}), "b_scale (input 4) are required");
}

TEST(OctetQuantOps, QMatMulTakesAQuantizedA) {
  auto expect = [](const std::string& err, const std::string& fragment) {
    EXPECT_TRUE(contains(err, fragment)) << "want '" << fragment << "' in: " << err;
  };
  const std::optional<In> none;
  const In a_u8{"a", DType::UInt8, DimVector{S("batch"), S("seq"), 4}};
  const In a_s8{"a", DType::Int8, DimVector{S("batch"), S("seq"), 4}};
  std::string out;
  EXPECT_EQ(infer_error({a_u8, kScale, kZpU8, kB, kSb, kZb, kBias, kRes}, {}, &out), "");
  EXPECT_EQ(out, "[batch,seq,6] float32");
  EXPECT_EQ(infer_error({a_u8, kScale, none, kB, kSb}), "");
  EXPECT_EQ(infer_error({a_s8, kScale, In{"z", DType::Int8, DimVector{}}, kB, kSb}), "");
  expect(infer_error({a_u8, none, none, kB, kSb}), "already quantized: a_scale (input 1) is required");
  expect(infer_error({a_s8, kScale, kZpU8, kB, kSb}), "they must have one type");
  expect(infer_error({a_s8, kScale, none, kB, kSb}), "they must have one type");
  expect(infer_error({a_u8, kScale, kZpU8, kB, kSb, none, none, none, In{"c", DType::Float32, DimVector{4}}}),
         "a_channel_scale applies to a float A only");
  // The reference: qa is A itself. A = [[5, 2, 8], [3, 5, 1]] with za = 3 is the hand
  // computation below: Y = [[-2.25, 3], [3, -2]].
  const Tensor qa = tensor<uint8_t>({2, 3}, {5, 2, 8, 3, 5, 1});
  const Tensor y = testing::run({"QMatMul",
                                 {qa, Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(3),
                                  tensor<int8_t>({3, 2}, {1, -2, 3, 4, -5, 6}), f32({2}, {0.25f, 0.5f}),
                                  tensor<int8_t>({2}, {0, 1}), f32({2}, {1, -1})},
                                 {}, 21, 1, "octet"})[0];
  EXPECT_EQ(y.to_float_vector(), (std::vector<float>{-2.25f, 3, 3, -2}));
}

// A uint8 A quantized per row (LayerNormQuantize's per-row mode): a_scale float32 and
// a_zero_point int32 with one value per row.
TEST(OctetQuantOps, QMatMulTakesAPerRowQuantizedA) {
  auto expect = [](const std::string& err, const std::string& fragment) {
    EXPECT_TRUE(contains(err, fragment)) << "want '" << fragment << "' in: " << err;
  };
  const std::optional<In> none;
  const In a_u8{"a", DType::UInt8, DimVector{S("batch"), S("seq"), 4}};
  const In a_s8{"a", DType::Int8, DimVector{S("batch"), S("seq"), 4}};
  const In rs{"s", DType::Float32, DimVector{S("batch"), S("seq")}};
  const In rz{"z", DType::Int32, DimVector{S("batch"), S("seq")}};
  std::string out;
  EXPECT_EQ(infer_error({a_u8, rs, rz, kB, kSb, kZb, kBias, kRes}, {Attribute::make_string("dynamic_type", "uint8")},
                        &out),
            "");
  EXPECT_EQ(out, "[batch,seq,6] float32");
  expect(infer_error({a_s8, rs, rz, kB, kSb}), "A must be uint8, got int8");
  expect(infer_error({a_u8, In{"s", DType::Float32, DimVector{S("batch"), S("seq"), 4}}, rz, kB, kSb}),
         "must have one value per row of A");
  expect(infer_error({a_u8, rs, In{"z", DType::Int32, DimVector{S("batch")}}, kB, kSb}),
         "must have one value per row of A");
  expect(infer_error({a_u8, rs, rz, kB, kSb, none, none, none, In{"c", DType::Float32, DimVector{4}}}),
         "a_channel_scale applies to a float A only");
  // The reference: row m uses a_scale[m], a_zero_point[m]. Row 0 is the hand computation
  // of QMatMulTakesAQuantizedA ([-2.25, 3]); row 1 with scale 1 instead of 0.5 doubles
  // its product: 2 * ([3, -2] - bias) + bias = [5, -3].
  const Tensor y = testing::run({"QMatMul",
                                 {tensor<uint8_t>({2, 3}, {5, 2, 8, 3, 5, 1}), f32({2}, {0.5f, 1.0f}),
                                  tensor<int32_t>({2}, {3, 3}), tensor<int8_t>({3, 2}, {1, -2, 3, 4, -5, 6}),
                                  f32({2}, {0.25f, 0.5f}), tensor<int8_t>({2}, {0, 1}), f32({2}, {1, -1})},
                                 {}, 21, 1, "octet"})[0];
  EXPECT_EQ(y.to_float_vector(), (std::vector<float>{-2.25f, 3, 5, -3}));
}

std::string norm_quantize_error(const std::vector<std::optional<In>>& ins, int outputs = 1, std::string* out = nullptr,
                                std::vector<Attribute> attrs = {}) {
  testing::GraphBuilder b;
  b.g.opset_imports["octet"] = 1;
  std::vector<std::string> names;
  for (const auto& i : ins) {
    names.push_back(i ? i->name : "");
    if (i) b.input(i->name, i->type, i->dims);
  }
  const bool per_row = !attrs.empty();
  std::vector<std::string> outs = per_row ? std::vector<std::string>{"q", "qs", "qz", "y"} : std::vector<std::string>{"q", "y"};
  outs.resize(static_cast<size_t>(outputs));
  b.g.add_node("LayerNormQuantize", names, outs, std::move(attrs), "octet", "lnq");
  const std::string err = error_of([&] { b.infer(); });
  if (err.empty() && out) {
    out->clear();
    for (const std::string& o : outs) *out += (out->empty() ? "" : ", ") + dims_to_string(b.dims(o)) + " " + dtype_name(b.type(o).dtype);
  }
  return err;
}

TEST(OctetQuantOps, LayerNormQuantizeInfersAndChecks) {
  const std::optional<In> none;
  const In x{"x", DType::Float32, DimVector{S("batch"), 5, 4}};
  const In g{"g", DType::Float32, DimVector{4}}, b{"b", DType::Float32, DimVector{4}};
  const In gs{"gs", DType::Float32, DimVector{4}}, bs{"bs", DType::Float32, DimVector{4}};
  const In zs8{"z", DType::Int8, DimVector{}};
  std::string out;
  EXPECT_EQ(norm_quantize_error({x, g, b, kScale, kZpU8, gs, bs}, 2, &out), "");
  EXPECT_EQ(out, "[batch,5,4] uint8, [batch,5,4] float32");
  EXPECT_EQ(norm_quantize_error({x, g, none, kScale, zs8}, 1, &out), "");
  EXPECT_EQ(out, "[batch,5,4] int8");
  EXPECT_EQ(norm_quantize_error({x, g, none, kScale}, 1, &out), "");
  EXPECT_EQ(out, "[batch,5,4] uint8");
  auto expect = [](const std::string& err, const std::string& fragment) {
    EXPECT_TRUE(contains(err, "node 'lnq' (octet.LayerNormQuantize)")) << err;
    EXPECT_TRUE(contains(err, fragment)) << "want '" << fragment << "' in: " << err;
  };
  expect(norm_quantize_error({x, none, none, kScale}), "scale (input 1) is required");
  expect(norm_quantize_error({x, g, b, none}), "y_scale (input 3) is required");
  expect(norm_quantize_error({x, In{"g", DType::Float32, DimVector{5}}, b, kScale}), "X's last dim is 4");
  expect(norm_quantize_error({x, g, b, kScale, kZpU8, gs, In{"bs", DType::Float32, DimVector{4, 1}}}),
         "must be 1-D [K]");
  expect(norm_quantize_error({x, g, b, kScale, kZpU8, none, bs}), "q_bias (input 6) is given without q_scale");
  expect(norm_quantize_error({x, g, b, In{"s", DType::Float32, DimVector{4}}}), "(y_scale) must be a scalar");
  expect(norm_quantize_error({x, g, b, kScale, In{"z", DType::Int32, DimVector{}}}), "uint8 or int8");
  expect(norm_quantize_error({In{"x", DType::Float16, DimVector{2, 4}}, g, b, kScale}), "input 0 'x'");
  expect(norm_quantize_error({x, g, b, kScale}, 3), "has outputs Q and (optional) Y");

  // Per-row mode (dynamic_type): Q uint8, a_scale float32 / a_zero_point int32 per row, Y.
  const std::vector<Attribute> u8 = {Attribute::make_string("dynamic_type", "uint8")};
  EXPECT_EQ(norm_quantize_error({x, g, b, none, none, gs, bs}, 4, &out, u8), "");
  EXPECT_EQ(out, "[batch,5,4] uint8, [batch,5] float32, [batch,5] int32, [batch,5,4] float32");
  EXPECT_EQ(norm_quantize_error({x, g}, 3, &out, {Attribute::make_string("dynamic_type", "int8")}), "");
  EXPECT_EQ(out, "[batch,5,4] uint8, [batch,5] float32, [batch,5] int32");
  expect(norm_quantize_error({x, g, b, kScale}, 3, nullptr, u8), "are given with dynamic_type");
  expect(norm_quantize_error({x, g, b}, 2, nullptr, u8), "outputs Q, a_scale, a_zero_point and (optional) Y");
  expect(norm_quantize_error({x, g, b}, 3, nullptr, {Attribute::make_string("dynamic_type", "int4")}),
         "dynamic_type must be");
  // By hand (eps 0): row [1, 3] normalizes to [-1, 1]. uint8: scale 2/255, whose float32
  // is a little above 2/255, so 1 / scale = 127.4999...: zero point 127, Q = [-127 + 127,
  // 127 + 127] = [0, 254]; int8: scale 1/127, Q = [-127, 127] + 128 = [1, 255], zero
  // point 128.
  for (const std::string type : {"uint8", "int8"}) {
    const std::vector<Tensor> rows = testing::run(
        {"LayerNormQuantize",
         {f32({1, 2}, {1, 3}), f32({2}, {1, 1}), f32({2}, {0, 0})},
         {Attribute::make_float("epsilon", 0.0f), Attribute::make_string("dynamic_type", type)}, 21, 3, "octet"});
    ASSERT_EQ(rows.size(), 3u);
    const std::vector<float> want_q = type == "uint8" ? std::vector<float>{0, 254} : std::vector<float>{1, 255};
    EXPECT_EQ(rows[0].to_float_vector(), want_q);
    EXPECT_EQ(rows[1].to_float_vector(), std::vector<float>{type == "uint8" ? 2.0f / 255.0f : 1.0f / 127.0f});
    EXPECT_EQ(rows[2].dtype(), DType::Int32);
    EXPECT_EQ(rows[2].to_float_vector(), std::vector<float>{type == "uint8" ? 127.0f : 128.0f});
  }

  // The reference by hand: row [1, 3] normalizes to [-1, 1] (eps 0); the quantized branch
  // (gs = [2, 2], bs = [0.5, 0]) gives [-1.5, 2] -> round(x / 0.5) + 10 = [7, 14]; Y with
  // g = [1, 3], b = [0, 1] is [-1, 4].
  const Tensor xs = f32({1, 2}, {1, 3});
  const std::vector<Tensor> outs =
      testing::run({"LayerNormQuantize",
                    {xs, f32({2}, {1, 3}), f32({2}, {0, 1}), Tensor::scalar<float>(0.5f), Tensor::scalar<uint8_t>(10),
                     f32({2}, {2, 2}), f32({2}, {0.5f, 0})},
                    {Attribute::make_float("epsilon", 0.0f)}, 21, 2, "octet"});
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[0].dtype(), DType::UInt8);
  EXPECT_EQ(outs[0].to_float_vector(), (std::vector<float>{7, 14}));
  EXPECT_EQ(outs[1].to_float_vector(), (std::vector<float>{-1, 4}));
}

// The example worked by hand in the comments (docs/quantization.md §2's formulas).
TEST(OctetQuantOps, QMatMulReferenceMatchesAHandComputation) {
  // qa = round(A / 0.5) + 3 = [[5, 2, 8], [3, 5, 1]] (2.26/0.5 = 4.52 -> 5; 0.25/0.5 = 0.5
  // -> 0 and 0.75/0.5 = 1.5 -> 2: half to even); qa - za = [[2, -1, 5], [0, 2, -2]].
  // B - zb = [[1, -3], [3, 3], [-5, 5]]; acc = [[-26, 16], [16, -4]].
  // Y = 0.5 * [0.25, 0.5] * acc + [1, -1] = [[-2.25, 3], [3, -2]].
  const Tensor a = f32({2, 3}, {1.0f, -0.5f, 2.26f, 0.25f, 0.75f, -1.0f});
  const Tensor b = tensor<int8_t>({3, 2}, {1, -2, 3, 4, -5, 6});
  const Tensor sb = f32({2}, {0.25f, 0.5f});
  const Tensor zb = tensor<int8_t>({2}, {0, 1});
  const Tensor bias = f32({2}, {1, -1});
  const Tensor sa = Tensor::scalar<float>(0.5f), za = Tensor::scalar<uint8_t>(3);
  auto run = [&](std::vector<Attribute> attrs, std::optional<Tensor> residual) {
    return testing::run({"QMatMul", {a, sa, za, b, sb, zb, bias, residual}, std::move(attrs), 21, 1, "octet"})[0];
  };
  Tensor y = run({}, std::nullopt);
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(y.to_float_vector(), (std::vector<float>{-2.25f, 3, 3, -2}));
  EXPECT_EQ(run({}, f32({2, 2}, {1, 1, 1, 1})).to_float_vector(), (std::vector<float>{-1.25f, 4, 4, -1}));
  std::vector<float> g = run({Attribute::make_string("activation", "gelu")}, std::nullopt).to_float_vector();
  const float want[] = {-2.25f, 3, 3, -2};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(g[i], 0.5 * want[i] * (1 + std::erf(want[i] / std::sqrt(2.0))), 1e-6);

  // Dynamic uint8: row [-4, 1, 11.9375] spans 15.9375 = 255 / 16, so s = 1/16, zp = 64,
  // qa - za = [-64, 16, 191]; a zero row uses s = 1, zp = 0. With B = [1, 2, 1]^T and
  // sb = 0.5: Y = [159 / 32, 0].
  const Tensor ad = f32({2, 3}, {-4, 1, 11.9375f, 0, 0, 0});
  const Tensor bd = tensor<int8_t>({3, 1}, {1, 2, 1});
  Tensor yd = testing::run({"QMatMul", {ad, std::nullopt, std::nullopt, bd, Tensor::scalar<float>(0.5f)}, {}, 21, 1,
                            "octet"})[0];
  EXPECT_EQ(yd.to_float_vector(), (std::vector<float>{159.0f / 32, 0}));
  // Dynamic int8: max|x| = 7.9375 = 127 / 16, so s = 1/16 and qa = [-32, 16, 127]: acc 127.
  const Tensor ai = f32({1, 3}, {-2, 1, 7.9375f});
  Tensor yi = testing::run({"QMatMul", {ai, std::nullopt, std::nullopt, bd, Tensor::scalar<float>(0.5f)},
                            {Attribute::make_string("dynamic_type", "int8")}, 21, 1, "octet"})[0];
  EXPECT_EQ(yi.to_float_vector(), (std::vector<float>{127.0f / 32}));

  // Run-time errors name the node.
  testing::expect_node_error(
      [&] { testing::run({"QMatMul", {a, sa, za, b, f32({3}, {1, 1, 1})}, {}, 21, 1, "octet"}); },
      "b_scale must be float32 with 1 or N = 2 values");
}

// The fake-quant graph QMatMul replaces, from the same operands:
// x -> Q -> DQ, B -> DQ(axis 1) -> MatMul -> Add(bias) [-> Gelu] [-> Add(residual)].
std::shared_ptr<Graph> fake_quant_graph(const testing::qmm::QCase& c,
                                        const std::vector<std::optional<testing::mm::Operand>>& ins,
                                        bool dynamic_row) {
  testing::PassGraph g(21);
  g.input("x", DType::Float32, DimVector(c.a_shape.begin(), c.a_shape.end()));
  for (size_t i = 1; i < ins.size(); ++i)
    if (ins[i] && ins[i]->constant) g.init("in" + std::to_string(i), ins[i]->value);
  if (dynamic_row) {
    g.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"});
    g.node("DequantizeLinear", {"xq", "xs", "xz"}, {"xd"});
  } else {
    g.node("QuantizeLinear", {"x", "in1", "in2"}, {"xq"});
    g.node("DequantizeLinear", {"xq", "in1", "in2"}, {"xd"});
  }
  std::vector<std::string> dq_b = {"in3", "in4"};
  if (ins.size() > 5 && ins[5]) dq_b.push_back("in5");
  g.node("DequantizeLinear", dq_b, {"wd"}, {Attribute::make_int("axis", 1)});
  g.node("MatMul", {"xd", "wd"}, {"mm"});
  std::string last = "mm";
  if (c.bias) {
    g.node("Add", {"mm", "in6"}, {"h"});
    last = "h";
  }
  if (!c.activation.empty()) {
    g.node("Gelu", {last}, {"g"}, {Attribute::make_string("approximate", c.activation == "gelu" ? "none" : "tanh")});
    last = "g";
  }
  if (c.residual) {
    const std::vector<int64_t> out = c.out_shape();
    g.input("r", DType::Float32, DimVector(out.begin(), out.end()));
    g.node("Add", {last, "r"}, {"y"});
    last = "y";
  }
  g.output(last);
  return g.done();
}

TEST(OctetQuantOps, QMatMulReferenceIsTheFakeQuantGraph) {
  using testing::qmm::QCase;
  uint64_t seed = 100;
  std::vector<QCase> cases;
  for (DType act : {DType::UInt8, DType::Int8})
    for (bool per_column : {true, false})
      for (std::string activation : {"", "gelu", "gelu_tanh"}) {
        QCase c;
        c.a_shape = {2, 5, 64};
        c.n = 33;
        c.act = act;
        c.per_column = per_column;
        c.activation = activation;
        c.residual = activation == "gelu";
        c.b_zero_point = !per_column;
        c.b_zero_value = per_column ? 0 : 5;
        c.seed = seed++;
        cases.push_back(c);
      }
  QCase large_k;
  large_k.a_shape = {3, 1000};
  large_k.n = 17;
  large_k.bias = false;
  cases.push_back(large_k);
  for (const QCase& c : cases) {
    auto ins = testing::qmm::operands(c);
    Tensor want = testing::mm::session(testing::qmm::graph(c), KernelChoice::Reference)
                      .run(testing::mm::feeds(ins))[0].second;
    NamedTensors feeds = {{"x", ins[0]->value}};
    if (c.residual) feeds.emplace_back("r", ins[7]->value);
    Session chain = testing::mm::session(fake_quant_graph(c, ins, false), KernelChoice::Reference);
    testing::qmm::expect_close(want, chain.run(feeds)[0].second, c.label());
  }
  // Dynamic uint8 is DynamicQuantizeLinear applied to each row alone.
  QCase d;
  d.a_shape = {1, 48};
  d.n = 9;
  d.is_static = false;
  for (uint64_t s = 0; s < 4; ++s) {
    d.seed = 200 + s;
    auto ins = testing::qmm::operands(d);
    Tensor want = testing::mm::session(testing::qmm::graph(d), KernelChoice::Reference)
                      .run(testing::mm::feeds(ins))[0].second;
    Session chain = testing::mm::session(fake_quant_graph(d, ins, true), KernelChoice::Reference);
    testing::qmm::expect_close(want, chain.run({{"x", ins[0]->value}})[0].second, d.label());
  }
}

}  // namespace
}  // namespace octet
