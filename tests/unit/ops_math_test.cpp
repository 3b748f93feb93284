// Type and shape inference of the math op families: elementwise, reductions and
// normalizations, quantization. Each test builds a tiny graph, runs infer_graph, and checks
// element types and (symbolic) dims, the symbolic values of shape tensors, and that
// impossible inputs are errors naming the node.
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "octet/error.h"
#include "ops/conv_shape.h"
#include "ops/infer.h"
#include "ops/matmul_shape.h"

namespace octet {
namespace {

const Dim batch = Dim::symbol("batch");
const Dim seq = Dim::symbol("seq");

// A small graph under construction, with the helpers the tests share.
struct G {
  Graph g;
  explicit G(int64_t opset = 17) {
    g.opset_imports[""] = opset;
    g.opset_imports["com.microsoft"] = 1;
  }
  Value* in(const std::string& name, DType t, std::optional<DimVector> dims) {
    return g.add_input(name, TensorType(t, std::move(dims)));
  }
  // A graph input whose contents are known symbolically (as Shape's output would be).
  Value* shape_in(const std::string& name, DimVector values) {
    Value* v = in(name, DType::Int64, DimVector{static_cast<int64_t>(values.size())});
    v->known_values = std::move(values);
    return v;
  }
  template <typename T>
  void init(const std::string& name, std::vector<int64_t> shape, std::vector<T> values) {
    g.add_initializer(name, std::make_shared<const Tensor>(Tensor::from_vector<T>(shape, values)));
  }
  void init_zeros(const std::string& name, DType t, std::vector<int64_t> shape) {
    g.add_initializer(name, std::make_shared<const Tensor>(Tensor(t, std::move(shape))));
  }
  Node* node(const std::string& op, const std::vector<std::string>& ins,
             const std::vector<std::string>& outs, std::vector<Attribute> attrs = {},
             const std::string& domain = "") {
    return g.add_node(op, ins, outs, std::move(attrs), domain, op + "_node");
  }
  void infer() { infer_graph(g); }
  // The error message inference raises (empty when it succeeds).
  std::string error() {
    try {
      infer_graph(g);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  const TensorType& type(const std::string& name) { return g.value(name)->type; }
  const std::optional<DimVector>& values(const std::string& name) { return g.value(name)->known_values; }
};

void expect_type(const TensorType& t, DType dtype, const DimVector& dims) {
  EXPECT_EQ(t.dtype, dtype) << t.to_string();
  ASSERT_TRUE(t.dims.has_value()) << t.to_string();
  EXPECT_EQ(*t.dims, dims) << t.to_string() << " vs " << dims_to_string(dims);
}

void expect_unknown_rank(const TensorType& t, DType dtype) {
  EXPECT_EQ(t.dtype, dtype) << t.to_string();
  EXPECT_FALSE(t.dims.has_value()) << t.to_string();
}

#define EXPECT_ERROR_HAS(msg, ...)                                                 \
  do {                                                                             \
    std::string m_ = (msg);                                                        \
    EXPECT_FALSE(m_.empty()) << "expected an inference error";                     \
    for (const char* part : {__VA_ARGS__}) EXPECT_NE(m_.find(part), std::string::npos) \
        << "'" << part << "' not in: " << m_;                                      \
  } while (0)

// ================================================================ elementwise

TEST(OpsMathElementwise, AddBroadcastsBiasOverSymbolicBatch) {
  G t;
  t.in("x", DType::Float32, DimVector{batch, seq, 64});
  t.init<float>("b", {64}, std::vector<float>(64, 0.f));
  t.node("Add", {"x", "b"}, {"y"});
  t.infer();
  expect_type(t.type("y"), DType::Float32, {batch, seq, 64});
}

TEST(OpsMathElementwise, ScalarsAndSizeOneDimsBroadcast) {
  G t;
  t.in("s", DType::Float32, DimVector{});
  t.in("a", DType::Float32, DimVector{batch, 1, 64});
  t.in("b", DType::Float32, DimVector{1, seq, 1});
  t.node("Mul", {"s", "a"}, {"y1"});
  t.node("Sub", {"a", "b"}, {"y2"});
  t.node("Div", {"s", "s"}, {"y3"});
  t.infer();
  expect_type(t.type("y1"), DType::Float32, {batch, 1, 64});
  expect_type(t.type("y2"), DType::Float32, {batch, seq, 64});
  expect_type(t.type("y3"), DType::Float32, {});
}

TEST(OpsMathElementwise, DifferentSymbolsBroadcastToTheirMax) {
  G t;
  t.in("a", DType::Float32, DimVector{Dim::symbol("m")});
  t.in("b", DType::Float32, DimVector{Dim::symbol("n")});
  t.node("Add", {"a", "b"}, {"y"});
  t.infer();
  expect_type(t.type("y"), DType::Float32, {Dim::max(Dim::symbol("m"), Dim::symbol("n"))});
}

TEST(OpsMathElementwise, MixedTypesAreAnErrorNamingTheNode) {
  // User story 3: GPTQ export, int32 qweight path added to float16 bias.
  G t;
  t.in("qw", DType::Int32, DimVector{batch, 4096});
  t.in("bias", DType::Float16, DimVector{4096});
  t.g.add_node("Add", {"qw", "bias"}, {"y"}, {}, "", "/self_attn/q_proj/Add");
  EXPECT_ERROR_HAS(t.error(), "/self_attn/q_proj/Add", "(Add)", "int32", "float16", "'qw'", "'bias'",
                   "same type");
}

TEST(OpsMathElementwise, BroadcastConflictIsAnError) {
  G t;
  t.in("a", DType::Float32, DimVector{batch, 3});
  t.in("b", DType::Float32, DimVector{4});
  t.node("Add", {"a", "b"}, {"y"});
  EXPECT_ERROR_HAS(t.error(), "Add_node", "broadcast", "[batch,3]", "[4]");
}

TEST(OpsMathElementwise, UnknownRankGivesUnknownRank) {
  G t;
  t.in("x", DType::Float32, std::nullopt);
  t.in("b", DType::Float32, DimVector{64});
  t.in("c", DType::Bool, DimVector{64});
  t.node("Add", {"x", "b"}, {"y"});
  t.node("Sqrt", {"y"}, {"z"});
  t.node("Where", {"c", "z", "b"}, {"w"});
  t.node("Cast", {"x"}, {"i"}, {Attribute::make_int("to", 7)});
  t.node("Max", {"x", "b", "z"}, {"m"});
  t.node("Equal", {"x", "b"}, {"e"});
  t.infer();
  expect_unknown_rank(t.type("y"), DType::Float32);
  expect_unknown_rank(t.type("z"), DType::Float32);
  expect_unknown_rank(t.type("w"), DType::Float32);
  expect_unknown_rank(t.type("i"), DType::Int64);
  expect_unknown_rank(t.type("m"), DType::Float32);
  expect_unknown_rank(t.type("e"), DType::Bool);
}

TEST(OpsMathElementwise, UnaryTypeConstraints) {
  {
    G t;
    t.in("x", DType::Int64, DimVector{3});
    t.node("Sqrt", {"x"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "Sqrt_node", "int64", "float16, float32");
  }
  {
    G t(14);
    t.in("x", DType::Int32, DimVector{3});
    t.node("Relu", {"x"}, {"y"});
    t.node("Abs", {"x"}, {"a"});
    t.node("Neg", {"x"}, {"n"});
    t.infer();
    expect_type(t.type("y"), DType::Int32, {3});
    expect_type(t.type("a"), DType::Int32, {3});
    expect_type(t.type("n"), DType::Int32, {3});
  }
  {
    G t(13);  // integer Relu arrived in opset 14
    t.in("x", DType::Int32, DimVector{3});
    t.node("Relu", {"x"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "Relu_node", "int32");
  }
  {
    G t;
    t.in("x", DType::UInt8, DimVector{3});
    t.node("Neg", {"x"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "Neg_node", "uint8", "signed");
  }
  {
    G t;
    t.in("x", DType::Float32, DimVector{3});
    t.node("Not", {"x"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "Not_node", "bool");
  }
}

TEST(OpsMathElementwise, ActivationsKeepTypeAndShape) {
  G t(20);
  t.in("x", DType::BFloat16, DimVector{batch, seq, 3072});
  for (const char* op : {"Erf", "Tanh", "Sigmoid", "Exp", "Log", "Reciprocal", "Identity"})
    t.node(op, {"x"}, {std::string("y_") + op});
  t.node("Gelu", {"x"}, {"g"}, {Attribute::make_string("approximate", "tanh")});
  t.infer();
  for (const char* op : {"Erf", "Tanh", "Sigmoid", "Exp", "Log", "Reciprocal", "Identity"})
    expect_type(t.type(std::string("y_") + op), DType::BFloat16, {batch, seq, 3072});
  expect_type(t.type("g"), DType::BFloat16, {batch, seq, 3072});
}

TEST(OpsMathElementwise, GeluRejectsUnknownApproximation) {
  G t(20);
  t.in("x", DType::Float32, DimVector{4});
  t.node("Gelu", {"x"}, {"y"}, {Attribute::make_string("approximate", "fast")});
  EXPECT_ERROR_HAS(t.error(), "Gelu_node", "approximate", "fast");
}

TEST(OpsMathElementwise, DropoutPassesThroughWithBoolMask) {
  G t;
  t.in("x", DType::Float16, DimVector{batch, 8});
  t.node("Dropout", {"x"}, {"y", "mask"});
  t.infer();
  expect_type(t.type("y"), DType::Float16, {batch, 8});
  expect_type(t.type("mask"), DType::Bool, {batch, 8});
}

TEST(OpsMathElementwise, CastAndCastLike) {
  G t(19);
  t.in("x", DType::Float32, DimVector{batch, 4});
  t.in("like", DType::Float16, DimVector{});
  t.node("Cast", {"x"}, {"h"}, {Attribute::make_int("to", 10), Attribute::make_int("saturate", 1)});
  t.node("CastLike", {"x", "like"}, {"h2"});
  t.infer();
  expect_type(t.type("h"), DType::Float16, {batch, 4});
  expect_type(t.type("h2"), DType::Float16, {batch, 4});
}

TEST(OpsMathElementwise, CastNeedsAKnownTarget) {
  {
    G t;
    t.in("x", DType::Float32, DimVector{4});
    t.node("Cast", {"x"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "Cast_node", "'to'");
  }
  {
    G t;
    t.in("x", DType::Float32, DimVector{4});
    t.node("Cast", {"x"}, {"y"}, {Attribute::make_int("to", 99)});
    EXPECT_ERROR_HAS(t.error(), "Cast_node", "99");
  }
}

TEST(OpsMathElementwise, CastToTheNewestTypesAndRoundMode) {
  G t(25);
  t.in("x", DType::Float32, DimVector{batch, 4});
  t.in("like", DType::Int2, DimVector{});
  t.node("Cast", {"x"}, {"e"}, {Attribute::make_int("to", 24), Attribute::make_string("round_mode", "nearest")});
  t.node("Cast", {"x"}, {"u"}, {Attribute::make_int("to", 25)});
  t.node("CastLike", {"x", "like"}, {"i"}, {Attribute::make_string("round_mode", "down")});
  t.infer();
  expect_type(t.type("e"), DType::Float8E8M0, {batch, 4});
  expect_type(t.type("u"), DType::UInt2, {batch, 4});
  expect_type(t.type("i"), DType::Int2, {batch, 4});

  G bad(25);
  bad.in("x", DType::Float32, DimVector{4});
  bad.node("Cast", {"x"}, {"e"}, {Attribute::make_int("to", 24), Attribute::make_string("round_mode", "zero")});
  EXPECT_ERROR_HAS(bad.error(), "Cast_node", "round_mode is 'zero'", "'nearest'");
}

TEST(OpsMathElementwise, ClipBoundsAreScalarsOfTheInputType) {
  {
    G t;
    t.in("x", DType::Float32, DimVector{batch, 8});
    t.init<float>("lo", {}, {0.f});
    t.init<float>("hi", {}, {6.f});
    t.node("Clip", {"x", "lo", "hi"}, {"y"});
    t.node("Clip", {"x", "", "hi"}, {"y2"});
    t.infer();
    expect_type(t.type("y"), DType::Float32, {batch, 8});
    expect_type(t.type("y2"), DType::Float32, {batch, 8});
  }
  {
    G t;
    t.in("x", DType::Float16, DimVector{8});
    t.init<float>("lo", {}, {0.f});
    t.node("Clip", {"x", "lo"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "Clip_node", "float16", "float32");
  }
  {
    G t;
    t.in("x", DType::Float32, DimVector{8});
    t.init<float>("lo", {2}, {0.f, 1.f});
    t.node("Clip", {"x", "lo"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "Clip_node", "scalar");
  }
  {
    G t(6);  // min/max were attributes before opset 11
    t.in("x", DType::Float32, DimVector{8});
    t.node("Clip", {"x"}, {"y"}, {Attribute::make_float("min", 0.f), Attribute::make_float("max", 6.f)});
    t.infer();
    expect_type(t.type("y"), DType::Float32, {8});
  }
}

TEST(OpsMathElementwise, ComparisonsAndLogicGiveBool) {
  G t;
  t.in("a", DType::Int64, DimVector{batch, 1});
  t.in("b", DType::Int64, DimVector{seq});
  t.in("p", DType::Bool, DimVector{4});
  t.in("q", DType::Bool, DimVector{});
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    t.node(op, {"a", "b"}, {std::string("c_") + op});
  t.node("And", {"p", "q"}, {"and"});
  t.node("Or", {"p", "q"}, {"or"});
  t.node("Xor", {"p", "q"}, {"xor"});
  t.infer();
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    expect_type(t.type(std::string("c_") + op), DType::Bool, {batch, seq});
  expect_type(t.type("and"), DType::Bool, {4});
  expect_type(t.type("xor"), DType::Bool, {4});
}

TEST(OpsMathElementwise, LogicNeedsBool) {
  G t;
  t.in("a", DType::Int64, DimVector{4});
  t.node("And", {"a", "a"}, {"y"});
  EXPECT_ERROR_HAS(t.error(), "And_node", "int64", "bool");
}

TEST(OpsMathElementwise, PowExponentMayDifferFromOpset12) {
  {
    G t(13);
    t.in("x", DType::Float32, DimVector{batch, 4});
    t.init<int64_t>("e", {}, {2});
    t.node("Pow", {"x", "e"}, {"y"});
    t.infer();
    expect_type(t.type("y"), DType::Float32, {batch, 4});
  }
  {
    G t(11);
    t.in("x", DType::Float32, DimVector{4});
    t.init<int64_t>("e", {}, {2});
    t.node("Pow", {"x", "e"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "Pow_node", "int64");
  }
}

TEST(OpsMathElementwise, VariadicMinMaxSumMean) {
  G t;
  t.in("a", DType::Float32, DimVector{batch, 1, 1});
  t.in("b", DType::Float32, DimVector{seq, 1});
  t.in("c", DType::Float32, DimVector{8});
  for (const char* op : {"Min", "Max", "Sum", "Mean"}) t.node(op, {"a", "b", "c"}, {std::string("y_") + op});
  t.node("Max", {"c"}, {"single"});
  t.infer();
  for (const char* op : {"Min", "Max", "Sum", "Mean"})
    expect_type(t.type(std::string("y_") + op), DType::Float32, {batch, seq, 8});
  expect_type(t.type("single"), DType::Float32, {8});
}

TEST(OpsMathElementwise, VariadicTypeChecks) {
  {
    G t;
    t.in("a", DType::Int64, DimVector{4});
    t.node("Sum", {"a", "a"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "Sum_node", "int64");
  }
  {
    G t;
    t.in("a", DType::Float32, DimVector{4});
    t.in("b", DType::Float16, DimVector{4});
    t.node("Max", {"a", "a", "b"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "Max_node", "float32", "float16");
  }
}

TEST(OpsMathElementwise, WhereBroadcastsAllThree) {
  G t;
  t.in("mask", DType::Bool, DimVector{1, 1, seq, seq});
  t.in("x", DType::Float32, DimVector{});
  t.in("y", DType::Float32, DimVector{batch, 12, 1, seq});
  t.node("Where", {"mask", "x", "y"}, {"out"});
  t.infer();
  expect_type(t.type("out"), DType::Float32, {batch, 12, seq, seq});
}

TEST(OpsMathElementwise, WhereChecksTypes) {
  {
    G t;
    t.in("c", DType::Int64, DimVector{4});
    t.in("x", DType::Float32, DimVector{4});
    t.node("Where", {"c", "x", "x"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "Where_node", "int64", "bool");
  }
  {
    G t;
    t.in("c", DType::Bool, DimVector{4});
    t.in("x", DType::Float32, DimVector{4});
    t.in("z", DType::Float16, DimVector{4});
    t.node("Where", {"c", "x", "z"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "Where_node", "float32", "float16");
  }
}

TEST(OpsMathElementwise, ModAndPRelu) {
  G t;
  t.in("i", DType::Int64, DimVector{4});
  t.in("x", DType::Float32, DimVector{batch, 16, seq});
  t.in("slope", DType::Float32, DimVector{16, 1});
  t.node("Mod", {"i", "i"}, {"m"});
  t.node("PRelu", {"x", "slope"}, {"p"});
  t.infer();
  expect_type(t.type("m"), DType::Int64, {4});
  expect_type(t.type("p"), DType::Float32, {batch, 16, seq});

  G f;
  f.in("x", DType::Float32, DimVector{4});
  f.node("Mod", {"x", "x"}, {"m"});
  EXPECT_ERROR_HAS(f.error(), "Mod_node", "fmod");
}

// ---------------------------------------------------------------- symbolic values

TEST(OpsMathValues, ArithmeticOnShapeValues) {
  G t;
  t.shape_in("shape", {batch, seq, 768});
  t.init<int64_t>("one", {}, {1});
  t.init<int64_t>("heads", {3}, {1, 1, 12});
  t.node("Add", {"shape", "one"}, {"plus"});
  t.node("Mul", {"shape", "heads"}, {"times"});
  t.node("Sub", {"shape", "shape"}, {"zero"});
  t.node("Neg", {"shape"}, {"neg"});
  t.node("Identity", {"shape"}, {"id"});
  t.infer();
  EXPECT_EQ(t.values("plus"), (DimVector{batch + 1, seq + 1, 769}));
  EXPECT_EQ(t.values("times"), (DimVector{batch, seq, 9216}));
  EXPECT_EQ(t.values("zero"), (DimVector{0, 0, 0}));
  EXPECT_EQ(t.values("neg"), (DimVector{-batch, -seq, -768}));
  EXPECT_EQ(t.values("id"), (DimVector{batch, seq, 768}));
  expect_type(t.type("plus"), DType::Int64, {3});
}

TEST(OpsMathValues, IntegerDivisionTruncatesAndStaysExact) {
  G t;
  t.shape_in("numel", {batch * seq * 768});
  t.shape_in("s", {seq});
  t.shape_in("s1", {seq - 1});
  t.init<int64_t>("c768", {}, {768});
  t.init<int64_t>("two", {}, {2});
  t.init<int64_t>("neg7", {}, {-7});
  t.node("Div", {"numel", "c768"}, {"rows"});
  t.node("Div", {"s", "two"}, {"half"});
  t.node("Div", {"s1", "two"}, {"half1"});
  t.node("Div", {"neg7", "two"}, {"trunc"});
  t.infer();
  EXPECT_EQ(t.values("rows"), (DimVector{batch * seq}));
  EXPECT_EQ(t.values("half"), (DimVector{Dim::floor_div(seq, 2)}));
  // seq - 1 may be negative (seq = 0): floor and truncation differ, so nothing is claimed.
  EXPECT_FALSE(t.values("half1").has_value());
  EXPECT_EQ(t.values("trunc"), (DimVector{-3}));  // ONNX truncates; floor would give -4
}

TEST(OpsMathValues, DivisionByZeroLeavesValuesUnknown) {
  G t;
  t.init<int64_t>("a", {}, {4});
  t.init<int64_t>("z", {}, {0});
  t.node("Div", {"a", "z"}, {"y"});
  t.infer();
  expect_type(t.type("y"), DType::Int64, {});
  EXPECT_FALSE(t.values("y").has_value());
}

TEST(OpsMathValues, CastCarriesValues) {
  G t;
  t.shape_in("shape", {batch, seq, 768});
  t.init<int32_t>("i32", {2}, {300, -1});
  t.node("Cast", {"shape"}, {"s32"}, {Attribute::make_int("to", 6)});
  t.node("Cast", {"i32"}, {"s64"}, {Attribute::make_int("to", 7)});
  t.node("Cast", {"i32"}, {"u8"}, {Attribute::make_int("to", 2)});
  t.node("Cast", {"i32"}, {"b"}, {Attribute::make_int("to", 9)});
  t.node("Cast", {"shape"}, {"s8"}, {Attribute::make_int("to", 3)});
  t.node("Cast", {"shape"}, {"f"}, {Attribute::make_int("to", 1)});
  t.infer();
  EXPECT_EQ(t.values("s32"), (DimVector{batch, seq, 768}));
  EXPECT_EQ(t.values("s64"), (DimVector{300, -1}));
  EXPECT_EQ(t.values("u8"), (DimVector{44, 255}));  // wraps like a C cast
  EXPECT_EQ(t.values("b"), (DimVector{1, 1}));
  EXPECT_FALSE(t.values("s8").has_value());  // a symbolic dim may not fit in int8
  EXPECT_FALSE(t.values("f").has_value());   // values are tracked for integer tensors only
  expect_type(t.type("s32"), DType::Int32, {3});
  expect_type(t.type("f"), DType::Float32, {3});
}

TEST(OpsMathValues, EqualDecidesWhenTheDifferenceIsKnown) {
  G t;
  t.shape_in("shape", {batch, seq, 768});
  t.shape_in("other", {batch, seq + 1, Dim::symbol("h")});
  t.init<int64_t>("c", {3}, {-1, 4, 768});
  t.node("Equal", {"shape", "other"}, {"eq"});
  t.node("Equal", {"c", "c"}, {"same"});
  t.node("Less", {"shape", "other"}, {"lt_partial"});
  t.node("Equal", {"shape", "c"}, {"eq_partial"});
  t.init<int64_t>("k", {2}, {1, 768});
  t.shape_in("two", {seq, 768});
  t.node("GreaterOrEqual", {"two", "k"}, {"ge"});
  t.infer();
  EXPECT_FALSE(t.values("eq").has_value());  // 768 vs h is undecidable
  EXPECT_EQ(t.values("same"), (DimVector{1, 1, 1}));
  EXPECT_FALSE(t.values("lt_partial").has_value());
  EXPECT_FALSE(t.values("eq_partial").has_value());
  EXPECT_FALSE(t.values("ge").has_value());  // seq >= 1 is not known

  G u;
  u.shape_in("a", {batch, seq});
  u.shape_in("b", {batch, seq + 1});
  u.node("Equal", {"a", "b"}, {"eq"});
  u.node("Less", {"a", "b"}, {"lt"});
  u.infer();
  EXPECT_EQ(u.values("eq"), (DimVector{1, 0}));
  EXPECT_EQ(u.values("lt"), (DimVector{0, 1}));
  expect_type(u.type("eq"), DType::Bool, {2});
}

TEST(OpsMathValues, WhereMinMaxOnShapeValues) {
  // The exporter pattern Where(Equal(shape, -1), ones, shape) and clamped lengths.
  G t;
  t.shape_in("shape", {batch, seq});
  t.init<int64_t>("neg1", {}, {-1});
  t.init<int64_t>("ones", {2}, {1, 1});
  t.init<int64_t>("cap", {}, {512});
  t.node("Equal", {"shape", "neg1"}, {"is_neg"});
  t.node("Where", {"is_neg", "ones", "shape"}, {"fixed"});
  t.node("Min", {"shape", "cap"}, {"capped"});
  t.node("Max", {"ones", "ones"}, {"max1"});
  t.infer();
  // Values that are dims are >= 0, so never -1: the pattern keeps the shape exact (a real
  // torch export, paraphrase-MiniLM-L3, otherwise gave Expand a fresh symbol per axis).
  EXPECT_EQ(t.values("is_neg"), (DimVector{0, 0}));
  EXPECT_EQ(t.values("fixed"), (DimVector{batch, seq}));
  EXPECT_EQ(t.values("capped"), (DimVector{Dim::min(batch, 512), Dim::min(seq, 512)}));
  EXPECT_EQ(t.values("max1"), (DimVector{1, 1}));

  G u;
  u.shape_in("shape", {batch, seq});
  u.init<bool>("cond", {2}, {true, false});
  u.init<int64_t>("alt", {}, {-1});
  u.node("Where", {"cond", "shape", "alt"}, {"w"});
  u.init<int64_t>("zero", {}, {0});
  u.node("Equal", {"shape", "zero"}, {"is_zero"});      // batch may be 0: undecidable
  u.node("Greater", {"shape", "alt"}, {"above_neg1"});  // a dim is > -1 always
  u.infer();
  EXPECT_EQ(u.values("w"), (DimVector{batch, -1}));
  EXPECT_FALSE(u.values("is_zero").has_value());
  EXPECT_EQ(u.values("above_neg1"), (DimVector{1, 1}));
}

TEST(OpsMathValues, ClipOnIntegerValues) {
  G t;
  t.init<int64_t>("v", {3}, {-5, 3, 100});
  t.init<int64_t>("lo", {}, {0});
  t.init<int64_t>("hi", {}, {10});
  t.node("Clip", {"v", "lo", "hi"}, {"c"});
  t.infer();
  EXPECT_EQ(t.values("c"), (DimVector{0, 3, 10}));
}

TEST(OpsMathValues, OverflowLeavesValuesUnknown) {
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  G t;
  t.init<int64_t>("big", {}, {big});
  t.init<int64_t>("small", {}, {small});
  t.init<int64_t>("one", {}, {1});
  t.init<int64_t>("minus1", {}, {-1});
  t.node("Add", {"big", "one"}, {"sum"});
  t.node("Mul", {"big", "big"}, {"square"});
  t.node("Neg", {"small"}, {"neg"});
  t.node("Div", {"small", "minus1"}, {"quot"});
  t.node("Mod", {"small", "minus1"}, {"rem"});
  t.node("Less", {"small", "one"}, {"lt"});
  t.infer();
  EXPECT_FALSE(t.values("sum").has_value());
  EXPECT_FALSE(t.values("square").has_value());
  EXPECT_FALSE(t.values("neg").has_value());
  EXPECT_FALSE(t.values("quot").has_value());
  EXPECT_EQ(t.values("rem"), (DimVector{0}));
  EXPECT_EQ(t.values("lt"), (DimVector{1}));
}

// ================================================================ reductions and norms

TEST(OpsMathReduce, SoftmaxKeepsShapeAndChecksAxis) {
  G t;
  t.in("x", DType::Float16, DimVector{batch, 12, seq, seq});
  t.node("Softmax", {"x"}, {"y"});
  t.node("LogSoftmax", {"x"}, {"z"}, {Attribute::make_int("axis", 1)});
  t.infer();
  expect_type(t.type("y"), DType::Float16, {batch, 12, seq, seq});
  expect_type(t.type("z"), DType::Float16, {batch, 12, seq, seq});

  G bad;
  bad.in("x", DType::Float32, DimVector{batch, seq});
  bad.node("Softmax", {"x"}, {"y"}, {Attribute::make_int("axis", 2)});
  EXPECT_ERROR_HAS(bad.error(), "Softmax_node", "axis 2", "rank 2");
}

TEST(OpsMathReduce, SoftmaxDefaultAxisDependsOnOpset) {
  // Before opset 13 the default axis is 1, out of range for a 1-D input.
  G old(11);
  old.in("x", DType::Float32, DimVector{8});
  old.node("Softmax", {"x"}, {"y"});
  EXPECT_ERROR_HAS(old.error(), "Softmax_node", "axis 1");
  G now(13);
  now.in("x", DType::Float32, DimVector{8});
  now.node("Softmax", {"x"}, {"y"});
  now.infer();
  expect_type(now.type("y"), DType::Float32, {8});
}

TEST(OpsMathReduce, ReduceMeanAxesAttributeUpToOpset17) {
  G t(17);
  t.in("x", DType::Float32, DimVector{batch, seq, 768});
  t.node("ReduceMean", {"x"}, {"keep"}, {Attribute::make_ints("axes", {-1})});
  t.node("ReduceMean", {"x"}, {"drop"}, {Attribute::make_ints("axes", {-1}), Attribute::make_int("keepdims", 0)});
  t.node("ReduceMean", {"x"}, {"all"});
  t.node("ReduceMax", {"x"}, {"two"}, {Attribute::make_ints("axes", {0, 2}), Attribute::make_int("keepdims", 0)});
  t.infer();
  expect_type(t.type("keep"), DType::Float32, {batch, seq, 1});
  expect_type(t.type("drop"), DType::Float32, {batch, seq});
  expect_type(t.type("all"), DType::Float32, {1, 1, 1});
  expect_type(t.type("two"), DType::Float32, {seq});
}

TEST(OpsMathReduce, ReduceMeanAxesInputFromOpset18) {
  G t(18);
  t.in("x", DType::Float32, DimVector{batch, seq, 768});
  t.init<int64_t>("axes", {1}, {-1});
  t.init_zeros("empty", DType::Int64, {0});
  t.node("ReduceMean", {"x", "axes"}, {"keep"});
  t.node("ReduceMean", {"x"}, {"all"}, {Attribute::make_int("keepdims", 0)});
  t.node("ReduceMean", {"x", "empty"}, {"noop"}, {Attribute::make_int("noop_with_empty_axes", 1)});
  t.infer();
  expect_type(t.type("keep"), DType::Float32, {batch, seq, 1});
  expect_type(t.type("all"), DType::Float32, {});
  expect_type(t.type("noop"), DType::Float32, {batch, seq, 768});

  G bad(18);
  bad.in("x", DType::Float32, DimVector{batch, seq, 768});
  bad.node("ReduceMean", {"x"}, {"y"}, {Attribute::make_ints("axes", {-1})});
  EXPECT_ERROR_HAS(bad.error(), "ReduceMean_node", "axes", "input", "18");
}

TEST(OpsMathReduce, ReduceSumAxesInputFromOpset13) {
  G t(13);
  t.in("x", DType::Int64, DimVector{batch, seq});
  t.init<int64_t>("axes", {1}, {1});
  t.node("ReduceSum", {"x", "axes"}, {"y"}, {Attribute::make_int("keepdims", 0)});
  t.node("ReduceMean", {"x"}, {"m"}, {Attribute::make_ints("axes", {0})});  // still an attribute at 13
  t.infer();
  expect_type(t.type("y"), DType::Int64, {batch});
  expect_type(t.type("m"), DType::Int64, {1, seq});
}

TEST(OpsMathReduce, AxesKnownOnlyAtRunTime) {
  G t(18);
  t.in("x", DType::Float32, DimVector{batch, 1, 768});
  t.in("axes", DType::Int64, DimVector{2});
  t.in("axes_n", DType::Int64, DimVector{Dim::symbol("n")});
  t.node("ReduceSum", {"x", "axes"}, {"keep"});
  t.node("ReduceSum", {"x", "axes"}, {"drop"}, {Attribute::make_int("keepdims", 0)});
  t.node("ReduceSum", {"x", "axes_n"}, {"unknown"}, {Attribute::make_int("keepdims", 0)});
  t.infer();
  const auto& keep = t.type("keep");
  ASSERT_EQ(keep.rank(), 3);
  EXPECT_EQ((*keep.dims)[1], Dim(1));  // a dim of 1 stays 1 whatever the axes
  EXPECT_FALSE((*keep.dims)[0].is_constant());
  EXPECT_EQ(t.type("drop").rank(), 1);
  expect_unknown_rank(t.type("unknown"), DType::Float32);
}

TEST(OpsMathReduce, BadAxesAreErrors) {
  {
    G t(17);
    t.in("x", DType::Float32, DimVector{batch, seq, 768});
    t.node("ReduceMean", {"x"}, {"y"}, {Attribute::make_ints("axes", {3})});
    EXPECT_ERROR_HAS(t.error(), "ReduceMean_node", "axis 3", "rank 3");
  }
  {
    G t(17);
    t.in("x", DType::Float32, DimVector{batch, seq, 768});
    t.node("ReduceMean", {"x"}, {"y"}, {Attribute::make_ints("axes", {2, -1})});
    EXPECT_ERROR_HAS(t.error(), "ReduceMean_node", "is repeated in");
  }
  {
    G t(18);
    t.in("x", DType::Float32, DimVector{4});
    t.init<int32_t>("axes", {1}, {0});
    t.node("ReduceL2", {"x", "axes"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "ReduceL2_node", "int32", "int64");
  }
}

TEST(OpsMathReduce, ReduceOfScalarAndUnknownRank) {
  G t(18);
  t.in("s", DType::Float32, DimVector{});
  t.in("u", DType::Float32, std::nullopt);
  t.init<int64_t>("axes", {1}, {0});
  t.node("ReduceProd", {"s"}, {"sp"});
  t.node("ReduceMean", {"u", "axes"}, {"um"});
  t.node("ArgMax", {"u"}, {"ua"});
  t.infer();
  expect_type(t.type("sp"), DType::Float32, {});
  expect_unknown_rank(t.type("um"), DType::Float32);
  expect_unknown_rank(t.type("ua"), DType::Int64);
}

TEST(OpsMathReduce, ReduceMaxOfBoolFromOpset20) {
  G t(20);
  t.in("b", DType::Bool, DimVector{4});
  t.node("ReduceMax", {"b"}, {"y"}, {Attribute::make_int("keepdims", 0)});
  t.infer();
  expect_type(t.type("y"), DType::Bool, {});
  G old(18);
  old.in("b", DType::Bool, DimVector{4});
  old.node("ReduceMax", {"b"}, {"y"});
  EXPECT_ERROR_HAS(old.error(), "ReduceMax_node", "bool");
}

TEST(OpsMathReduce, ArgMaxIsInt64) {
  G t;
  t.in("x", DType::Float32, DimVector{batch, seq, 50257});
  t.node("ArgMax", {"x"}, {"keep"}, {Attribute::make_int("axis", -1)});
  t.node("ArgMin", {"x"}, {"drop"}, {Attribute::make_int("axis", 1), Attribute::make_int("keepdims", 0)});
  t.infer();
  expect_type(t.type("keep"), DType::Int64, {batch, seq, 1});
  expect_type(t.type("drop"), DType::Int64, {batch, 50257});
}

TEST(OpsMathNorm, LayerNormOutputs) {
  G t;
  t.in("x", DType::Float16, DimVector{batch, seq, 768});
  t.init_zeros("gamma", DType::Float16, {768});
  t.init_zeros("beta", DType::Float16, {768});
  t.node("LayerNormalization", {"x", "gamma", "beta"}, {"y", "mean", "inv_std"});
  t.node("LayerNormalization", {"x", "gamma"}, {"y_only"});
  t.infer();
  expect_type(t.type("y"), DType::Float16, {batch, seq, 768});
  expect_type(t.type("mean"), DType::Float32, {batch, seq, 1});
  expect_type(t.type("inv_std"), DType::Float32, {batch, seq, 1});
  expect_type(t.type("y_only"), DType::Float16, {batch, seq, 768});
}

TEST(OpsMathNorm, LayerNormAxisAndStashType) {
  G t;
  t.in("x", DType::Float64, DimVector{batch, 4, 8});
  t.init_zeros("gamma", DType::Float64, {4, 8});
  t.node("LayerNormalization", {"x", "gamma"}, {"y", "mean", ""},
         {Attribute::make_int("axis", -2), Attribute::make_int("stash_type", 11)});
  t.infer();
  expect_type(t.type("y"), DType::Float64, {batch, 4, 8});
  expect_type(t.type("mean"), DType::Float64, {batch, 1, 1});
}

TEST(OpsMathNorm, LayerNormErrors) {
  {
    G t;  // story 3: fp16 activations with an fp32 weight
    t.in("x", DType::Float16, DimVector{batch, 768});
    t.init_zeros("gamma", DType::Float32, {768});
    t.node("LayerNormalization", {"x", "gamma"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "LayerNormalization_node", "float16", "float32");
  }
  {
    G t;
    t.in("x", DType::Float32, DimVector{batch, 768});
    t.init_zeros("gamma", DType::Float32, {512});
    t.node("LayerNormalization", {"x", "gamma"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "LayerNormalization_node", "512", "768");
  }
  {
    G t;
    t.in("x", DType::Float32, DimVector{batch, 768});
    t.init_zeros("gamma", DType::Float32, {768});
    t.node("LayerNormalization", {"x", "gamma"}, {"y"}, {Attribute::make_int("axis", -3)});
    EXPECT_ERROR_HAS(t.error(), "LayerNormalization_node", "axis -3");
  }
  {
    G t;
    t.in("x", DType::Float32, DimVector{batch, 768});
    t.init_zeros("gamma", DType::Float32, {768});
    t.node("LayerNormalization", {"x", "gamma"}, {"y"}, {Attribute::make_int("stash_type", 7)});
    EXPECT_ERROR_HAS(t.error(), "LayerNormalization_node", "stash_type");
  }
}

TEST(OpsMathNorm, LayerNormUnknownRank) {
  G t;
  t.in("x", DType::Float32, std::nullopt);
  t.init_zeros("gamma", DType::Float32, {768});
  t.node("LayerNormalization", {"x", "gamma"}, {"y", "m", "s"});
  t.infer();
  expect_unknown_rank(t.type("y"), DType::Float32);
  expect_unknown_rank(t.type("m"), DType::Float32);
}

TEST(OpsMathNorm, RMSNormalizationOutputFollowsScale) {
  G t(23);
  t.in("x", DType::Float16, DimVector{batch, seq, 896});
  t.init_zeros("w", DType::Float32, {896});
  t.node("RMSNormalization", {"x", "w"}, {"y"}, {Attribute::make_float("epsilon", 1e-6f)});
  t.infer();
  expect_type(t.type("y"), DType::Float32, {batch, seq, 896});

  G bad(23);
  bad.in("x", DType::Float16, DimVector{batch, seq, 896});
  bad.init_zeros("w", DType::Float16, {512});
  bad.node("RMSNormalization", {"x", "w"}, {"y"});
  EXPECT_ERROR_HAS(bad.error(), "RMSNormalization_node", "[896]");
}

TEST(OpsMathNorm, CumSumAndTrilu) {
  G t;
  t.in("x", DType::Int64, DimVector{batch, seq});
  t.init<int64_t>("axis", {}, {-1});
  t.init<int64_t>("k", {}, {1});
  t.in("m", DType::Bool, DimVector{seq, seq});
  t.node("CumSum", {"x", "axis"}, {"c"});
  t.node("Trilu", {"m", "k"}, {"tri"}, {Attribute::make_int("upper", 1)});
  t.infer();
  expect_type(t.type("c"), DType::Int64, {batch, seq});
  expect_type(t.type("tri"), DType::Bool, {seq, seq});

  G bad;
  bad.in("x", DType::Float32, DimVector{4});
  bad.init<int32_t>("axis", {}, {1});
  bad.node("CumSum", {"x", "axis"}, {"c"});
  EXPECT_ERROR_HAS(bad.error(), "CumSum_node", "axis 1", "rank 1");

  G vec;
  vec.in("x", DType::Float32, DimVector{4});
  vec.node("Trilu", {"x"}, {"y"});
  EXPECT_ERROR_HAS(vec.error(), "Trilu_node", "rank >= 2");
}

// ================================================================ quantization

TEST(OpsMathQuant, QuantizeLinearOutputType) {
  G t(13);
  t.in("x", DType::Float32, DimVector{batch, seq, 768});
  t.init<float>("scale", {}, {0.02f});
  t.init<int8_t>("zp_s8", {}, {0});
  t.node("QuantizeLinear", {"x", "scale"}, {"u8"});
  t.node("QuantizeLinear", {"x", "scale", "zp_s8"}, {"s8"});
  t.infer();
  expect_type(t.type("u8"), DType::UInt8, {batch, seq, 768});
  expect_type(t.type("s8"), DType::Int8, {batch, seq, 768});
}

TEST(OpsMathQuant, QuantizeLinearOutputDtypeAttributeFromOpset21) {
  G t(21);
  t.in("x", DType::Float32, DimVector{16});
  t.init<float>("scale", {}, {0.02f});
  t.node("QuantizeLinear", {"x", "scale"}, {"i4"}, {Attribute::make_int("output_dtype", 22)});
  t.infer();
  expect_type(t.type("i4"), DType::Int4, {16});

  G clash(21);
  clash.in("x", DType::Float32, DimVector{16});
  clash.init<float>("scale", {}, {0.02f});
  clash.init<uint8_t>("zp", {}, {128});
  clash.node("QuantizeLinear", {"x", "scale", "zp"}, {"y"}, {Attribute::make_int("output_dtype", 3)});
  EXPECT_ERROR_HAS(clash.error(), "QuantizeLinear_node", "output_dtype", "int8", "uint8");

  G old(13);  // int4 arrived in opset 21
  old.in("x", DType::Float32, DimVector{16});
  old.init<float>("scale", {}, {0.02f});
  old.init_zeros("zp", DType::Int4, {});
  old.node("QuantizeLinear", {"x", "scale", "zp"}, {"y"});
  EXPECT_ERROR_HAS(old.error(), "QuantizeLinear_node", "int4", "opset 13");
}

TEST(OpsMathQuant, QuantizeLinearScaleTypeByOpset) {
  G v19(19);  // y_scale shares x's type
  v19.in("x", DType::Float16, DimVector{8});
  v19.init<float>("scale", {}, {0.1f});
  v19.node("QuantizeLinear", {"x", "scale"}, {"y"});
  EXPECT_ERROR_HAS(v19.error(), "QuantizeLinear_node", "float16", "float32");

  G v23(23);  // independent from opset 23
  v23.in("x", DType::Float16, DimVector{8});
  v23.init<float>("scale", {}, {0.1f});
  v23.node("QuantizeLinear", {"x", "scale"}, {"y"});
  v23.infer();
  expect_type(v23.type("y"), DType::UInt8, {8});
}

TEST(OpsMathQuant, TwoBitTypesAndE8M0ScalesByOpset) {
  G t(25);
  t.in("x", DType::Float32, DimVector{8, 32});
  t.init<float>("scale", {}, {0.5f});
  t.init_zeros("zp2", DType::Int2, {});
  t.init_zeros("mx", DType::Float8E8M0, {8, 1});  // one power-of-two scale per 32-block
  t.node("QuantizeLinear", {"x", "scale", "zp2"}, {"q"});
  t.node("QuantizeLinear", {"x", "mx"}, {"qu"},
         {Attribute::make_int("output_dtype", 25), Attribute::make_int("axis", 1), Attribute::make_int("block_size", 32)});
  t.node("DequantizeLinear", {"qu", "mx"}, {"d"},
         {Attribute::make_int("output_dtype", 10), Attribute::make_int("axis", 1), Attribute::make_int("block_size", 32)});
  t.infer();
  expect_type(t.type("q"), DType::Int2, {8, 32});
  expect_type(t.type("qu"), DType::UInt2, {8, 32});
  expect_type(t.type("d"), DType::Float16, {8, 32});

  G int2_24(24);  // int2/uint2 arrived in opset 25
  int2_24.in("x", DType::Float32, DimVector{16});
  int2_24.init<float>("scale", {}, {0.5f});
  int2_24.init_zeros("zp", DType::Int2, {});
  int2_24.node("QuantizeLinear", {"x", "scale", "zp"}, {"y"});
  EXPECT_ERROR_HAS(int2_24.error(), "QuantizeLinear_node", "int2", "opset 24");

  G dq_24(24);
  dq_24.in("x", DType::UInt2, DimVector{16});
  dq_24.init<float>("scale", {}, {0.5f});
  dq_24.node("DequantizeLinear", {"x", "scale"}, {"y"});
  EXPECT_ERROR_HAS(dq_24.error(), "DequantizeLinear_node", "uint2", "opset 24");

  G mx_23(23);  // float8e8m0 scales arrived in opset 24
  mx_23.in("x", DType::Float32, DimVector{16});
  mx_23.init_zeros("mx", DType::Float8E8M0, {});
  mx_23.node("QuantizeLinear", {"x", "mx"}, {"y"});
  EXPECT_ERROR_HAS(mx_23.error(), "QuantizeLinear_node", "float8e8m0");

  G no_out(25);  // the output must be float32/float16/bfloat16, so say which
  no_out.in("x", DType::Int8, DimVector{16});
  no_out.init_zeros("mx", DType::Float8E8M0, {});
  no_out.node("DequantizeLinear", {"x", "mx"}, {"y"});
  EXPECT_ERROR_HAS(no_out.error(), "DequantizeLinear_node", "float8e8m0", "output_dtype");
}

TEST(OpsMathQuant, PerAxisAndBlockedScales) {
  G t(21);
  t.in("w", DType::Float32, DimVector{768, 3072});
  t.init<float>("s_axis1", {3072}, std::vector<float>(3072, 1.f));
  t.init<float>("s_block", {768, 96}, std::vector<float>(768 * 96, 1.f));
  t.init<float>("s_one", {1}, {1.f});
  t.node("QuantizeLinear", {"w", "s_axis1"}, {"q_axis"});
  t.node("QuantizeLinear", {"w", "s_block"}, {"q_block"},
         {Attribute::make_int("axis", 1), Attribute::make_int("block_size", 32)});
  t.node("QuantizeLinear", {"w", "s_one"}, {"q_one"});
  t.infer();
  expect_type(t.type("q_axis"), DType::UInt8, {768, 3072});
  expect_type(t.type("q_block"), DType::UInt8, {768, 3072});
  expect_type(t.type("q_one"), DType::UInt8, {768, 3072});

  G wrong_axis(21);
  wrong_axis.in("w", DType::Float32, DimVector{768, 3072});
  wrong_axis.init<float>("s", {3072}, std::vector<float>(3072, 1.f));
  wrong_axis.node("QuantizeLinear", {"w", "s"}, {"q"}, {Attribute::make_int("axis", 0)});
  EXPECT_ERROR_HAS(wrong_axis.error(), "QuantizeLinear_node", "per-axis", "dim 0");

  G wrong_block(21);
  wrong_block.in("w", DType::Float32, DimVector{768, 3072});
  wrong_block.init<float>("s", {768, 96}, std::vector<float>(768 * 96, 1.f));
  wrong_block.node("QuantizeLinear", {"w", "s"}, {"q"},
                   {Attribute::make_int("axis", 1), Attribute::make_int("block_size", 64)});
  EXPECT_ERROR_HAS(wrong_block.error(), "QuantizeLinear_node", "block_size 64", "48");

  G bad_axis(21);
  bad_axis.in("w", DType::Float32, DimVector{768, 3072});
  bad_axis.init<float>("s", {768}, std::vector<float>(768, 1.f));
  bad_axis.node("QuantizeLinear", {"w", "s"}, {"q"}, {Attribute::make_int("axis", 2)});
  EXPECT_ERROR_HAS(bad_axis.error(), "QuantizeLinear_node", "axis 2");
}

TEST(OpsMathQuant, DequantizeLinearPerAxis) {
  G t(13);
  t.in("w", DType::Int8, DimVector{3072, 768});
  t.init<float>("s", {3072}, std::vector<float>(3072, 1.f));
  t.init<int8_t>("zp", {3072}, std::vector<int8_t>(3072, 0));
  t.node("DequantizeLinear", {"w", "s", "zp"}, {"y"}, {Attribute::make_int("axis", 0)});
  t.infer();
  expect_type(t.type("y"), DType::Float32, {3072, 768});

  G mismatch(13);
  mismatch.in("w", DType::Int8, DimVector{3072, 768});
  mismatch.init<float>("s", {3072}, std::vector<float>(3072, 1.f));
  mismatch.init<uint8_t>("zp", {3072}, std::vector<uint8_t>(3072, 0));
  mismatch.node("DequantizeLinear", {"w", "s", "zp"}, {"y"}, {Attribute::make_int("axis", 0)});
  EXPECT_ERROR_HAS(mismatch.error(), "DequantizeLinear_node", "int8", "uint8");

  G shape(13);
  shape.in("w", DType::Int8, DimVector{3072, 768});
  shape.init<float>("s", {3072}, std::vector<float>(3072, 1.f));
  shape.init<int8_t>("zp", {}, {0});
  shape.node("DequantizeLinear", {"w", "s", "zp"}, {"y"}, {Attribute::make_int("axis", 0)});
  EXPECT_ERROR_HAS(shape.error(), "DequantizeLinear_node", "same shape");
}

TEST(OpsMathQuant, DequantizeLinearOutputType) {
  G t(23);
  t.in("x", DType::UInt8, DimVector{batch, seq, 768});
  t.init_zeros("s16", DType::Float16, {});
  t.init<float>("s32", {}, {0.1f});
  t.node("DequantizeLinear", {"x", "s16"}, {"h"});
  t.node("DequantizeLinear", {"x", "s32"}, {"b"}, {Attribute::make_int("output_dtype", 16)});
  t.in("acc", DType::Int32, DimVector{batch, 3072});
  t.node("DequantizeLinear", {"acc", "s32"}, {"f"});
  t.in("u", DType::Int8, std::nullopt);
  t.node("DequantizeLinear", {"u", "s32"}, {"uf"});
  t.infer();
  expect_type(t.type("h"), DType::Float16, {batch, seq, 768});
  expect_type(t.type("b"), DType::BFloat16, {batch, seq, 768});
  expect_type(t.type("f"), DType::Float32, {batch, 3072});
  expect_unknown_rank(t.type("uf"), DType::Float32);

  G bad(13);
  bad.in("x", DType::Float32, DimVector{4});
  bad.init<float>("s", {}, {0.1f});
  bad.node("DequantizeLinear", {"x", "s"}, {"y"});
  EXPECT_ERROR_HAS(bad.error(), "DequantizeLinear_node", "float32");
}

TEST(OpsMathQuant, DynamicQuantizeLinear) {
  G t;
  t.in("x", DType::Float32, DimVector{batch, seq, 768});
  t.node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zp"});
  t.infer();
  expect_type(t.type("y"), DType::UInt8, {batch, seq, 768});
  expect_type(t.type("scale"), DType::Float32, {});
  expect_type(t.type("zp"), DType::UInt8, {});

  G bad;
  bad.in("x", DType::Float16, DimVector{4});
  bad.node("DynamicQuantizeLinear", {"x"}, {"y", "scale", "zp"});
  EXPECT_ERROR_HAS(bad.error(), "DynamicQuantizeLinear_node", "float16", "float32");
}

TEST(OpsMathQuant, MatMulIntegerShapes) {
  G t;
  t.in("a", DType::UInt8, DimVector{batch, seq, 768});
  t.init_zeros("w", DType::Int8, {768, 3072});
  t.init<uint8_t>("a_zp", {}, {128});
  t.init<int8_t>("w_zp", {3072}, std::vector<int8_t>(3072, 0));
  t.node("MatMulInteger", {"a", "w", "a_zp", "w_zp"}, {"y"});
  t.in("b1", DType::Int8, DimVector{2, 1, 4, 8});
  t.in("b2", DType::Int8, DimVector{3, 8, 5});
  t.node("MatMulInteger", {"b1", "b2"}, {"batched"});
  t.in("v", DType::Int8, DimVector{8});
  t.node("MatMulInteger", {"v", "b2"}, {"vec_mat"});
  t.node("MatMulInteger", {"b1", "v"}, {"mat_vec"});
  t.infer();
  expect_type(t.type("y"), DType::Int32, {batch, seq, 3072});
  expect_type(t.type("batched"), DType::Int32, {2, 3, 4, 5});
  expect_type(t.type("vec_mat"), DType::Int32, {3, 5});
  expect_type(t.type("mat_vec"), DType::Int32, {2, 1, 4});
}

TEST(OpsMathQuant, MatMulIntegerErrors) {
  {
    G t;
    t.in("a", DType::UInt8, DimVector{batch, 768});
    t.init_zeros("w", DType::Int8, {512, 3072});
    t.node("MatMulInteger", {"a", "w"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "MatMulInteger_node", "inner dimensions", "768", "512");
  }
  {
    G t;
    t.in("a", DType::UInt8, DimVector{batch, 768});
    t.init_zeros("w", DType::Int8, {768, 3072});
    t.init<int8_t>("a_zp", {}, {0});
    t.node("MatMulInteger", {"a", "w", "a_zp"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "MatMulInteger_node", "uint8", "int8");
  }
  {
    G t;
    t.in("a", DType::Float32, DimVector{batch, 768});
    t.init_zeros("w", DType::Int8, {768, 3072});
    t.node("MatMulInteger", {"a", "w"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "MatMulInteger_node", "float32");
  }
  {
    G t;
    t.in("a", DType::Int8, DimVector{2, 4, 8});
    t.in("b", DType::Int8, DimVector{3, 8, 5});
    t.node("MatMulInteger", {"a", "b"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "MatMulInteger_node", "batch");
  }
  {
    G t;
    t.in("a", DType::Int8, std::nullopt);
    t.in("b", DType::Int8, DimVector{8, 5});
    t.node("MatMulInteger", {"a", "b"}, {"y"});
    t.infer();
    expect_unknown_rank(t.type("y"), DType::Int32);
  }
}

TEST(OpsMathQuant, QLinearMatMulTakesTheOutputZeroPointType) {
  G t;
  t.in("a", DType::UInt8, DimVector{batch, seq, 64});
  t.init<float>("as", {}, {0.1f});
  t.init<uint8_t>("az", {}, {128});
  t.in("b", DType::Int8, DimVector{batch, 64, seq});
  t.init<float>("bs", {}, {0.1f});
  t.init<int8_t>("bz", {}, {0});
  t.init<float>("ys", {}, {0.1f});
  t.init<int8_t>("yz", {}, {0});
  t.node("QLinearMatMul", {"a", "as", "az", "b", "bs", "bz", "ys", "yz"}, {"y"});
  t.infer();
  expect_type(t.type("y"), DType::Int8, {batch, seq, seq});
}

TEST(OpsMathQuant, ConvIntegerShapes) {
  G t;
  t.in("x", DType::UInt8, DimVector{batch, 3, 224, 224});
  t.init_zeros("w", DType::Int8, {64, 3, 7, 7});
  t.node("ConvInteger", {"x", "w"}, {"y"},
         {Attribute::make_ints("strides", {2, 2}), Attribute::make_ints("pads", {3, 3, 3, 3})});
  const Dim h = Dim::symbol("h");
  t.in("xs", DType::UInt8, DimVector{1, 3, h, 32});
  t.node("ConvInteger", {"xs", "w"}, {"same"},
         {Attribute::make_ints("strides", {2, 2}), Attribute::make_string("auto_pad", "SAME_UPPER")});
  t.node("ConvInteger", {"xs", "w"}, {"valid"}, {Attribute::make_string("auto_pad", "VALID")});
  t.infer();
  expect_type(t.type("y"), DType::Int32, {batch, 64, 112, 112});
  expect_type(t.type("same"), DType::Int32, {1, 64, Dim::floor_div(h + 1, 2), 16});
  expect_type(t.type("valid"), DType::Int32, {1, 64, h - 6, 26});
}

TEST(OpsMathQuant, ConvIntegerErrors) {
  {
    G t;
    t.in("x", DType::UInt8, DimVector{1, 4, 32, 32});
    t.init_zeros("w", DType::Int8, {64, 3, 3, 3});
    t.node("ConvInteger", {"x", "w"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "ConvInteger_node", "channels");
  }
  {
    G t;
    t.in("x", DType::UInt8, DimVector{1, 3, 2, 2});
    t.init_zeros("w", DType::Int8, {64, 3, 3, 3});
    t.node("ConvInteger", {"x", "w"}, {"y"});
    EXPECT_ERROR_HAS(t.error(), "ConvInteger_node", "smaller than");
  }
  {
    G t;
    t.in("x", DType::UInt8, DimVector{1, 3, 8, 8});
    t.init_zeros("w", DType::Int8, {64, 3, 3, 3});
    t.node("ConvInteger", {"x", "w"}, {"y"}, {Attribute::make_ints("strides", {2})});
    EXPECT_ERROR_HAS(t.error(), "ConvInteger_node", "strides");
  }
  {
    G t;
    t.in("x", DType::UInt8, DimVector{1, 3, 8, 8});
    t.init_zeros("w", DType::Int8, {64, 3, 3, 3});
    t.node("ConvInteger", {"x", "w"}, {"y"}, {Attribute::make_ints("kernel_shape", {5, 5})});
    EXPECT_ERROR_HAS(t.error(), "ConvInteger_node", "kernel_shape");
  }
  {
    G t;  // unknown weights: the output rank is still known
    t.in("x", DType::UInt8, DimVector{batch, 3, 8, 8});
    t.in("w", DType::Int8, std::nullopt);
    t.node("ConvInteger", {"x", "w"}, {"y"}, {Attribute::make_ints("kernel_shape", {3, 3})});
    t.infer();
    const auto& y = t.type("y");
    ASSERT_EQ(y.rank(), 4);
    EXPECT_EQ((*y.dims)[0], batch);
    EXPECT_EQ((*y.dims)[2], Dim(6));
  }
}

TEST(OpsMathQuant, MatMulNBits) {
  // Qwen-style 4-bit weight: K=896, N=4864, block 32 -> 28 blocks of 16 bytes.
  auto attrs = [](int64_t k) {
    return std::vector<Attribute>{Attribute::make_int("K", k), Attribute::make_int("N", 4864),
                                  Attribute::make_int("bits", 4), Attribute::make_int("block_size", 32)};
  };
  G t;
  t.in("a", DType::Float16, DimVector{batch, seq, 896});
  t.init_zeros("b", DType::UInt8, {4864, 28, 16});
  t.init_zeros("s", DType::Float16, {4864 * 28});
  t.node("MatMulNBits", {"a", "b", "s"}, {"y"}, attrs(896), "com.microsoft");
  t.infer();
  expect_type(t.type("y"), DType::Float16, {batch, seq, 4864});

  G wrong_k;
  wrong_k.in("a", DType::Float16, DimVector{batch, seq, 1024});
  wrong_k.init_zeros("b", DType::UInt8, {4864, 28, 16});
  wrong_k.init_zeros("s", DType::Float16, {4864 * 28});
  wrong_k.node("MatMulNBits", {"a", "b", "s"}, {"y"}, attrs(896), "com.microsoft");
  EXPECT_ERROR_HAS(wrong_k.error(), "MatMulNBits_node", "com.microsoft", "1024", "K is 896");

  G wrong_b;
  wrong_b.in("a", DType::Float16, DimVector{batch, 896});
  wrong_b.init_zeros("b", DType::UInt8, {4864, 28, 32});
  wrong_b.init_zeros("s", DType::Float16, {4864 * 28});
  wrong_b.node("MatMulNBits", {"a", "b", "s"}, {"y"}, attrs(896), "com.microsoft");
  EXPECT_ERROR_HAS(wrong_b.error(), "MatMulNBits_node", "[4864,28,16]");

  G missing;
  missing.in("a", DType::Float16, DimVector{batch, 896});
  missing.init_zeros("b", DType::UInt8, {4864, 28, 16});
  missing.init_zeros("s", DType::Float16, {4864 * 28});
  missing.node("MatMulNBits", {"a", "b", "s"}, {"y"}, {Attribute::make_int("K", 896)}, "com.microsoft");
  EXPECT_ERROR_HAS(missing.error(), "MatMulNBits_node", "'N'");
}

// ================================================================ shared shape helpers

TEST(OpsMathShapes, MatmulOutputDims) {
  std::string why;
  EXPECT_EQ(matmul_output_dims({batch, seq, 64}, {64, seq}), (DimVector{batch, seq, seq}));
  EXPECT_EQ(matmul_output_dims({8}, {8}), DimVector{});
  EXPECT_EQ(matmul_output_dims({seq, Dim::symbol("k")}, {Dim::symbol("j"), 4}), (DimVector{seq, 4}));
  EXPECT_FALSE(matmul_output_dims({}, {4}, &why).has_value());
  EXPECT_NE(why.find("rank"), std::string::npos);
  EXPECT_FALSE(matmul_output_dims({2, 3}, {4, 5}, &why).has_value());
  EXPECT_NE(why.find("inner"), std::string::npos);
}

TEST(OpsMathShapes, ConvOutputSpatial) {
  ConvGeometry g;
  g.strides = {1};
  g.dilations = {2};
  g.pads = {2, 2};
  EXPECT_EQ(conv_output_spatial({seq}, {3}, g), (DimVector{seq}));
  g.auto_pad = "SAME_LOWER";
  g.strides = {3};
  EXPECT_EQ(conv_output_spatial({10}, {3}, g), (DimVector{4}));
  g.auto_pad = "BOGUS";
  std::string why;
  EXPECT_FALSE(conv_output_spatial({10}, {3}, g, &why).has_value());
  EXPECT_NE(why.find("auto_pad"), std::string::npos);
}

}  // namespace
}  // namespace octet
