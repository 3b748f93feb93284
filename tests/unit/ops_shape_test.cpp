// Type and shape inference of the shape-manipulation ops, on tiny graphs built the way
// exporters write them (Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains).
#include <gtest/gtest.h>

#include "ops_shape_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;

const Dim batch = S("batch"), seq = S("seq");

// ------------------------------------------------------------------ Shape / Size

TEST(ShapeOps, ShapeValuesAreTheInputDims) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, seq, 768});
  b.node("Shape", {"x"}, {"s"});
  b.node("Size", {"x"}, {"n"});
  b.infer();
  EXPECT_EQ(b.type("s"), TensorType(DType::Int64, DimVector{3}));
  EXPECT_EQ(b.values("s"), (DimVector{batch, seq, 768}));
  EXPECT_EQ(b.type("n"), TensorType(DType::Int64, DimVector{}));
  EXPECT_EQ(b.values("n"), DimVector{batch * seq * 768});
}

TEST(ShapeOps, ShapeStartEndFromOpset15) {
  GraphBuilder b(15);
  b.input("x", DType::Float32, DimVector{batch, seq, 768});
  b.node("Shape", {"x"}, {"tail"}, {I("start", 1)});
  b.node("Shape", {"x"}, {"last"}, {I("start", -1)});
  b.node("Shape", {"x"}, {"head"}, {I("end", -1)});
  b.node("Shape", {"x"}, {"none"}, {I("start", 2), I("end", 1)});
  b.infer();
  EXPECT_EQ(b.values("tail"), (DimVector{seq, 768}));
  EXPECT_EQ(b.values("last"), DimVector{768});
  EXPECT_EQ(b.values("head"), (DimVector{batch, seq}));
  EXPECT_EQ(b.dims("none"), DimVector{0});
  EXPECT_EQ(b.values("none"), DimVector{});

  GraphBuilder old(13);  // before opset 15 there is no start/end
  old.input("x", DType::Float32, DimVector{batch, seq});
  old.node("Shape", {"x"}, {"s"}, {I("start", 1)});
  old.infer();
  EXPECT_EQ(old.values("s"), (DimVector{batch, seq}));
}

TEST(ShapeOps, ShapeOfUnknownRank) {
  GraphBuilder b;
  b.input("x", DType::Float32, std::nullopt);
  b.node("Shape", {"x"}, {"s"});
  b.node("Shape", {"x"}, {"bounded"}, {I("start", 0), I("end", 5)});  // clamps to an unknown rank
  b.node("Size", {"x"}, {"n"});
  b.infer();
  EXPECT_EQ(b.type("s").rank(), 1);
  EXPECT_FALSE(b.dims("s")[0].is_constant());
  EXPECT_FALSE(b.dims("bounded")[0].is_constant());
  EXPECT_FALSE(b.values("s"));
  EXPECT_EQ(b.type("n"), TensorType(DType::Int64, DimVector{}));
  EXPECT_FALSE(b.values("n"));
}

// ------------------------------------------------------------------ Reshape

// Reshape(x, Concat(Shape(x)[0], -1, 64)) on [batch, seq, 768]: 768/64 = 12 heads.
TEST(ShapeOps, ReshapeInfersMinusOneExactly) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, seq, 768});
  b.scalar("zero", 0);
  b.ints("axes0", {0});
  b.ints("minus1", {-1});
  b.ints("c64", {64});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "zero"}, {"b"}, {I("axis", 0)});
  b.node("Unsqueeze", {"b", "axes0"}, {"b1"});
  b.node("Concat", {"b1", "minus1", "c64"}, {"shape"}, {I("axis", 0)});
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.infer();
  EXPECT_EQ(b.values("b"), DimVector{batch});
  EXPECT_EQ(b.type("b").rank(), 0);
  EXPECT_EQ(b.values("shape"), (DimVector{batch, -1, 64}));
  EXPECT_EQ(b.dims("y"), (DimVector{batch, seq * 12, 64}));
  EXPECT_EQ(b.type("y").dtype, DType::Float32);
}

TEST(ShapeOps, ReshapeFlattenAndSplitHeadsRoundTrip) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, seq, 768});
  b.ints("flat", {-1, 768});
  b.ints("idx01", {0, 1});
  b.ints("heads", {12, -1});
  b.node("Reshape", {"x", "flat"}, {"x2"});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "idx01"}, {"bs"});
  b.node("Concat", {"bs", "heads"}, {"shape"}, {I("axis", 0)});
  b.node("Reshape", {"x2", "shape"}, {"y"});
  b.infer();
  EXPECT_EQ(b.dims("x2"), (DimVector{batch * seq, 768}));
  EXPECT_EQ(b.values("bs"), (DimVector{batch, seq}));
  EXPECT_EQ(b.dims("y"), (DimVector{batch, seq, 12, 64}));
}

TEST(ShapeOps, ReshapeZeroCopiesThenTransposeAndAttentionScores) {
  GraphBuilder b;
  b.input("q", DType::Float32, DimVector{batch, seq, 768});
  b.input("k", DType::Float32, DimVector{batch, seq, 768});
  b.ints("split_heads", {0, 0, 12, 64});
  b.node("Reshape", {"q", "split_heads"}, {"q4"});
  b.node("Reshape", {"k", "split_heads"}, {"k4"});
  b.node("Transpose", {"q4"}, {"qt"}, {Is("perm", {0, 2, 1, 3})});
  b.node("Transpose", {"k4"}, {"kt"}, {Is("perm", {0, 2, 3, 1})});
  b.node("MatMul", {"qt", "kt"}, {"scores"});
  b.infer();
  EXPECT_EQ(b.dims("q4"), (DimVector{batch, seq, 12, 64}));
  EXPECT_EQ(b.dims("qt"), (DimVector{batch, 12, seq, 64}));
  EXPECT_EQ(b.dims("kt"), (DimVector{batch, 12, 64, seq}));
  EXPECT_EQ(b.dims("scores"), (DimVector{batch, 12, seq, seq}));
}

// Extended attention mask: [batch, seq] -> [batch, 1, 1, seq], written both ways
// exporters do it, then expanded to the scores' shape.
TEST(ShapeOps, AttentionMaskReshapes) {
  GraphBuilder b;
  b.input("mask", DType::Int64, DimVector{batch, seq});
  b.input("scores", DType::Float32, DimVector{batch, 12, seq, seq});
  b.ints("axes12", {1, 2});
  b.ints("ones", {1, 1});
  b.scalar("zero", 0);
  b.scalar("one", 1);
  b.ints("axes0", {0});
  b.node("Unsqueeze", {"mask", "axes12"}, {"m4"});
  b.node("Shape", {"mask"}, {"ms"});
  b.node("Gather", {"ms", "zero"}, {"b0"});
  b.node("Gather", {"ms", "one"}, {"s0"});
  b.node("Unsqueeze", {"b0", "axes0"}, {"b1"});
  b.node("Unsqueeze", {"s0", "axes0"}, {"s1"});
  b.node("Concat", {"b1", "ones", "s1"}, {"shape"}, {I("axis", 0)});
  b.node("Reshape", {"mask", "shape"}, {"r4"});
  b.node("Shape", {"scores"}, {"ss"});
  b.node("Expand", {"r4", "ss"}, {"full"});
  b.infer();
  EXPECT_EQ(b.type("m4"), TensorType(DType::Int64, DimVector{batch, 1, 1, seq}));
  EXPECT_EQ(b.values("shape"), (DimVector{batch, 1, 1, seq}));
  EXPECT_EQ(b.dims("r4"), (DimVector{batch, 1, 1, seq}));
  EXPECT_EQ(b.dims("full"), (DimVector{batch, 12, seq, seq}));
}

TEST(ShapeOps, ReshapeErrorsNameTheNode) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{2, 3});
  b.ints("two_minus", {-1, -1});
  b.ints("four", {4});
  b.ints("far_zero", {1, 1, 0, 6});
  b.ints("bad", {-2, 3});
  b.node("Reshape", {"x", "two_minus"}, {"y1"}, {}, "r_two_minus");
  EXPECT_TRUE(contains(error_of([&] { b.infer(); }), "node 'r_two_minus' (Reshape)"));

  GraphBuilder c;
  c.input("x", DType::Float32, DimVector{2, 3});
  c.ints("four", {4});
  c.node("Reshape", {"x", "four"}, {"y"}, {}, "r_count");
  std::string msg = error_of([&] { c.infer(); });
  EXPECT_TRUE(contains(msg, "node 'r_count'")) << msg;
  EXPECT_TRUE(contains(msg, "6 elements")) << msg;

  GraphBuilder d;
  d.input("x", DType::Float32, DimVector{2, 3});
  d.ints("far_zero", {1, 1, 0, 6});
  d.node("Reshape", {"x", "far_zero"}, {"y"}, {}, "r_zero");
  EXPECT_TRUE(contains(error_of([&] { d.infer(); }), "node 'r_zero'"));

  GraphBuilder e;
  e.input("x", DType::Float32, DimVector{2, 3});
  e.ints("five", {5, -1});
  e.node("Reshape", {"x", "five"}, {"y"}, {}, "r_indivisible");
  EXPECT_TRUE(contains(error_of([&] { e.infer(); }), "node 'r_indivisible'"));

  GraphBuilder f;
  f.input("x", DType::Float32, DimVector{2, 3});
  f.input("shape32", DType::Int32, DimVector{2});
  f.node("Reshape", {"x", "shape32"}, {"y"}, {}, "r_dtype");
  EXPECT_TRUE(contains(error_of([&] { f.infer(); }), "must be int64"));
}

TEST(ShapeOps, ReshapeAllowZeroFromOpset14) {
  GraphBuilder copy(13);
  copy.input("x", DType::Float32, DimVector{2, 3});
  copy.ints("shape", {0, 3});
  copy.node("Reshape", {"x", "shape"}, {"y"}, {I("allowzero", 1)});  // ignored before 14
  copy.infer();
  EXPECT_EQ(copy.dims("y"), (DimVector{2, 3}));

  GraphBuilder literal(14);
  literal.input("x", DType::Float32, DimVector{0, 3});
  literal.ints("shape", {3, 0});
  literal.node("Reshape", {"x", "shape"}, {"y"}, {I("allowzero", 1)});
  literal.infer();
  EXPECT_EQ(literal.dims("y"), (DimVector{3, 0}));

  GraphBuilder both(14);
  both.input("x", DType::Float32, DimVector{0, 3});
  both.ints("shape", {0, -1});
  both.node("Reshape", {"x", "shape"}, {"y"}, {I("allowzero", 1)}, "r");
  EXPECT_TRUE(contains(error_of([&] { both.infer(); }), "allowzero"));
}

TEST(ShapeOps, ReshapeBeforeOpset5UsesTheAttribute) {
  GraphBuilder b(4);
  b.input("x", DType::Float32, DimVector{batch, 6});
  b.node("Reshape", {"x"}, {"y"}, {Is("shape", {0, 2, 3})});
  b.infer();
  EXPECT_EQ(b.dims("y"), (DimVector{batch, 2, 3}));
}

TEST(ShapeOps, ReshapeWithUnknownsStaysUsable) {
  GraphBuilder b;
  b.input("x", DType::Float32, std::nullopt);
  b.input("dyn_shape", DType::Int64, DimVector{3});
  b.ints("shape", {-1, 64});
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.input("z", DType::Float32, DimVector{batch, 8});
  b.node("Reshape", {"z", "dyn_shape"}, {"w"});
  b.infer();
  DimVector y = b.dims("y");
  ASSERT_EQ(y.size(), 2u);
  EXPECT_FALSE(y[0].is_constant());
  EXPECT_EQ(y[1], Dim(64));
  EXPECT_EQ(b.type("w").rank(), 3);
}

TEST(ShapeOps, ReshapePassesShapeValues) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, seq});
  b.ints("idx1", {1});
  b.ints("to_scalar", {}, std::vector<int64_t>{0});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "idx1"}, {"s1"});
  b.node("Reshape", {"s1", "to_scalar"}, {"seq_scalar"});
  b.infer();
  EXPECT_EQ(b.type("seq_scalar"), TensorType(DType::Int64, DimVector{}));
  EXPECT_EQ(b.values("seq_scalar"), DimVector{seq});
}

// ------------------------------------------------------------------ Transpose / Flatten

TEST(ShapeOps, TransposeDefaultReversesAndChecksPerm) {
  GraphBuilder b;
  b.input("x", DType::Float16, DimVector{batch, seq, 4});
  b.node("Transpose", {"x"}, {"y"});
  b.node("Transpose", {"x"}, {"z"}, {Is("perm", {1, 0, 2})});
  b.infer();
  EXPECT_EQ(b.type("y"), TensorType(DType::Float16, DimVector{4, seq, batch}));
  EXPECT_EQ(b.dims("z"), (DimVector{seq, batch, 4}));

  GraphBuilder bad;
  bad.input("x", DType::Float32, DimVector{2, 3, 4});
  bad.node("Transpose", {"x"}, {"y"}, {Is("perm", {0, 0, 1})}, "t_bad");
  std::string msg = error_of([&] { bad.infer(); });
  EXPECT_TRUE(contains(msg, "node 't_bad'")) << msg;
  EXPECT_TRUE(contains(msg, "permutation")) << msg;

  GraphBuilder short_perm;
  short_perm.input("x", DType::Float32, DimVector{2, 3, 4});
  short_perm.node("Transpose", {"x"}, {"y"}, {Is("perm", {1, 0})}, "t_short");
  EXPECT_TRUE(contains(error_of([&] { short_perm.infer(); }), "node 't_short'"));

  GraphBuilder unknown;
  unknown.input("x", DType::Float32, std::nullopt);
  unknown.node("Transpose", {"x"}, {"y"}, {Is("perm", {0, 2, 1})});
  unknown.node("Transpose", {"x"}, {"z"});
  unknown.infer();
  EXPECT_EQ(unknown.type("y").rank(), 3);
  EXPECT_FALSE(unknown.type("z").has_rank());
}

TEST(ShapeOps, FlattenAxes) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, 3, 4, 5});
  b.node("Flatten", {"x"}, {"f1"});
  b.node("Flatten", {"x"}, {"f2"}, {I("axis", 2)});
  b.node("Flatten", {"x"}, {"f0"}, {I("axis", 0)});
  b.node("Flatten", {"x"}, {"fneg"}, {I("axis", -1)});
  b.node("Flatten", {"x"}, {"f4"}, {I("axis", 4)});
  b.infer();
  EXPECT_EQ(b.dims("f1"), (DimVector{batch, 60}));
  EXPECT_EQ(b.dims("f2"), (DimVector{batch * 3, 20}));
  EXPECT_EQ(b.dims("f0"), (DimVector{1, batch * 60}));
  EXPECT_EQ(b.dims("fneg"), (DimVector{batch * 12, 5}));
  EXPECT_EQ(b.dims("f4"), (DimVector{batch * 60, 1}));

  GraphBuilder bad;
  bad.input("x", DType::Float32, DimVector{2, 3});
  bad.node("Flatten", {"x"}, {"y"}, {I("axis", 3)}, "flat");
  EXPECT_TRUE(contains(error_of([&] { bad.infer(); }), "node 'flat'"));
}

// ------------------------------------------------------------------ Squeeze / Unsqueeze

TEST(ShapeOps, SqueezeUnsqueezeAxesAttributeBeforeOpset13) {
  GraphBuilder b(11);
  b.input("x", DType::Float32, DimVector{batch, 1, seq, 1});
  b.node("Squeeze", {"x"}, {"sq"}, {Is("axes", {1, -1})});
  b.node("Unsqueeze", {"sq"}, {"un"}, {Is("axes", {0, -1})});
  b.infer();
  EXPECT_EQ(b.dims("sq"), (DimVector{batch, seq}));
  EXPECT_EQ(b.dims("un"), (DimVector{1, batch, seq, 1}));

  GraphBuilder wrong(11);  // an axes input is opset-13 syntax
  wrong.input("x", DType::Float32, DimVector{1, 2});
  wrong.ints("axes", {0});
  wrong.node("Squeeze", {"x", "axes"}, {"y"}, {}, "sq11");
  std::string msg = error_of([&] { wrong.infer(); });
  EXPECT_TRUE(contains(msg, "node 'sq11'")) << msg;
  EXPECT_TRUE(contains(msg, "opset 13")) << msg;
}

TEST(ShapeOps, SqueezeUnsqueezeAxesInputFromOpset13) {
  GraphBuilder b(13);
  b.input("x", DType::Float32, DimVector{batch, 1, seq, 1});
  b.ints("axes", {1, 3});
  b.ints("front_back", {0, 3});
  b.node("Squeeze", {"x", "axes"}, {"sq"});
  b.node("Unsqueeze", {"sq", "front_back"}, {"un"});
  b.infer();
  EXPECT_EQ(b.dims("sq"), (DimVector{batch, seq}));
  EXPECT_EQ(b.dims("un"), (DimVector{1, batch, seq, 1}));

  GraphBuilder wrong(13);
  wrong.input("x", DType::Float32, DimVector{1, 2});
  wrong.node("Unsqueeze", {"x"}, {"y"}, {Is("axes", {0})}, "un13");
  EXPECT_TRUE(contains(error_of([&] { wrong.infer(); }), "node 'un13'"));
}

TEST(ShapeOps, SqueezeChecksSizesAndWarnsOnSymbolicDims) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{1, batch, 1, 3});
  b.node("Squeeze", {"x"}, {"y"});
  InferResult r = b.infer();
  EXPECT_EQ(b.dims("y"), (DimVector{batch, 3}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_TRUE(contains(r.warnings[0], "batch"));

  GraphBuilder bad;
  bad.input("x", DType::Float32, DimVector{2, 3});
  bad.ints("axes", {1});
  bad.node("Squeeze", {"x", "axes"}, {"y"}, {}, "sq_bad");
  std::string msg = error_of([&] { bad.infer(); });
  EXPECT_TRUE(contains(msg, "node 'sq_bad'")) << msg;
  EXPECT_TRUE(contains(msg, "size is 3")) << msg;

  GraphBuilder repeated;
  repeated.input("x", DType::Float32, DimVector{1, 3, 1});
  repeated.ints("axes", {0, 2, 1});
  repeated.node("Unsqueeze", {"x", "axes"}, {"y"});
  repeated.ints("dup", {0, -3});
  repeated.node("Squeeze", {"x", "dup"}, {"z"}, {}, "sq_dup");
  EXPECT_TRUE(contains(error_of([&] { repeated.infer(); }), "repeated"));
}

TEST(ShapeOps, SqueezeUnsqueezeCarryValuesAndUnknowns) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, seq});
  b.input("y", DType::Float32, std::nullopt);
  b.input("dyn_axes", DType::Int64, DimVector{1});
  b.ints("axes0", {0});
  b.ints("idx1", {1});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "idx1"}, {"seq1"});        // [seq], 1-D
  b.node("Squeeze", {"seq1", "axes0"}, {"seq0"});   // scalar seq
  b.node("Unsqueeze", {"seq0", "axes0"}, {"back"}); // [seq] again
  b.node("Unsqueeze", {"y", "axes0"}, {"yu"});
  b.node("Squeeze", {"x", "dyn_axes"}, {"xs"});
  b.infer();
  EXPECT_EQ(b.type("seq0"), TensorType(DType::Int64, DimVector{}));
  EXPECT_EQ(b.values("seq0"), DimVector{seq});
  EXPECT_EQ(b.type("back"), TensorType(DType::Int64, DimVector{1}));
  EXPECT_EQ(b.values("back"), DimVector{seq});
  EXPECT_FALSE(b.type("yu").has_rank());
  EXPECT_EQ(b.type("xs").rank(), 1);
}

// ------------------------------------------------------------------ ConstantOfShape

// User story 1: Shape(x) -> Gather(0) -> Unsqueeze -> Concat -> ConstantOfShape driven by
// an anonymous dim that later meets a literal 1 must infer, not fail.
TEST(ShapeOps, AnonymousDimThroughConstantOfShapeMeetsLiteralOne) {
  for (const Dim& anon : {Dim::fresh(), Dim::symbol("unk__3")}) {
    GraphBuilder b;
    b.input("x", DType::Float32, DimVector{anon, 4});
    b.input("ones", DType::Float32, DimVector{1, 4});
    b.input("w", DType::Float32, DimVector{1, 4, 4});
    b.scalar("zero", 0);
    b.ints("axes0", {0});
    b.ints("one", {1});
    b.ints("four", {4});
    b.node("Shape", {"x"}, {"s"});
    b.node("Gather", {"s", "zero"}, {"n"});
    b.node("Unsqueeze", {"n", "axes0"}, {"n1"});
    b.node("Concat", {"n1", "four"}, {"shape"}, {I("axis", 0)});
    b.node("ConstantOfShape", {"shape"}, {"c"}, {}, "/encoder/layers.0/self_attn/ConstantOfShape");
    b.node("Concat", {"c", "ones"}, {"joined"}, {I("axis", 0)});
    b.node("Concat", {"c", "ones"}, {"side"}, {I("axis", 1)});
    b.node("Expand", {"c", "one"}, {"expanded"});
    b.node("MatMul", {"c", "w"}, {"mm"});
    // The file's value_info claims [1, 4] for c: a warning naming the node, not an error.
    DeclaredTypes declared{{"c", TensorType(DType::Float32, DimVector{1, 4})},
                           {"mm", TensorType(DType::Float32, DimVector{Dim::symbol("unk__7"), Dim::symbol("unk__8"), 4})}};
    InferResult r;
    ASSERT_NO_THROW(r = b.infer(declared));
    EXPECT_EQ(b.values("shape"), (DimVector{anon, 4}));
    EXPECT_EQ(b.type("c"), TensorType(DType::Float32, DimVector{anon, 4}));
    EXPECT_EQ(b.dims("joined"), (DimVector{anon + 1, 4}));
    EXPECT_EQ(b.dims("side"), (DimVector{1, 8}));
    EXPECT_EQ(b.dims("expanded"), (DimVector{anon, 4}));
    EXPECT_EQ(b.dims("mm"), (DimVector{1, anon, 4}));
    ASSERT_EQ(r.warnings.size(), 1u);
    EXPECT_TRUE(contains(r.warnings[0], "/encoder/layers.0/self_attn/ConstantOfShape")) << r.warnings[0];
  }
}

TEST(ShapeOps, ConstantOfShapeTypesAndValues) {
  GraphBuilder b;
  b.ints("shape", {2, 3});
  b.ints("len3", {3});
  b.ints("empty", {}, std::vector<int64_t>{0});
  b.input("dyn", DType::Int64, DimVector{2});
  b.node("ConstantOfShape", {"shape"}, {"zeros"});
  b.node("ConstantOfShape", {"len3"}, {"ones"},
         {Attribute::make_tensor("value", Tensor::from_vector<int64_t>({1}, {1}))});
  b.node("ConstantOfShape", {"empty"}, {"scalar"},
         {Attribute::make_tensor("value", Tensor::from_vector<int32_t>({1}, {5}))});
  b.node("ConstantOfShape", {"dyn"}, {"d"});
  b.infer();
  EXPECT_EQ(b.type("zeros"), TensorType(DType::Float32, DimVector{2, 3}));
  EXPECT_FALSE(b.values("zeros"));
  EXPECT_EQ(b.type("ones"), TensorType(DType::Int64, DimVector{3}));
  EXPECT_EQ(b.values("ones"), (DimVector{1, 1, 1}));
  EXPECT_EQ(b.type("scalar"), TensorType(DType::Int32, DimVector{}));
  EXPECT_EQ(b.values("scalar"), DimVector{5});
  EXPECT_EQ(b.type("d").rank(), 2);

  GraphBuilder bad;
  bad.ints("shape", {2, -3});
  bad.node("ConstantOfShape", {"shape"}, {"y"}, {}, "cos");
  EXPECT_TRUE(contains(error_of([&] { bad.infer(); }), "node 'cos'"));
}

// ------------------------------------------------------------------ Range / Constant

// GPT-2: positions = Range(0, Shape(ids)[1], 1) -> Unsqueeze(0).
TEST(ShapeOps, RangeOverASymbolicLimit) {
  GraphBuilder b;
  b.input("ids", DType::Int64, DimVector{batch, seq});
  b.scalar("zero", 0);
  b.scalar("one", 1);
  b.ints("axes0", {0});
  b.node("Shape", {"ids"}, {"s"});
  b.node("Gather", {"s", "one"}, {"len"});
  b.node("Range", {"zero", "len", "one"}, {"positions"});
  b.node("Unsqueeze", {"positions", "axes0"}, {"pos2d"});
  b.infer();
  EXPECT_EQ(b.type("positions"), TensorType(DType::Int64, DimVector{seq}));
  EXPECT_FALSE(b.values("positions"));
  EXPECT_EQ(b.dims("pos2d"), (DimVector{1, seq}));
}

TEST(ShapeOps, RangeLengths) {
  GraphBuilder b;
  b.scalar("zero", 0);
  b.scalar("five", 5);
  b.scalar("two", 2);
  b.scalar("minus2", -2);
  b.floats("f0", {0.f}, {});
  b.floats("f1", {1.f}, {});
  b.floats("fstep", {0.25f}, {});
  b.input("past", DType::Int64, DimVector{});
  b.input("total", DType::Int64, DimVector{});
  b.g.value("past")->known_values = DimVector{S("past")};
  b.g.value("total")->known_values = DimVector{S("past") + seq};
  b.node("Range", {"zero", "five", "two"}, {"evens"});
  b.node("Range", {"five", "zero", "minus2"}, {"down"});
  b.node("Range", {"five", "zero", "two"}, {"empty"});
  b.node("Range", {"f0", "f1", "fstep"}, {"quarters"});
  b.node("Range", {"past", "total", "two"}, {"sym"});
  b.infer();
  EXPECT_EQ(b.values("evens"), (DimVector{0, 2, 4}));
  EXPECT_EQ(b.values("down"), (DimVector{5, 3, 1}));
  EXPECT_EQ(b.dims("empty"), DimVector{0});
  EXPECT_EQ(b.type("quarters"), TensorType(DType::Float32, DimVector{4}));
  EXPECT_EQ(b.dims("sym"), DimVector{Dim::floor_div(seq + 1, 2)});

  GraphBuilder zero;
  zero.scalar("a", 0);
  zero.scalar("d", 0);
  zero.node("Range", {"a", "a", "d"}, {"y"}, {}, "range0");
  EXPECT_TRUE(contains(error_of([&] { zero.infer(); }), "node 'range0'"));

  GraphBuilder inf;
  inf.floats("a", {0.f}, {});
  inf.floats("l", {std::numeric_limits<float>::infinity()}, {});
  inf.floats("d", {1.f}, {});
  inf.node("Range", {"a", "l", "d"}, {"y"}, {}, "range_inf");
  EXPECT_TRUE(contains(error_of([&] { inf.infer(); }), "node 'range_inf'"));

  GraphBuilder mixed;
  mixed.scalar("a", 0);
  mixed.floats("f", {1.f}, {});
  mixed.node("Range", {"a", "f", "a"}, {"y"}, {}, "range_types");
  EXPECT_TRUE(contains(error_of([&] { mixed.infer(); }), "float32"));
}

TEST(ShapeOps, ConstantAttributes) {
  GraphBuilder b;
  b.node("Constant", {}, {"t"}, {Attribute::make_tensor("value", Tensor::from_vector<int64_t>({2}, {0, -1}))});
  b.node("Constant", {}, {"i"}, {I("value_int", 7)});
  b.node("Constant", {}, {"is"}, {Is("value_ints", {1, 2, 3})});
  b.node("Constant", {}, {"f"}, {Attribute::make_float("value_float", 0.5f)});
  b.node("Constant", {}, {"fs"}, {Attribute::make_floats("value_floats", {1.f, 2.f})});
  b.node("Constant", {}, {"big"}, {Attribute::make_tensor("value", Tensor(DType::Float32, {3, 4}))});
  b.infer();
  EXPECT_EQ(b.type("t"), TensorType(DType::Int64, DimVector{2}));
  EXPECT_EQ(b.values("t"), (DimVector{0, -1}));
  EXPECT_EQ(b.type("i"), TensorType(DType::Int64, DimVector{}));
  EXPECT_EQ(b.values("i"), DimVector{7});
  EXPECT_EQ(b.values("is"), (DimVector{1, 2, 3}));
  EXPECT_EQ(b.type("f"), TensorType(DType::Float32, DimVector{}));
  EXPECT_EQ(b.type("fs"), TensorType(DType::Float32, DimVector{2}));
  EXPECT_FALSE(b.values("fs"));
  EXPECT_EQ(b.type("big"), TensorType(DType::Float32, DimVector{3, 4}));

  GraphBuilder none;
  none.node("Constant", {}, {"y"}, {}, "const");
  EXPECT_TRUE(contains(error_of([&] { none.infer(); }), "node 'const'"));
}

// Constant nodes feed shape math the way initializers do (exporters emit both).
TEST(ShapeOps, ConstantNodesDriveReshape) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, seq, 768});
  b.node("Constant", {}, {"shape"}, {Attribute::make_tensor("value", Tensor::from_vector<int64_t>({4}, {0, 0, 12, 64}))});
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.infer();
  EXPECT_EQ(b.dims("y"), (DimVector{batch, seq, 12, 64}));
}

// ------------------------------------------------------------------ across ops

TEST(ShapeOps, PerAxisQuantizationFollowsTheAxis) {
  GraphBuilder b;
  TensorType q(DType::Int8, DimVector{4, 8});
  auto params = std::make_shared<QuantParams>();
  params->scales = std::vector<float>(8, 0.1f);
  params->axis = 1;
  q.quant = params;
  b.g.add_input("w", q);
  b.ints("axes0", {0});
  b.node("Transpose", {"w"}, {"wt"});
  b.node("Unsqueeze", {"w", "axes0"}, {"wu"});
  b.infer();
  ASSERT_TRUE(b.type("wt").quant);
  EXPECT_EQ(b.type("wt").quant->axis, 0);
  ASSERT_TRUE(b.type("wu").quant);
  EXPECT_EQ(b.type("wu").quant->axis, 2);
}

TEST(ShapeOps, ReinferenceDropsStaleValues) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, seq});
  b.node("Shape", {"x"}, {"s"});
  b.infer();
  ASSERT_TRUE(b.values("s"));
  b.g.value("x")->type = TensorType(DType::Float32, std::nullopt);
  b.infer();
  EXPECT_FALSE(b.values("s"));
}

TEST(ShapeOps, EveryShapeOpSurvivesUnknownRank) {
  GraphBuilder b;
  b.input("u", DType::Float32, std::nullopt);
  b.input("ui", DType::Int64, std::nullopt);
  b.ints("axes0", {0});
  b.ints("shape", {2, -1});
  b.node("Shape", {"u"}, {"o1"});
  b.node("Reshape", {"u", "shape"}, {"o2"});
  b.node("Reshape", {"u", "ui"}, {"o3"});
  b.node("Unsqueeze", {"u", "axes0"}, {"o4"});
  b.node("Squeeze", {"u"}, {"o5"});
  b.node("Concat", {"u", "u"}, {"o6"}, {I("axis", 0)});
  b.node("Split", {"u"}, {"o7", "o8"});
  b.node("Slice", {"u", "axes0", "axes0"}, {"o9"});
  b.node("Gather", {"u", "axes0"}, {"o10"});
  b.node("Expand", {"u", "ui"}, {"o11"});
  b.node("Tile", {"u", "ui"}, {"o12"});
  b.node("ConstantOfShape", {"ui"}, {"o13"});
  b.node("Flatten", {"u"}, {"o14"});
  b.node("Transpose", {"u"}, {"o15"});
  b.node("Pad", {"u", "ui"}, {"o16"});
  b.node("Size", {"u"}, {"o17"});
  b.node("GatherElements", {"u", "ui"}, {"o18"});
  ASSERT_NO_THROW(b.infer());
  for (int i = 1; i <= 18; ++i) {
    std::string name = "o";
    name += std::to_string(i);
    EXPECT_TRUE(b.type(name).known()) << name;
  }
  EXPECT_EQ(b.dims("o2")[0], Dim(2));
}

}  // namespace
}  // namespace octet
