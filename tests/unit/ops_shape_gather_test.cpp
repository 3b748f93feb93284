// Type and shape inference of Gather, GatherElements, Expand and Tile.
#include <gtest/gtest.h>

#include "ops_shape_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;

const Dim batch = S("batch"), seq = S("seq");

// ------------------------------------------------------------------ Gather

TEST(ShapeOps, GatherScalarIndexOnShapeGivesAScalarValue) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, seq, 768});
  b.scalar("one", 1);
  b.ints("last", {-1});
  b.ints("pair", {2, 0}, std::vector<int64_t>{2});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "one"}, {"seq0"});
  b.node("Gather", {"s", "last"}, {"hidden"});
  b.node("Gather", {"s", "pair"}, {"swapped"});
  b.infer();
  EXPECT_EQ(b.type("seq0"), TensorType(DType::Int64, DimVector{}));
  EXPECT_EQ(b.values("seq0"), DimVector{seq});
  EXPECT_EQ(b.type("hidden"), TensorType(DType::Int64, DimVector{1}));
  EXPECT_EQ(b.values("hidden"), DimVector{768});
  EXPECT_EQ(b.values("swapped"), (DimVector{768, batch}));
}

TEST(ShapeOps, GatherEmbeddingAndAxes) {
  GraphBuilder b;
  b.input("wte", DType::Float32, DimVector{1000, 64});
  b.input("ids", DType::Int64, DimVector{batch, seq});
  b.input("x", DType::Float32, DimVector{batch, seq, 64});
  b.scalar("zero", 0);
  b.ints("cols", {0, 5, 7}, std::vector<int64_t>{3});
  b.node("Gather", {"wte", "ids"}, {"emb"});
  b.node("Gather", {"x", "zero"}, {"first"}, {I("axis", 1)});  // x[:, 0]
  b.node("Gather", {"x", "cols"}, {"picked"}, {I("axis", -1)});
  b.infer();
  EXPECT_EQ(b.type("emb"), TensorType(DType::Float32, DimVector{batch, seq, 64}));
  EXPECT_EQ(b.dims("first"), (DimVector{batch, 64}));
  EXPECT_EQ(b.dims("picked"), (DimVector{batch, seq, 3}));
}

TEST(ShapeOps, GatherErrorsAndUnknowns) {
  GraphBuilder range;
  range.input("x", DType::Float32, DimVector{batch, 4});
  range.scalar("four", 4);
  range.node("Gather", {"x", "four"}, {"y"}, {I("axis", 1)}, "g_range");
  std::string msg = error_of([&] { range.infer(); });
  EXPECT_TRUE(contains(msg, "node 'g_range' (Gather)")) << msg;
  EXPECT_TRUE(contains(msg, "index 4")) << msg;

  GraphBuilder idx_type;
  idx_type.input("x", DType::Float32, DimVector{4});
  idx_type.input("i", DType::Float32, DimVector{2});
  idx_type.node("Gather", {"x", "i"}, {"y"}, {}, "g_type");
  EXPECT_TRUE(contains(error_of([&] { idx_type.infer(); }), "int32 or int64"));

  GraphBuilder unknown;
  unknown.input("x", DType::Float32, std::nullopt);
  unknown.input("i", DType::Int64, DimVector{batch});
  unknown.node("Gather", {"x", "i"}, {"y"});
  unknown.infer();
  EXPECT_FALSE(unknown.type("y").has_rank());
  EXPECT_EQ(unknown.type("y").dtype, DType::Float32);
}

TEST(ShapeOps, GatherElementsTakesTheIndicesShape) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, 10});
  b.input("i", DType::Int64, DimVector{batch, 3});
  b.node("GatherElements", {"x", "i"}, {"y"}, {I("axis", 1)});
  b.infer();
  EXPECT_EQ(b.type("y"), TensorType(DType::Float32, DimVector{batch, 3}));

  GraphBuilder bad;
  bad.input("x", DType::Float32, DimVector{batch, 10});
  bad.input("i", DType::Int64, DimVector{3});
  bad.node("GatherElements", {"x", "i"}, {"y"}, {}, "ge");
  EXPECT_TRUE(contains(error_of([&] { bad.infer(); }), "node 'ge'"));
}

// ------------------------------------------------------------------ Expand / Tile

TEST(ShapeOps, ExpandBroadcastsWithShapeValues) {
  GraphBuilder b;
  b.input("mask", DType::Float32, DimVector{batch, 1, 1, seq});
  b.input("scores", DType::Float32, DimVector{batch, 12, seq, seq});
  b.input("row", DType::Float32, DimVector{1, seq});
  b.ints("three", {3, 1, 1});
  b.node("Shape", {"scores"}, {"s"});
  b.node("Expand", {"mask", "s"}, {"m"});
  b.node("Expand", {"row", "three"}, {"r"});
  b.infer();
  EXPECT_EQ(b.dims("m"), (DimVector{batch, 12, seq, seq}));
  EXPECT_EQ(b.dims("r"), (DimVector{3, 1, seq}));

  GraphBuilder bad;
  bad.input("x", DType::Float32, DimVector{3});
  bad.ints("shape", {4});
  bad.node("Expand", {"x", "shape"}, {"y"}, {}, "exp");
  std::string msg = error_of([&] { bad.infer(); });
  EXPECT_TRUE(contains(msg, "node 'exp'")) << msg;
}

TEST(ShapeOps, ExpandWithUnknownShapeValues) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{1, 4, seq});
  b.input("shape", DType::Int64, DimVector{4});
  b.node("Expand", {"x", "shape"}, {"y"});
  b.scalar("seven", 7);
  b.ints("len3", {3});
  b.node("Expand", {"seven", "len3"}, {"sevens"});
  b.infer();
  DimVector y = b.dims("y");
  ASSERT_EQ(y.size(), 4u);
  EXPECT_FALSE(y[0].is_constant());
  EXPECT_FALSE(y[1].is_constant());
  EXPECT_EQ(y[2], Dim(4));
  // At least seq: max(seq, the unknown target), which is seq when the target is 1.
  auto others = y[3].symbols();
  ASSERT_EQ(others.erase("seq"), 1u);
  ASSERT_EQ(others.size(), 1u);
  EXPECT_EQ(y[3].evaluate({{"seq", 5}, {*others.begin(), 1}}), 5);
  EXPECT_EQ(b.values("sevens"), (DimVector{7, 7, 7}));
}

TEST(ShapeOps, TileMultipliesDims) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, 3});
  b.ints("reps", {2, 1});
  b.ints("twice", {2});
  b.node("Tile", {"x", "reps"}, {"y"});
  b.node("Shape", {"x"}, {"s"});
  b.node("Tile", {"s", "twice"}, {"ss"});
  b.infer();
  EXPECT_EQ(b.dims("y"), (DimVector{batch * 2, 3}));
  EXPECT_EQ(b.values("ss"), (DimVector{batch, 3, batch, 3}));

  GraphBuilder bad;
  bad.input("x", DType::Float32, DimVector{2, 3});
  bad.ints("reps", {2});
  bad.node("Tile", {"x", "reps"}, {"y"}, {}, "tile");
  EXPECT_TRUE(contains(error_of([&] { bad.infer(); }), "node 'tile'"));
}

}  // namespace
}  // namespace octet
