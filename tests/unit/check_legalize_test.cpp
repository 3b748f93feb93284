// The type checker (src/check) and the legalization rewrites (src/legalize) on small
// hand-built graphs; the exported fixtures are covered by tests/python/test_check_legalize_cli.py.
#include <gtest/gtest.h>

#include "check/type_check.h"
#include "io/npy.h"
#include "kernels/cpu/matmul_nbits.h"
#include "legalize/legalize.h"
#include "onnx/model_io.h"
#include "pass_test_util.h"
#include "runtime/session.h"

namespace octet {
namespace {

using check::Target;
using testing::count_ops;
using testing::PassGraph;

Tensor half_tensor(DType t, std::vector<int64_t> shape, float v) {
  Tensor h(t, shape);
  for (int64_t i = 0; i < h.numel(); ++i)
    reinterpret_cast<uint16_t*>(h.mutable_raw())[i] = t == DType::Float16 ? float_to_half(v) : float_to_bfloat16(v);
  return h;
}

check::CheckReport check_graph(Graph& g, Target target = Target::Octet) { return check::check_model_types(g, {}, target); }

TEST(CheckTypes, Int32MeetsFloat16InAddNamesNodeOpTypesAndRule) {
  PassGraph b(17);
  b.input("acc", DType::Int32, {2, 4});
  b.init("bias", half_tensor(DType::Float16, {4}, 0.5f));
  b.node("Add", {"acc", "bias"}, {"y"});
  b.output("y");
  const auto r = check_graph(*b.g);
  ASSERT_EQ(r.problems.size(), 1u);
  const auto& p = r.problems[0];
  EXPECT_EQ(p.node, "y_node");
  EXPECT_EQ(p.op, "Add");
  EXPECT_EQ(p.source, "onnx");
  ASSERT_EQ(p.inputs.size(), 2u);
  EXPECT_EQ(p.inputs[0].second, DType::Int32);
  EXPECT_EQ(p.inputs[1].second, DType::Float16);
  EXPECT_NE(p.rule.find("Add-14"), std::string::npos) << p.rule;
  EXPECT_NE(p.rule.find("type T"), std::string::npos) << p.rule;
  EXPECT_NE(p.to_text().find("fix:"), std::string::npos);
}

TEST(CheckTypes, CleanGraphHasNoProblems) {
  PassGraph b(17);
  b.input("x", DType::Float16, {2, 4});
  b.init("bias", half_tensor(DType::Float16, {4}, 0.5f));
  b.node("Add", {"x", "bias"}, {"y"});
  b.output("y");
  EXPECT_TRUE(check_graph(*b.g).problems.empty());
  EXPECT_TRUE(check_graph(*b.g, Target::Ort).problems.empty());
}

TEST(CheckTypes, FixedTypeSlotAndDisallowedType) {
  PassGraph b(17);
  b.input("x", DType::Float32, {2, 4});
  b.init("shape", Tensor::from_vector<int32_t>({1}, {8}));
  b.node("Reshape", {"x", "shape"}, {"y"});  // shape must be int64
  b.input("i", DType::Int32, {3});
  b.node("Sqrt", {"i"}, {"s"});  // Sqrt has no integer types
  b.output("y");
  b.output("s");
  const auto r = check_graph(*b.g);
  ASSERT_GE(r.problems.size(), 2u);
  bool reshape = false, sqrt = false;
  for (const auto& p : r.problems) {
    reshape |= p.op == "Reshape" && p.rule.find("must be int64") != std::string::npos;
    sqrt |= p.op == "Sqrt" && p.rule.find("int32") != std::string::npos;
  }
  EXPECT_TRUE(reshape && sqrt);
}

TEST(CheckTypes, NewerOpsetTypesAreNotJudgedByTheOldSchema) {
  PassGraph b(21);
  Tensor w(DType::Int4, {4, 2});
  b.init("w", w);
  b.init("s", Tensor::from_vector<float>({2, 2}, {1, 1, 1, 1}));
  b.node("DequantizeLinear", {"w", "s"}, {"y"}, {Attribute::make_int("axis", 0), Attribute::make_int("block_size", 2)});
  b.output("y");
  const auto r = check_graph(*b.g);
  EXPECT_TRUE(r.problems.empty()) << r.problems[0].to_text();
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("newer than 17"), std::string::npos) << r.notes[0];
}

TEST(CheckTypes, OrtTargetRejectsBfloat16ArithmeticTheOnnxSpecAllows) {
  PassGraph b(17);
  b.input("x", DType::BFloat16, {2, 4});
  b.init("c", half_tensor(DType::BFloat16, {4}, 2.0f));
  b.node("Add", {"x", "c"}, {"y"});
  b.output("y");
  EXPECT_TRUE(check_graph(*b.g).problems.empty());
  const auto r = check_graph(*b.g, Target::Ort);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_EQ(r.problems[0].source, "ort");
  EXPECT_NE(r.problems[0].rule.find("bfloat16"), std::string::npos);
  // The table itself, on rows whose answer is well known.
  EXPECT_EQ(check::ort_cpu_implements("Add", 17, {{"T", DType::Float32}}), true);
  EXPECT_EQ(check::ort_cpu_implements("Add", 17, {{"T", DType::BFloat16}}), false);
  EXPECT_EQ(check::ort_cpu_implements("NoSuchOp", 17, {{"T", DType::Float32}}), std::nullopt);
}

TEST(CheckTypes, TensorrtRejectsFloat64AndOctetOps) {
  PassGraph b(17);
  b.input("x", DType::Float64, {2});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  const auto r = check_graph(*b.g, Target::TensorRT);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].rule.find("float64"), std::string::npos);
}

legalize::LegalizeReport run_legalize(Graph& g, Target target = Target::Octet,
                                      legalize::ComputeDType compute = legalize::ComputeDType::Keep) {
  legalize::LegalizeOptions o;
  o.target = target;
  o.compute = compute;
  return legalize::legalize(g, {}, o);
}

std::shared_ptr<Graph> weight_times_half(DType half) {
  PassGraph b(17);
  b.input("h", half, {2, 4});
  b.init("w", Tensor::from_vector<float>({4}, {1, 2, 3, 4}));
  b.node("Mul", {"w", "h"}, {"y"});
  b.output("y");
  return b.g;
}

TEST(Legalize, FloatMixMeetsAtTheWiderTypeWithOneCast) {
  auto g = weight_times_half(DType::Float16);
  const auto r = run_legalize(*g);
  EXPECT_TRUE(r.unresolved.empty());
  EXPECT_TRUE(check_graph(*g).problems.empty());
  // No stored type for y: it is what torch's promotion gives, float32. Mul reads float32
  // on both sides: one Cast on h, none on the weight.
  const Node* mul = g->value("y")->producer();
  ASSERT_EQ(mul->op_type(), "Mul");
  EXPECT_EQ(g->value("y")->type.dtype, DType::Float32);
  EXPECT_EQ(count_ops(*g, "Cast"), 1);
  for (const Node* n : g->nodes())
    if (n->op_type() == "Mul") {
      for (const Value* v : n->inputs()) {
        EXPECT_EQ(v->type.dtype, DType::Float32) << v->name();
      }
    }
}

TEST(Legalize, StoredOutputTypeIsKept) {
  auto g = weight_times_half(DType::Float16);
  legalize::LegalizeOptions o;
  legalize::legalize(*g, {{"y", TensorType(DType::Float16, DimVector{2, 4})}}, o);
  EXPECT_EQ(g->outputs()[0]->name(), "y");
  EXPECT_EQ(g->outputs()[0]->type.dtype, DType::Float16);
  EXPECT_EQ(g->value("y")->producer()->op_type(), "Cast");
  EXPECT_TRUE(check_graph(*g).problems.empty());
}

TEST(Legalize, ComputeDtypeFp16MeetsAtFloat16) {
  auto g = weight_times_half(DType::Float16);
  run_legalize(*g, Target::Octet, legalize::ComputeDType::Float16);
  EXPECT_TRUE(check_graph(*g).problems.empty());
  for (const Node* n : g->nodes())
    if (n->op_type() == "Mul") {
      for (const Value* v : n->inputs()) {
        EXPECT_EQ(v->type.dtype, DType::Float16) << v->name();
      }
    }
}

TEST(Legalize, Float16MeetsBfloat16AtFloat32) {
  PassGraph b(17);
  b.input("a", DType::Float16, {4});
  b.input("c", DType::BFloat16, {4});
  b.node("Add", {"a", "c"}, {"y"});
  b.output("y");
  run_legalize(*b.g);
  EXPECT_TRUE(check_graph(*b.g).problems.empty());
  for (const Node* n : b.g->nodes())
    if (n->op_type() == "Add") {
      EXPECT_EQ(n->output(0)->type.dtype, DType::Float32);
    }
}

TEST(Legalize, IntAccumulatorGetsCastAndBothScales) {
  PassGraph b(17);
  b.input("x", DType::Float32, {2, 4});
  b.node("DynamicQuantizeLinear", {"x"}, {"xq", "xs", "xz"});
  b.init("wq", Tensor::from_vector<int8_t>({4, 3}, std::vector<int8_t>(12, 3)));
  b.init("ws", Tensor::scalar<float>(0.5f));
  b.node("MatMulInteger", {"xq", "wq", "xz"}, {"acc"});
  b.node("DequantizeLinear", {"wq", "ws"}, {"w_float"});  // where the weight's scale is stated
  b.init("bias", Tensor::from_vector<float>({3}, {1, 2, 3}));
  b.node("Add", {"acc", "bias"}, {"y"});
  b.output("y");
  b.output("w_float");
  const auto r = run_legalize(*b.g);
  EXPECT_TRUE(r.unresolved.empty()) << r.unresolved[0];
  EXPECT_TRUE(check_graph(*b.g).problems.empty());
  // acc -> Cast(float32) -> Mul(xs) -> Mul(ws) -> Add
  const Node* add = b.g->value("y")->producer();
  const Node* mul2 = add->input(0)->producer();
  ASSERT_EQ(mul2->op_type(), "Mul");
  EXPECT_EQ(mul2->input(1)->name(), "ws");
  const Node* mul1 = mul2->input(0)->producer();
  ASSERT_EQ(mul1->op_type(), "Mul");
  EXPECT_EQ(mul1->input(1)->name(), "xs");
  EXPECT_EQ(mul1->input(0)->producer()->op_type(), "Cast");
  // And it computes x @ (wq * ws) + bias, up to x's uint8 quantization.
  const std::vector<float> xv = {-1.0f, -0.25f, 0.5f, 1.0f, 0.75f, 0.0f, -0.5f, 0.25f};
  Session session(b.g);
  const NamedTensors out = session.run({{"x", Tensor::from_vector<float>({2, 4}, xv)}});
  const float* y = out[0].second.data<float>();
  for (int r = 0; r < 2; ++r)
    for (int n = 0; n < 3; ++n) {
      float want = n + 1.0f;
      for (int k = 0; k < 4; ++k) want += xv[r * 4 + k] * 3 * 0.5f;
      EXPECT_NEAR(y[r * 3 + n], want, 0.05f) << r << "," << n;
    }
}

TEST(Legalize, AccumulatorWithoutKnownScaleIsReportedNotGuessed) {
  PassGraph b(17);
  b.input("aq", DType::UInt8, {2, 4});
  b.init("wq", Tensor::from_vector<int8_t>({4, 3}, std::vector<int8_t>(12, 3)));
  b.node("MatMulInteger", {"aq", "wq"}, {"acc"});
  b.init("bias", Tensor::from_vector<float>({3}, {1, 2, 3}));
  b.node("Add", {"acc", "bias"}, {"y"});
  b.output("y");
  const auto r = run_legalize(*b.g);
  ASSERT_FALSE(r.unresolved.empty());
  EXPECT_NE(r.unresolved[0].find("scales"), std::string::npos) << r.unresolved[0];
}

TEST(Legalize, OrtTargetLiftsBfloat16RegionsToFloat32) {
  PassGraph b(17);
  b.input("x", DType::BFloat16, {2, 4});
  b.init("c", half_tensor(DType::BFloat16, {4}, 2.0f));
  b.node("Add", {"x", "c"}, {"a"});
  b.node("Relu", {"a"}, {"r"});
  b.node("Mul", {"r", "c"}, {"y"});
  b.output("y");
  run_legalize(*b.g, Target::Ort);
  const auto r = check_graph(*b.g, Target::Ort);
  EXPECT_TRUE(r.problems.empty()) << r.problems[0].to_text();
  EXPECT_EQ(b.g->value("y")->type.dtype, DType::BFloat16);  // interface unchanged
  // Casts at the borders only: x and the constant c in (c once for its two readers),
  // y out; none between Add, Relu and Mul.
  EXPECT_EQ(count_ops(*b.g, "Cast"), 3);
}

TEST(Legalize, OrtLiftsEveryHalfTypeVariableOfANode) {
  // Pow binds base (T) and exponent (T1) separately; both must leave bfloat16.
  PassGraph b(17);
  b.input("x", DType::BFloat16, {2, 4});
  b.init("e", half_tensor(DType::BFloat16, {}, 3.0f));
  b.node("Pow", {"x", "e"}, {"y"});
  b.output("y");
  run_legalize(*b.g, Target::Ort);
  const auto r = check_graph(*b.g, Target::Ort);
  EXPECT_TRUE(r.problems.empty()) << r.problems[0].to_text();
  for (const Node* n : b.g->nodes())
    if (n->op_type() == "Pow") {
      for (const Value* v : n->inputs()) {
        EXPECT_EQ(v->type.dtype, DType::Float32) << v->name();
      }
    }
}

TEST(Legalize, PackedLookingWeightsThatDoNotReproduceStayAsTheyAre) {
  // Leaves shaped like GPTQ's qweight [K/8, N], qzeros [G, N/8] and scales [G, N], but the
  // weight is computed some other way: no packing reproduces it, so nothing is rewritten.
  PassGraph b(17);
  b.input("x", DType::Float32, {2, 8});
  b.init("qweight", Tensor::from_vector<int32_t>({1, 8}, {0x76543210, 1, 2, 3, 4, 5, 6, 7}));
  b.init("qzeros", Tensor::from_vector<int32_t>({1, 1}, {0x11111111}));
  b.init("scales", Tensor::from_vector<float>({1, 8}, {1, 1, 1, 1, 1, 1, 1, 1}));
  b.init("reps", Tensor::from_vector<int64_t>({2}, {8, 1}));
  b.node("Tile", {"qweight", "reps"}, {"tiled"});
  b.node("Cast", {"tiled"}, {"tiled_f"}, {Attribute::make_int("to", 1)});
  b.node("Mul", {"tiled_f", "scales"}, {"w"});
  b.node("Add", {"w", "qzeros"}, {"w2"});  // int32 meets float32: resolve casts qzeros first
  b.node("MatMul", {"x", "w2"}, {"y"});
  b.output("y");
  const auto r = run_legalize(*b.g);
  EXPECT_EQ(r.rewrites[1].name, "unpack_packed_weights");
  EXPECT_EQ(r.rewrites[1].count, 0u);
  EXPECT_EQ(count_ops(*b.g, "MatMul"), 1);
  EXPECT_EQ(count_ops(*b.g, "MatMulNBits", "com.microsoft"), 0);
  EXPECT_TRUE(check_graph(*b.g).problems.empty());
}

// The torch-exported fixtures end to end in the library (the CLI tests run the same in
// onnxruntime): each layout is recognized, the result type-checks and octet's runtime
// matches the float reference computed by the export script.
TEST(Legalize, ExportedQuantLinearsBecomeMatMulNBitsAndMatchTheirReference) {
  const std::string dir = std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/";
  const std::pair<const char*, const char*> cases[] = {{"ill_typed/quantlinear_gptq_broken", "quantlinear_gptq"},
                                                       {"quantlinear_gptq_actorder", "quantlinear_gptq_actorder"},
                                                       {"quantlinear_awq", "quantlinear_awq"}};
  // Legalization is under test, against the float reference within float16 rounding: float
  // activations, not the int8 ones 4-bit MatMulNBits takes by default (their rounding is
  // ~0.5% of max |y| on the AWQ fixture; cpu_matmul_nbits_test checks that path).
  const cpu::NbitsActivations previous = cpu::nbits_activations();
  cpu::set_nbits_activations(cpu::NbitsActivations::Float);
  for (const auto& [model_name, data_name] : cases) {
    SCOPED_TRACE(model_name);
    LoadOptions load;
    load.infer_types = false;
    Model m = load_model(dir + model_name + ".onnx", load);
    const auto r = legalize::legalize(*m.graph, m.declared, {});
    EXPECT_TRUE(r.unresolved.empty());
    EXPECT_EQ(r.rewrites[1].count, 1u);
    EXPECT_EQ(count_ops(*m.graph, "MatMulNBits", "com.microsoft"), 1);
    EXPECT_TRUE(check_graph(*m.graph).problems.empty());
    const Tensor x = read_npy(dir + data_name + "_data/input_0.npy");
    const Tensor want = read_npy(dir + data_name + "_data/output_0.npy");
    Session session(std::shared_ptr<Graph>(std::move(m.graph)));
    const NamedTensors out = session.run({{"x", x}});
    const std::vector<float> got = out[0].second.to_float_vector(), ref = want.to_float_vector();
    ASSERT_EQ(got.size(), ref.size());
    float max_ref = 0, max_err = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      max_ref = std::max(max_ref, std::abs(ref[i]));
      max_err = std::max(max_err, std::abs(got[i] - ref[i]));
    }
    EXPECT_LE(max_err, 2e-3f * max_ref);  // float16 output rounding
  }
  cpu::set_nbits_activations(previous);
}

TEST(Legalize, CancelsExactRoundTripsOnly) {
  PassGraph b(17);
  b.input("h", DType::Float16, {4});
  b.node("Cast", {"h"}, {"h32"}, {Attribute::make_int("to", 1)});
  b.node("Cast", {"h32"}, {"h16"}, {Attribute::make_int("to", 10)});  // exact: removed
  b.node("Relu", {"h16"}, {"a"});
  b.input("f", DType::Float32, {4});
  b.node("Cast", {"f"}, {"f16"}, {Attribute::make_int("to", 10)});
  b.node("Cast", {"f16"}, {"f32"}, {Attribute::make_int("to", 1)});  // rounds: kept
  b.node("Relu", {"f32"}, {"b"});
  b.output("a");
  b.output("b");
  run_legalize(*b.g);
  EXPECT_EQ(b.g->value("a")->producer()->input(0)->name(), "h");
  EXPECT_EQ(count_ops(*b.g, "Cast"), 2);
}

}  // namespace
}  // namespace octet
