// octet.Attention on channel Slices of one packed projection reads it in place.
#include <gtest/gtest.h>

#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

struct SliceSpec {
  int64_t start, end, axis = -1, step = 1;
  bool with_step = false;
};

// x [S, B, 3E] (seq-first, as nn.MultiheadAttention) -> Slice x3 -> octet.Attention -> y.
std::shared_ptr<Graph> packed_graph(const std::vector<SliceSpec>& specs, bool slice_also_output = false,
                                    bool preset_ranges = false) {
  PassGraph b;
  b.input("x", DType::Float32, {7, 2, 48});
  const char* names[] = {"q", "k", "v"};
  for (size_t i = 0; i < 3; ++i) {
    const SliceSpec& s = specs[i];
    const std::string n = names[i];
    b.init(n + "_starts", Tensor::from_vector<int64_t>({1}, {s.start}));
    b.init(n + "_ends", Tensor::from_vector<int64_t>({1}, {s.end}));
    b.init(n + "_axes", Tensor::from_vector<int64_t>({1}, {s.axis}));
    std::vector<std::string> ins = {"x", n + "_starts", n + "_ends", n + "_axes"};
    if (s.with_step) {
      b.init(n + "_steps", Tensor::from_vector<int64_t>({1}, {s.step}));
      ins.push_back(n + "_steps");
    }
    b.node("Slice", ins, {n});
  }
  std::vector<Attribute> attrs = {Attribute::make_int("num_heads", 2), Attribute::make_int("seq_first", 1)};
  if (preset_ranges) attrs.push_back(Attribute::make_ints("channel_ranges", {0, 16, 0, 16, 0, 16}));
  b.node("Attention", {"q", "k", "v"}, {"y"}, attrs, "octet");
  b.output("y");
  if (slice_also_output) b.output("k");
  return b.done();
}

TEST(FuseAttentionSlices, PackedQkvIsReadInPlaceWithTheSameResult) {
  // Thirds as torch exports them, then negative and past-the-end positions ONNX clamps.
  for (const std::vector<SliceSpec>& specs :
       {std::vector<SliceSpec>{{0, 16}, {16, 32}, {32, 48}},
        std::vector<SliceSpec>{{0, 16, 2}, {-32, -16}, {32, INT64_MAX, -1, 1, true}}}) {
    auto g = testing::rewrite_and_compare([&] { return packed_graph(specs); }, passes::fuse_attention_slices(),
                                          {{"x", testing::ramp(DType::Float32, {7, 2, 48})}}, 0.0);
    EXPECT_EQ(count_ops(*g, "Slice"), 0);
    ASSERT_EQ(g->node_count(), 1u);
    const Node* a = g->nodes()[0];
    EXPECT_EQ(a->attr_ints("channel_ranges"), (std::vector<int64_t>{0, 16, 16, 32, 32, 48}));
    EXPECT_EQ(a->attr_int("seq_first", 0), 1);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(a->input(i), g->value("x"));
  }
}

TEST(FuseAttentionSlices, OnlyChannelSlicesOnlyThisNodeReadsAreAbsorbed) {
  // K's Slice is also a graph output: it stays and K is read from it (whole); Q and V
  // still read x in place.
  auto g = testing::rewrite_and_compare([] { return packed_graph({{0, 16}, {16, 32}, {32, 48}}, true); },
                                        passes::fuse_attention_slices(),
                                        {{"x", testing::ramp(DType::Float32, {7, 2, 48})}}, 0.0);
  EXPECT_EQ(count_ops(*g, "Slice"), 1);
  // A step other than 1, or a slice of another axis: nothing to read in place.
  for (const std::vector<SliceSpec>& specs :
       {std::vector<SliceSpec>{{0, 32, -1, 2, true}, {16, 32}, {32, 48}},
        std::vector<SliceSpec>{{0, 2, 1}, {0, 2, 1}, {0, 2, 1}}}) {
    auto h = packed_graph(specs);
    const int64_t before = count_ops(*h, "Slice");
    run_pass(*h, passes::fuse_attention_slices());
    EXPECT_EQ(count_ops(*h, "Slice"), before - (specs[0].step == 2 ? 2 : 0));
  }
  // A node that already has channel_ranges is left as it is.
  auto preset = packed_graph({{0, 16}, {16, 32}, {32, 48}}, false, true);
  EXPECT_EQ(run_pass(*preset, passes::fuse_attention_slices()).passes[0].rewrites, 0);
}

// GPT-2's c_attn: one Split of the last axis into Q, K and V, sizes given or equal.
std::shared_ptr<Graph> split_graph(bool sizes_given, bool q_also_output) {
  PassGraph b;  // opset 17: Split's sizes are an input
  b.input("x", DType::Float32, {2, 7, 48});
  std::vector<std::string> ins = {"x"};
  if (sizes_given) {
    b.init("sizes", Tensor::from_vector<int64_t>({3}, {16, 16, 16}));
    ins.push_back("sizes");
  }
  b.node("Split", ins, {"q", "k", "v"}, {Attribute::make_int("axis", -1)});
  b.node("Attention", {"q", "k", "v"}, {"y"}, {Attribute::make_int("num_heads", 2), Attribute::make_int("causal", 1)},
         "octet");
  b.output("y");
  if (q_also_output) b.output("q");
  return b.done();
}

TEST(FuseAttentionSlices, SplitIntoQkvIsReadInPlace) {
  for (bool sizes_given : {true, false}) {
    auto g = testing::rewrite_and_compare([&] { return split_graph(sizes_given, false); },
                                          passes::fuse_attention_slices(),
                                          {{"x", testing::ramp(DType::Float32, {2, 7, 48})}}, 0.0);
    EXPECT_EQ(count_ops(*g, "Split"), 0);
    ASSERT_EQ(g->node_count(), 1u);
    EXPECT_EQ(g->nodes()[0]->attr_ints("channel_ranges"), (std::vector<int64_t>{0, 16, 16, 32, 32, 48}));
  }
  // A Split output read elsewhere keeps the Split, and so the attention reads its outputs.
  auto kept = split_graph(true, true);
  EXPECT_EQ(run_pass(*kept, passes::fuse_attention_slices()).passes[0].rewrites, 0);
  EXPECT_EQ(count_ops(*kept, "Split"), 1);
}

}  // namespace
}  // namespace octet
