// Type and shape inference of the multi-index ops: GatherND, ScatterND, ScatterElements
// (and Scatter) and TopK.
#include <gtest/gtest.h>

#include "ops_shape_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;

const Dim batch = S("batch"), seq = S("seq");

// ------------------------------------------------------------------ GatherND

TEST(IndexNdOps, GatherNdShapes) {
  GraphBuilder b(13);
  b.input("x", DType::Float32, DimVector{batch, seq, 64});
  b.input("full", DType::Int64, DimVector{5, 3});   // k = rank: one element per tuple
  b.input("rows", DType::Int64, DimVector{2, 7, 1});  // k = 1: rows of [seq, 64]
  b.input("pairs", DType::Int64, DimVector{batch, 4, 1});
  b.input("none", DType::Int64, DimVector{6, 0});   // k = 0: whole tensor per tuple
  b.node("GatherND", {"x", "full"}, {"y_full"});
  b.node("GatherND", {"x", "rows"}, {"y_rows"});
  b.node("GatherND", {"x", "pairs"}, {"y_batch"}, {I("batch_dims", 1)});
  b.node("GatherND", {"x", "none"}, {"y_none"});
  b.infer();
  EXPECT_EQ(b.type("y_full"), TensorType(DType::Float32, DimVector{5}));
  EXPECT_EQ(b.dims("y_rows"), (DimVector{2, 7, seq, 64}));
  EXPECT_EQ(b.dims("y_batch"), (DimVector{batch, 4, 64}));
  EXPECT_EQ(b.dims("y_none"), (DimVector{6, batch, seq, 64}));
}

// torch's dynamo exporter reads the [batch, seq] padding mask at (b, j) pairs built from
// two Range/Expand/Concat chains: [batch, 1, 1, seq, 2] indices.
TEST(IndexNdOps, GatherNdOnTheDynamoAttentionMask) {
  GraphBuilder b(17);
  b.input("mask", DType::Bool, DimVector{batch, seq});
  b.input("pairs", DType::Int64, DimVector{batch, 1, 1, seq, 2});
  b.node("GatherND", {"mask", "pairs"}, {"picked"}, {I("batch_dims", 0)});
  b.infer();
  EXPECT_EQ(b.type("picked"), TensorType(DType::Bool, DimVector{batch, 1, 1, seq}));
}

TEST(IndexNdOps, GatherNdTakesKnownBatchSizesAndUnknownTupleLengths) {
  GraphBuilder b(13);
  b.input("x", DType::Int32, DimVector{batch, 3, 4});
  b.input("i", DType::Int64, DimVector{2, seq, 2});
  b.input("k_unknown", DType::Int64, DimVector{2, S("k")});
  b.input("rank_unknown", DType::Int64, std::nullopt);
  b.node("GatherND", {"x", "i"}, {"y"}, {I("batch_dims", 1)});
  b.node("GatherND", {"x", "k_unknown"}, {"u"});
  b.node("GatherND", {"x", "rank_unknown"}, {"v"});
  b.infer();
  EXPECT_EQ(b.dims("y"), (DimVector{2, seq}));  // batch unified with the known 2
  EXPECT_FALSE(b.type("u").has_rank());
  EXPECT_EQ(b.type("u").dtype, DType::Int32);
  EXPECT_FALSE(b.type("v").has_rank());
}

TEST(IndexNdOps, GatherNdErrorsNameTheNode) {
  auto error = [](int64_t opset, DimVector data, DimVector idx, std::vector<Attribute> attrs, DType t = DType::Int64) {
    GraphBuilder b(opset);
    b.input("x", DType::Float32, std::move(data));
    b.input("i", t, std::move(idx));
    b.node("GatherND", {"x", "i"}, {"y"}, std::move(attrs), "gnd");
    std::string msg = error_of([&] { b.infer(); });
    EXPECT_TRUE(contains(msg, "node 'gnd' (GatherND)")) << msg;
    return msg;
  };
  EXPECT_TRUE(contains(error(13, {2, 3}, {4, 3}, {}), "address 3 dims after 0 batch dims"));
  EXPECT_TRUE(contains(error(13, {2, 3}, {2, 2}, {I("batch_dims", 1)}), "has only 1"));
  EXPECT_TRUE(contains(error(13, {2, 3}, {2}, {I("batch_dims", 1)}), "less than the rank of indices"));
  EXPECT_TRUE(contains(error(13, {2, 3}, {3, 1}, {I("batch_dims", 1)}), "batch dim 0 of data and indices: 2 vs 3"));
  EXPECT_TRUE(contains(error(13, {2, 3}, {2, 1}, {I("batch_dims", -1)}), "negative"));
  EXPECT_TRUE(contains(error(11, {2, 3}, {2, 1}, {I("batch_dims", 0)}), "from opset 12"));
  EXPECT_TRUE(contains(error(13, {2, 3}, {2, 1}, {}, DType::Int32), "must be int64"));
  EXPECT_TRUE(contains(error(13, {2, 3}, {}, {}), "indices must have rank >= 1"));
  EXPECT_TRUE(contains(error(13, {}, {1}, {}), "data must have rank >= 1"));
}

// ------------------------------------------------------------------ ScatterND

TEST(IndexNdOps, ScatterNdKeepsDataShapeAndChecksUpdates) {
  GraphBuilder b(18);
  b.input("cache", DType::Float32, DimVector{batch, 8, S("n"), 64});
  b.input("pos", DType::Int64, DimVector{batch, 1, 2});
  b.input("new", DType::Float32, DimVector{batch, 1, 16, 64});
  b.node("ScatterND", {"cache", "pos", "new"}, {"out"}, {Str("reduction", "add")});
  b.infer();
  // updates tell the unknown head-size dim: indices.shape[:-1] + data.shape[2:].
  EXPECT_EQ(b.type("out"), TensorType(DType::Float32, DimVector{batch, 8, 16, 64}));

  auto error = [](int64_t opset, DimVector upd, std::vector<Attribute> attrs, DType t = DType::Float32) {
    GraphBuilder g(opset);
    g.input("x", DType::Float32, DimVector{4, 4, 4});
    g.input("i", DType::Int64, DimVector{2, 1});
    g.input("u", t, std::move(upd));
    g.node("ScatterND", {"x", "i", "u"}, {"y"}, std::move(attrs), "snd");
    std::string msg = error_of([&] { g.infer(); });
    EXPECT_TRUE(msg.empty() || contains(msg, "node 'snd' (ScatterND)")) << msg;
    return msg;
  };
  EXPECT_EQ(error(18, {2, 4, 4}, {}), "");
  EXPECT_TRUE(contains(error(18, {2, 4}, {}), "indices.shape[:-1] + data.shape[1:] = [2,4,4]"));
  EXPECT_TRUE(contains(error(18, {2, 4, 5}, {}), "at dim 2: 5 vs 4"));
  EXPECT_TRUE(contains(error(18, {2, 4, 4}, {}, DType::Float16), "element type of data"));
  EXPECT_TRUE(contains(error(18, {2, 4, 4}, {Str("reduction", "avg")}), "not one of none, add, mul, max, min"));
  EXPECT_TRUE(contains(error(16, {2, 4, 4}, {Str("reduction", "max")}), "exists from opset 18"));
  EXPECT_EQ(error(16, {2, 4, 4}, {Str("reduction", "mul")}), "");
  EXPECT_TRUE(contains(error(13, {2, 4, 4}, {Str("reduction", "add")}), "exists from opset 16"));

  GraphBuilder deep(18);
  deep.input("x", DType::Float32, DimVector{4});
  deep.input("i", DType::Int64, DimVector{1, 2});
  deep.input("u", DType::Float32, DimVector{1});
  deep.node("ScatterND", {"x", "i", "u"}, {"y"}, {}, "deep");
  EXPECT_TRUE(contains(error_of([&] { deep.infer(); }), "address 2 dims, but data float32[4] has rank 1"));
}

// ------------------------------------------------------------------ ScatterElements

TEST(IndexNdOps, ScatterElementsChecksRanksAndShapes) {
  GraphBuilder b(18);
  b.input("x", DType::Float32, DimVector{batch, seq});
  b.input("i", DType::Int32, DimVector{batch, 2});
  b.input("u", DType::Float32, DimVector{S("b2"), 2});
  b.node("ScatterElements", {"x", "i", "u"}, {"y"}, {I("axis", -1), Str("reduction", "min")});
  b.infer();
  EXPECT_EQ(b.type("y"), TensorType(DType::Float32, DimVector{batch, seq}));

  auto error = [](int64_t opset, const std::string& op, DimVector idx, DimVector upd, std::vector<Attribute> attrs) {
    GraphBuilder g(opset);
    g.input("x", DType::Float32, DimVector{3, 3});
    g.input("i", DType::Int64, std::move(idx));
    g.input("u", DType::Float32, std::move(upd));
    g.node(op, {"x", "i", "u"}, {"y"}, std::move(attrs), "se");
    std::string msg = error_of([&] { g.infer(); });
    EXPECT_TRUE(msg.empty() || contains(msg, "node 'se' (" + op + ")")) << msg;
    return msg;
  };
  EXPECT_EQ(error(18, "ScatterElements", {2, 3}, {2, 3}, {}), "");
  EXPECT_TRUE(contains(error(18, "ScatterElements", {6}, {6}, {}), "must have the rank of data"));
  EXPECT_TRUE(contains(error(18, "ScatterElements", {2, 3}, {3, 3}, {}), "must have one shape"));
  EXPECT_TRUE(contains(error(18, "ScatterElements", {2, 3}, {2, 3}, {I("axis", 2)}), "axis 2 is out of range"));
  EXPECT_TRUE(contains(error(11, "ScatterElements", {2, 3}, {2, 3}, {Str("reduction", "add")}), "from opset 16"));
  EXPECT_EQ(error(10, "Scatter", {2, 3}, {2, 3}, {I("axis", 1)}), "");
  EXPECT_TRUE(contains(error(13, "Scatter", {2, 3}, {2, 3}, {}), "removed in opset 11"));
}

// ------------------------------------------------------------------ TopK

TEST(IndexNdOps, TopKReplacesTheAxisByK) {
  GraphBuilder b(11);
  b.input("logits", DType::Float32, DimVector{batch, seq, 1000});
  b.input("k_dyn", DType::Int64, DimVector{1});
  b.ints("five", {5});
  b.node("TopK", {"logits", "five"}, {"v", "i"});
  b.node("TopK", {"logits", "k_dyn"}, {"v2", "i2"}, {I("axis", 1), I("largest", 0), I("sorted", 0)});
  // k from shape math: the sequence length itself.
  b.ints("one", {1});
  b.ints("two", {2});
  b.node("Shape", {"logits"}, {"shape"});
  b.node("Slice", {"shape", "one", "two"}, {"seq_len"});
  b.node("TopK", {"logits", "seq_len"}, {"v3", "i3"}, {I("axis", -2)});
  b.infer();
  EXPECT_EQ(b.type("v"), TensorType(DType::Float32, DimVector{batch, seq, 5}));
  EXPECT_EQ(b.type("i"), TensorType(DType::Int64, DimVector{batch, seq, 5}));
  DimVector d2 = b.dims("v2");
  ASSERT_EQ(d2.size(), 3u);
  EXPECT_FALSE(d2[1].is_constant());
  EXPECT_NE(d2[1], seq);  // unknown k: a fresh symbol
  EXPECT_EQ(b.dims("i2"), d2);
  EXPECT_EQ(b.dims("v3"), (DimVector{batch, seq, 1000}));
}

TEST(IndexNdOps, TopKOpsetsAndErrors) {
  GraphBuilder old(1);
  old.input("x", DType::Float32, DimVector{4, 10});
  old.node("TopK", {"x"}, {"v", "i"}, {I("k", 3)});
  old.infer();
  EXPECT_EQ(old.dims("v"), (DimVector{4, 3}));

  auto error = [](int64_t opset, DimVector x, std::vector<int64_t> k, std::vector<Attribute> attrs,
                  DType t = DType::Float32) {
    GraphBuilder g(opset);
    g.input("x", t, std::move(x));
    std::vector<std::string> ins = {"x"};
    if (!k.empty()) {
      g.ints("k", k);
      ins.push_back("k");
    }
    g.node("TopK", ins, {"v", "i"}, std::move(attrs), "tk");
    std::string msg = error_of([&] { g.infer(); });
    EXPECT_TRUE(msg.empty() || contains(msg, "node 'tk' (TopK)")) << msg;
    return msg;
  };
  EXPECT_EQ(error(11, {4, 10}, {10}, {}), "");
  EXPECT_EQ(error(11, {4, 10}, {0}, {}), "");
  EXPECT_TRUE(contains(error(11, {4, 10}, {11}, {}), "k = 11 exceeds dim 1"));
  EXPECT_TRUE(contains(error(11, {4, 10}, {-1}, {}), "k = -1 is negative"));
  EXPECT_TRUE(contains(error(11, {4, 10}, {1, 2}, {}), "1-D tensor of one element"));
  EXPECT_TRUE(contains(error(11, {4, 10}, {}, {}), "'K' is required"));
  EXPECT_TRUE(contains(error(11, {4, 10}, {3}, {I("k", 3)}), "input from opset 10"));
  EXPECT_TRUE(contains(error(1, {4, 10}, {3}, {I("k", 3)}), "attribute before opset 10"));
  EXPECT_TRUE(contains(error(10, {4, 10}, {3}, {I("largest", 0)}), "'largest' exists from opset 11"));
  EXPECT_TRUE(contains(error(11, {4, 10}, {3}, {I("sorted", 2)}), "must be 0 or 1"));
  EXPECT_TRUE(contains(error(11, {4, 10}, {3}, {I("axis", 2)}), "axis 2 is out of range"));
  EXPECT_TRUE(contains(error(11, {}, {1}, {}), "rank >= 1"));
  EXPECT_TRUE(contains(error(11, {4}, {1}, {}, DType::Bool), "integer or float"));
}

}  // namespace
}  // namespace octet
