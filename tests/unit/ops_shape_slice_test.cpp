// Type and shape inference of Concat, Split, Slice and Pad.
#include <gtest/gtest.h>

#include "ops_shape_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;

const Dim batch = S("batch"), seq = S("seq");

// ------------------------------------------------------------------ Concat

TEST(ShapeOps, ConcatSumsTheAxisAndUnifiesTheRest) {
  GraphBuilder b;
  b.input("past", DType::Float32, DimVector{batch, 12, S("past"), 64});
  b.input("cur", DType::Float32, DimVector{batch, 12, seq, 64});
  b.node("Concat", {"past", "cur"}, {"kv"}, {I("axis", -2)});
  b.input("a", DType::Float32, DimVector{Dim::fresh(), 4});
  b.input("c", DType::Float32, DimVector{1, 4});
  b.node("Concat", {"a", "c"}, {"ac"}, {I("axis", 1)});
  b.infer();
  EXPECT_EQ(b.dims("kv"), (DimVector{batch, 12, S("past") + seq, 64}));
  EXPECT_EQ(b.dims("ac"), (DimVector{1, 8}));  // the anonymous dim meets a literal 1
}

TEST(ShapeOps, ConcatErrors) {
  GraphBuilder dims;
  dims.input("a", DType::Float32, DimVector{2, 3});
  dims.input("b", DType::Float32, DimVector{4, 3});
  dims.node("Concat", {"a", "b"}, {"y"}, {I("axis", 1)}, "cat_dims");
  std::string msg = error_of([&] { dims.infer(); });
  EXPECT_TRUE(contains(msg, "node 'cat_dims' (Concat)")) << msg;
  EXPECT_TRUE(contains(msg, "2 vs 4")) << msg;

  GraphBuilder types;
  types.input("a", DType::Float32, DimVector{2});
  types.input("b", DType::Float16, DimVector{2});
  types.node("Concat", {"a", "b"}, {"y"}, {I("axis", 0)}, "cat_types");
  EXPECT_TRUE(contains(error_of([&] { types.infer(); }), "float16"));

  GraphBuilder rank;
  rank.input("a", DType::Float32, DimVector{2});
  rank.input("b", DType::Float32, DimVector{2, 1});
  rank.node("Concat", {"a", "b"}, {"y"}, {I("axis", 0)}, "cat_rank");
  EXPECT_TRUE(contains(error_of([&] { rank.infer(); }), "node 'cat_rank'"));

  GraphBuilder no_axis;
  no_axis.input("a", DType::Float32, DimVector{2});
  no_axis.node("Concat", {"a"}, {"y"}, {}, "cat_axis");
  EXPECT_TRUE(contains(error_of([&] { no_axis.infer(); }), "axis"));
}

TEST(ShapeOps, ConcatWithUnknownRankInput) {
  GraphBuilder b;
  b.input("a", DType::Float32, std::nullopt);
  b.input("c", DType::Float32, DimVector{batch, 4});
  b.node("Concat", {"a", "c"}, {"y"}, {I("axis", 1)});
  b.node("Concat", {"a", "a"}, {"z"}, {I("axis", 1)});
  b.infer();
  DimVector y = b.dims("y");
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[0], batch);
  EXPECT_FALSE(y[1].is_constant());
  EXPECT_FALSE(b.type("z").has_rank());
}

// ------------------------------------------------------------------ Split

TEST(ShapeOps, SplitByInputAttributeAndEqually) {
  GraphBuilder b(13);
  b.input("qkv", DType::Float32, DimVector{batch, seq, 192});
  b.ints("sizes", {64, 64, 64});
  b.node("Split", {"qkv", "sizes"}, {"q", "k", "v"}, {I("axis", 2)});
  b.node("Split", {"qkv"}, {"h0", "h1"}, {I("axis", -1)});
  b.node("Split", {"qkv"}, {"s0", "s1"}, {I("axis", 1)});
  b.infer();
  EXPECT_EQ(b.dims("k"), (DimVector{batch, seq, 64}));
  EXPECT_EQ(b.dims("h1"), (DimVector{batch, seq, 96}));
  EXPECT_EQ(b.dims("s0"), (DimVector{batch, Dim::floor_div(seq, 2), 192}));

  GraphBuilder old(11);
  old.input("x", DType::Float32, DimVector{10, 3});
  old.node("Split", {"x"}, {"a", "b"}, {Is("split", {4, 6})});
  old.infer();
  EXPECT_EQ(old.dims("b"), (DimVector{6, 3}));
}

TEST(ShapeOps, SplitNumOutputsFromOpset18) {
  GraphBuilder b(18);
  b.input("x", DType::Float32, DimVector{10});
  b.node("Split", {"x"}, {"a", "b", "c"}, {I("num_outputs", 3)});
  b.infer();
  EXPECT_EQ(b.dims("a"), DimVector{4});
  EXPECT_EQ(b.dims("c"), DimVector{2});

  GraphBuilder mismatch(18);
  mismatch.input("x", DType::Float32, DimVector{10});
  mismatch.node("Split", {"x"}, {"a", "b"}, {I("num_outputs", 3)}, "split_n");
  EXPECT_TRUE(contains(error_of([&] { mismatch.infer(); }), "node 'split_n'"));
}

TEST(ShapeOps, SplitErrorsAndValues) {
  GraphBuilder sum;
  sum.input("x", DType::Float32, DimVector{batch, 10});
  sum.ints("sizes", {3, 3});
  sum.node("Split", {"x", "sizes"}, {"a", "b"}, {I("axis", 1)}, "split_sum");
  std::string msg = error_of([&] { sum.infer(); });
  EXPECT_TRUE(contains(msg, "node 'split_sum'")) << msg;
  EXPECT_TRUE(contains(msg, "sums to 6")) << msg;

  GraphBuilder uneven;
  uneven.input("x", DType::Float32, DimVector{10});
  uneven.node("Split", {"x"}, {"a", "b", "c"}, {}, "split_eq");
  EXPECT_TRUE(contains(error_of([&] { uneven.infer(); }), "equal parts"));

  GraphBuilder values;
  values.input("x", DType::Float32, DimVector{batch, seq, 768});
  values.ints("sizes", {1, 2});
  values.node("Shape", {"x"}, {"s"});
  values.node("Split", {"s", "sizes"}, {"head", "tail"});
  values.infer();
  EXPECT_EQ(values.values("head"), DimVector{batch});
  EXPECT_EQ(values.values("tail"), (DimVector{seq, 768}));
}

// ------------------------------------------------------------------ Slice

// Slices axis 1 of x[batch, seq] (or whatever `x` is) with constant bounds.
DimVector slice_axis1(const DimVector& x, int64_t start, int64_t end, int64_t step = 1) {
  GraphBuilder b;
  b.input("x", DType::Float32, x);
  b.ints("starts", {start});
  b.ints("ends", {end});
  b.ints("axes", {1});
  b.ints("steps", {step});
  b.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"y"});
  b.infer();
  return b.dims("y");
}

TEST(ShapeOps, SliceOnSymbolicDimsIsExact) {
  const DimVector x{batch, seq};
  EXPECT_EQ(slice_axis1(x, 0, kMax), (DimVector{batch, seq}));
  EXPECT_EQ(slice_axis1(x, 1, kMax), (DimVector{batch, seq - 1}));
  EXPECT_EQ(slice_axis1(x, -1, kMax), (DimVector{batch, 1}));
  EXPECT_EQ(slice_axis1(x, 0, 5), (DimVector{batch, Dim::min(seq, 5)}));
  EXPECT_EQ(slice_axis1(x, 0, -1), (DimVector{batch, seq - 1}));
  EXPECT_EQ(slice_axis1(x, 2, kMax), (DimVector{batch, seq - 2}));
  EXPECT_EQ(slice_axis1(x, 0, std::numeric_limits<int32_t>::max()), (DimVector{batch, seq}));
  EXPECT_EQ(slice_axis1(x, 0, kMax, 2), (DimVector{batch, Dim::floor_div(seq + 1, 2)}));
  EXPECT_EQ(slice_axis1(x, kMax, kMin, -1), (DimVector{batch, seq}));
  EXPECT_EQ(slice_axis1(x, -1, kMin, -1), (DimVector{batch, seq}));
  EXPECT_EQ(slice_axis1(x, 3, 3), (DimVector{batch, 0}));
  // floor_div keeps step-2 slices exact when bound: seq = 7 -> 4 elements.
  EXPECT_EQ(slice_axis1(x, 0, kMax, 2)[1].evaluate({{"seq", 7}}), 4);
}

TEST(ShapeOps, SliceOnKnownDimsClampsPerSpec) {
  const DimVector x{batch, 10};
  EXPECT_EQ(slice_axis1(x, 2, 100)[1], Dim(8));
  EXPECT_EQ(slice_axis1(x, -100, 3)[1], Dim(3));
  EXPECT_EQ(slice_axis1(x, 5, 1)[1], Dim(0));
  EXPECT_EQ(slice_axis1(x, kMax, kMin, -1)[1], Dim(10));
  EXPECT_EQ(slice_axis1(x, 9, 0, -2)[1], Dim(5));
  EXPECT_EQ(slice_axis1(x, -1, -4, -1)[1], Dim(3));
  EXPECT_EQ(slice_axis1(x, kMax, kMin, kMin)[1], Dim(1));
  EXPECT_EQ(slice_axis1(x, 0, kMax, kMax)[1], Dim(1));
  EXPECT_EQ(slice_axis1(x, kMin, kMax, 3)[1], Dim(4));
  EXPECT_EQ(slice_axis1(DimVector{batch, 0}, 0, kMax, -1)[1], Dim(0));
}

TEST(ShapeOps, SlicePropagatesShapeValues) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, seq, 768});
  b.ints("one", {1});
  b.ints("two", {2});
  b.ints("zero", {0});
  b.ints("minus1", {-1});
  b.ints("max", {kMax});
  b.ints("min", {kMin});
  b.node("Shape", {"x"}, {"s"});
  b.node("Slice", {"s", "one", "two", "zero"}, {"seq1"});  // GPT-2: Shape(ids)[1:2]
  b.node("Slice", {"s", "minus1", "max"}, {"last"});
  b.node("Slice", {"s", "minus1", "min", "zero", "minus1"}, {"reversed"});
  b.node("Slice", {"s", "zero", "max", "zero", "two"}, {"even"});
  b.infer();
  EXPECT_EQ(b.values("seq1"), DimVector{seq});
  EXPECT_EQ(b.values("last"), DimVector{768});
  EXPECT_EQ(b.values("reversed"), (DimVector{768, seq, batch}));
  EXPECT_EQ(b.values("even"), (DimVector{batch, 768}));
  EXPECT_EQ(b.dims("even"), DimVector{2});
}

// HF-style causal mask: a constant buffer sliced with bounds computed from shapes.
TEST(ShapeOps, SliceCausalMaskWithSymbolicBounds) {
  const Dim past = S("past");
  GraphBuilder b;
  b.input("bias", DType::Bool, DimVector{1, 1, 128, 128});
  b.input("past_k", DType::Float32, DimVector{batch, 12, past, 64});
  b.input("k", DType::Float32, DimVector{batch, 12, seq, 64});
  b.ints("two", {2});
  b.ints("three", {3});
  b.ints("axis2", {2});
  b.ints("axis3", {3});
  b.ints("zero", {0});
  b.node("Concat", {"past_k", "k"}, {"keys"}, {I("axis", 2)});
  b.node("Shape", {"keys"}, {"ks"});
  b.node("Slice", {"ks", "two", "three"}, {"key_len"});   // [past + seq]
  b.node("Shape", {"past_k"}, {"ps"});
  b.node("Slice", {"ps", "two", "three"}, {"past_len"});  // [past]
  b.node("Slice", {"bias", "past_len", "key_len", "axis2"}, {"rows"});
  b.node("Slice", {"rows", "zero", "key_len", "axis3"}, {"mask"});
  // The same bounds on a buffer that is itself symbolic cut exactly.
  b.node("Slice", {"keys", "past_len", "key_len", "axis2"}, {"cur"});
  b.infer();
  EXPECT_EQ(b.values("key_len"), DimVector{past + seq});
  const Dim rows = Dim::min(past + seq, 128) - past;
  EXPECT_EQ(b.dims("rows"), (DimVector{1, 1, rows, 128}));
  EXPECT_EQ(b.dims("mask"), (DimVector{1, 1, rows, Dim::min(past + seq, 128)}));
  EXPECT_EQ(rows.evaluate({{"past", 3}, {"seq", 5}}), 5);
  EXPECT_EQ(b.dims("cur"), (DimVector{batch, 12, seq, 64}));
}

TEST(ShapeOps, SliceNegativeSymbolicStartCountsFromTheEnd) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, seq});
  b.input("starts", DType::Int64, DimVector{1});
  b.g.value("starts")->known_values = DimVector{-S("n")};  // e.g. x[:, -n:]
  b.ints("ends", {kMax});
  b.ints("axes", {1});
  b.node("Slice", {"x", "starts", "ends", "axes"}, {"y"});
  b.infer();
  EXPECT_EQ(b.dims("y"), (DimVector{batch, S("n")}));
}

TEST(ShapeOps, SliceWithUnknownBoundsKeepsTheRank) {
  GraphBuilder b;
  b.input("x", DType::Float32, DimVector{batch, seq, 4});
  b.input("starts", DType::Int64, DimVector{1});
  b.input("ends", DType::Int64, DimVector{1});
  b.input("dyn_axes", DType::Int64, DimVector{1});
  b.ints("axes", {1});
  b.node("Slice", {"x", "starts", "ends", "axes"}, {"y"});
  b.node("Slice", {"x", "starts", "ends", "dyn_axes"}, {"z"});
  b.input("u", DType::Float32, std::nullopt);
  b.node("Slice", {"u", "starts", "ends"}, {"w"});
  b.infer();
  DimVector y = b.dims("y"), z = b.dims("z");
  EXPECT_EQ(y[0], batch);
  EXPECT_FALSE(y[1].is_constant());
  EXPECT_EQ(y[2], Dim(4));
  EXPECT_EQ(z.size(), 3u);
  EXPECT_FALSE(b.type("w").has_rank());
}

TEST(ShapeOps, SliceAttributesBeforeOpset10AndErrors) {
  GraphBuilder b(9);
  b.input("x", DType::Float32, DimVector{batch, 10});
  b.node("Slice", {"x"}, {"y"}, {Is("starts", {1}), Is("ends", {kMax}), Is("axes", {-1})});
  b.infer();
  EXPECT_EQ(b.dims("y"), (DimVector{batch, 9}));

  GraphBuilder step0;
  step0.input("x", DType::Float32, DimVector{4});
  step0.ints("s", {0});
  step0.ints("e", {4});
  step0.ints("a", {0});
  step0.ints("st", {0});
  step0.node("Slice", {"x", "s", "e", "a", "st"}, {"y"}, {}, "slice0");
  std::string msg = error_of([&] { step0.infer(); });
  EXPECT_TRUE(contains(msg, "node 'slice0'")) << msg;
  EXPECT_TRUE(contains(msg, "step")) << msg;

  GraphBuilder lens;
  lens.input("x", DType::Float32, DimVector{4, 4});
  lens.ints("s", {0, 0});
  lens.ints("e", {4});
  lens.node("Slice", {"x", "s", "e"}, {"y"}, {}, "slice_len");
  EXPECT_TRUE(contains(error_of([&] { lens.infer(); }), "node 'slice_len'"));

  GraphBuilder axis;
  axis.input("x", DType::Float32, DimVector{4, 4});
  axis.ints("s", {0});
  axis.ints("e", {4});
  axis.ints("a", {2});
  axis.node("Slice", {"x", "s", "e", "a"}, {"y"}, {}, "slice_axis");
  EXPECT_TRUE(contains(error_of([&] { axis.infer(); }), "out of range"));
}

// ------------------------------------------------------------------ Pad

TEST(ShapeOps, PadAcrossOpsets) {
  GraphBuilder b(18);
  b.input("x", DType::Float32, DimVector{2, seq});
  b.ints("pads", {1, 0, 1, 4});
  b.ints("pads_axis", {2, 3});
  b.ints("axes", {-1});
  b.node("Pad", {"x", "pads"}, {"y"});
  b.node("Pad", {"x", "pads_axis", "", "axes"}, {"z"});
  b.infer();
  EXPECT_EQ(b.dims("y"), (DimVector{4, seq + 4}));
  EXPECT_EQ(b.dims("z"), (DimVector{2, seq + 5}));

  GraphBuilder old(10);
  old.input("x", DType::Float32, DimVector{2, seq});
  old.node("Pad", {"x"}, {"y"}, {Is("pads", {0, 1, 0, 1})});
  old.infer();
  EXPECT_EQ(old.dims("y"), (DimVector{2, seq + 2}));

  GraphBuilder crop;
  crop.input("x", DType::Float32, DimVector{2, 3});
  crop.ints("pads", {0, -2, 0, -2});
  crop.node("Pad", {"x", "pads"}, {"y"}, {}, "pad_crop");
  EXPECT_TRUE(contains(error_of([&] { crop.infer(); }), "node 'pad_crop'"));

  GraphBuilder len;
  len.input("x", DType::Float32, DimVector{2, 3});
  len.ints("pads", {1, 1});
  len.node("Pad", {"x", "pads"}, {"y"}, {}, "pad_len");
  EXPECT_TRUE(contains(error_of([&] { len.infer(); }), "node 'pad_len'"));
}

}  // namespace
}  // namespace octet
