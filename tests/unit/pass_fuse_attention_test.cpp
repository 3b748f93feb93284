// Multi-head attention chains -> octet.Attention: the three exporter forms fuse and
// compute what they computed; a chain that differs in any detail the fused op relies on
// (a permutation, the scale, the causal diagonal or fill, a reader outside the chain, a
// mask that grows the scores) is left alone.
#include <gtest/gtest.h>

#include <iostream>
#include <limits>

#include "onnx/model_io.h"
#include "pass_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

constexpr int64_t kHeads = 4, kHead = 4, kChannels = 16;
const float kLowest = std::numeric_limits<float>::lowest();

// The knobs of one batch-first chain (HF BERT / GPT-2 form); defaults fuse.
struct Chain {
  bool mask = true;
  bool mask_first = false;  // Add(mask, scores)
  std::vector<int64_t> mask_shape = {};  // default [batch, 1, 1, seq] via the input's dims
  bool causal = false;
  bool causal_not_form = true;     // Where(Not(L), fill, s); else Where(L, s, fill)
  int64_t trilu_upper = 0, trilu_k = 0;
  float fill = kLowest;
  float divisor = 2.0f;            // sqrt(head size)
  bool scale_by_mul = false;
  std::vector<float> scale_shape_extra = {};  // non-empty: the divisor is a [2] tensor
  std::vector<int64_t> q_perm = {0, 2, 1, 3}, k_perm = {0, 2, 3, 1}, v_perm = {0, 2, 1, 3}, merge_perm = {0, 2, 1, 3};
  std::vector<int64_t> head_shape = {0, 0, kHeads, kHead};  // Reshape target (0 copies batch/seq)
  std::vector<int64_t> merge_shape = {0, 0, kChannels};
  bool softmax_read_elsewhere = false;
  bool shape_reader_of_merge = true;  // the exporter's Shape(merged) -> Gather view() arithmetic
  bool shape_reader_to_output = false;  // ... whose result is also a graph output
  int64_t softmax_axis = -1;
  // 4 (= heads = head size) makes every permutation shape-valid, for the near misses.
  bool square_seq = false;
};

std::shared_ptr<Graph> build(const Chain& c) {
  PassGraph b;
  const Dim batch = Dim::symbol("batch"), seq = c.square_seq ? Dim(kHead) : Dim::symbol("seq");
  for (const char* n : {"q", "k", "v"}) b.input(n, DType::Float32, {batch, seq, kChannels});
  b.init("head_shape", Tensor::from_vector<int64_t>({4}, c.head_shape));
  b.init("merge_shape_c", Tensor::from_vector<int64_t>({1}, {c.merge_shape.back()}));
  const char* names[3][3] = {{"q", "q4", "qh"}, {"k", "k4", "kt"}, {"v", "v4", "vh"}};
  const std::vector<int64_t>* perms[3] = {&c.q_perm, &c.k_perm, &c.v_perm};
  for (int i = 0; i < 3; ++i) {
    b.node("Reshape", {names[i][0], "head_shape"}, {names[i][1]});
    b.node("Transpose", {names[i][1]}, {names[i][2]}, {Attribute::make_ints("perm", *perms[i])});
  }
  b.node("MatMul", {"qh", "kt"}, {"scores"});
  if (c.scale_shape_extra.empty()) b.scalar("divisor", c.scale_by_mul ? 1.0f / c.divisor : c.divisor);
  else b.init("divisor", Tensor::from_vector<float>({2, 1, 1, 1}, c.scale_shape_extra));
  b.node(c.scale_by_mul ? "Mul" : "Div", {"scores", "divisor"}, {"scaled"});
  std::string s = "scaled";
  if (c.mask) {
    if (c.mask_shape.empty()) b.input("mask", DType::Float32, {batch, 1, 1, seq});
    else b.input("mask", DType::Float32, DimVector(c.mask_shape.begin(), c.mask_shape.end()));
    if (c.mask_first) b.node("Add", {"mask", s}, {"masked"});
    else b.node("Add", {s, "mask"}, {"masked"});
    s = "masked";
  }
  if (c.causal) {
    // GPT-2: the [Sq, Sk] size from Shape(qh), an all-true matrix, its lower triangle.
    b.node("Shape", {"qh"}, {"qshape"});
    b.init("two", Tensor::scalar<int64_t>(2));
    b.init("axes0", Tensor::from_vector<int64_t>({1}, {0}));
    b.node("Gather", {"qshape", "two"}, {"sq"}, {Attribute::make_int("axis", 0)});
    b.node("Unsqueeze", {"sq", "axes0"}, {"sq1"});
    b.node("Concat", {"sq1", "sq1"}, {"square"}, {Attribute::make_int("axis", 0)});
    b.node("ConstantOfShape", {"square"}, {"ones"},
           {Attribute::make_tensor("value", Tensor::from_vector<bool>({1}, {true}))});
    b.init("diag", Tensor::scalar<int64_t>(c.trilu_k));
    b.node("Trilu", {"ones", "diag"}, {"lower"}, {Attribute::make_int("upper", c.trilu_upper)});
    b.scalar("fill", c.fill);
    if (c.causal_not_form) {
      b.node("Not", {"lower"}, {"hidden"});
      b.node("Where", {"hidden", "fill", s}, {"causal"});
    } else {
      b.node("Where", {"lower", s, "fill"}, {"causal"});
    }
    s = "causal";
  }
  b.node("Softmax", {s}, {"probs"}, {Attribute::make_int("axis", c.softmax_axis)});
  b.node("MatMul", {"probs", "vh"}, {"ctx"});
  b.node("Transpose", {"ctx"}, {"merged"}, {Attribute::make_ints("perm", c.merge_perm)});
  if (c.shape_reader_of_merge) {
    // [B, S, C] built from the merged tensor's own shape, as torch's view() exports it.
    b.node("Shape", {"merged"}, {"mshape"});
    b.init("idx01", Tensor::from_vector<int64_t>({2}, {0, 1}));
    b.node("Gather", {"mshape", "idx01"}, {"bs"}, {Attribute::make_int("axis", 0)});
    b.node("Concat", {"bs", "merge_shape_c"}, {"merge_shape"}, {Attribute::make_int("axis", 0)});
    if (c.shape_reader_to_output) b.output("bs");
  } else {
    b.init("merge_shape", Tensor::from_vector<int64_t>({3}, c.merge_shape));
  }
  b.node("Reshape", {"merged", "merge_shape"}, {"y"});
  b.output("y");
  if (c.softmax_read_elsewhere) b.output("probs");
  return b.done();
}

NamedTensors inputs(int64_t batch, int64_t seq, bool mask = true) {
  NamedTensors in = {{"q", testing::ramp(DType::Float32, {batch, seq, kChannels}, 1, 1.5f)},
                     {"k", testing::ramp(DType::Float32, {batch, seq, kChannels}, 2, 1.5f)},
                     {"v", testing::ramp(DType::Float32, {batch, seq, kChannels}, 3, 1.5f)}};
  if (mask) {
    // Right padding on every row but the first; the last row is all padding.
    Tensor m(DType::Float32, {batch, 1, 1, seq});
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t j = 0; j < seq; ++j)
        m.mutable_data<float>()[b * seq + j] = (b == batch - 1 && batch > 1) || (b > 0 && j >= seq - b) ? kLowest : 0;
    in.emplace_back("mask", std::move(m));
  }
  return in;
}

const Node* fused_node(const Graph& g) {
  for (const Node* n : g.nodes())
    if (n->domain() == "octet" && n->op_type() == "Attention") return n;
  return nullptr;
}

// Fuses (via the whole pipeline, as models meet it) and compares at several shapes.
std::shared_ptr<Graph> expect_fused(const Chain& c) {
  std::shared_ptr<Graph> original = build(c), fused = build(c);
  OptimizeOptions opts;
  opts.verify = true;
  OptimizeReport r = optimize(*fused, opts);
  EXPECT_EQ(count_ops(*fused, "Attention", "octet"), 1) << r.to_text();
  EXPECT_EQ(count_ops(*fused, "Softmax"), 0);
  EXPECT_EQ(count_ops(*fused, "MatMul"), 0);
  EXPECT_EQ(count_ops(*fused, "Shape"), 0);  // the shape arithmetic died with the chain
  using Shapes = std::vector<std::pair<int64_t, int64_t>>;
  for (auto [batch, seq] : c.square_seq ? Shapes{{1, kHead}, {3, kHead}} : Shapes{{1, 1}, {2, 5}, {3, 8}}) {
    NamedTensors in = inputs(batch, seq, c.mask);
    const double err =
        testing::max_relative_error(testing::run_graph(fused, in), testing::run_graph(original, in));
    EXPECT_LE(err, 1e-6) << "batch " << batch << " seq " << seq;
  }
  return fused;
}

void expect_not_fused(const Chain& c, const char* why) {
  std::shared_ptr<Graph> g = build(c);
  run_pass(*g, passes::fuse_attention());
  EXPECT_EQ(count_ops(*g, "Attention", "octet"), 0) << why;
  EXPECT_EQ(count_ops(*g, "Softmax"), 1) << why;
}

TEST(FuseAttention, BertPaddingMask) {
  auto g = expect_fused({});
  const Node* n = fused_node(*g);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->attr_int("num_heads", 0), kHeads);
  EXPECT_FLOAT_EQ(n->attr_float("scale", 0), 0.5f);
  EXPECT_EQ(n->attr_int("causal", -1), 0);
  EXPECT_EQ(n->input(3), g->value("mask"));
  EXPECT_EQ(dims_to_string(*n->output(0)->type.dims), "[batch,seq,16]");
}

TEST(FuseAttention, MaskOnEitherSideOfTheAdd) {
  Chain c;
  c.mask_first = true;
  expect_fused(c);
}

TEST(FuseAttention, ScaleByMulAndNoMask) {
  Chain c;
  c.mask = false;
  c.scale_by_mul = true;
  auto g = expect_fused(c);
  EXPECT_EQ(fused_node(*g)->inputs().size(), 3u);
}

TEST(FuseAttention, Gpt2CausalBothWhereForms) {
  for (bool not_form : {true, false}) {
    Chain c;
    c.mask = false;
    c.causal = true;
    c.causal_not_form = not_form;
    auto g = expect_fused(c);
    EXPECT_EQ(fused_node(*g)->attr_int("causal", 0), 1);
    EXPECT_EQ(count_ops(*g, "Trilu"), 0);
  }
}

TEST(FuseAttention, CausalAfterPaddingMask) {
  Chain c;
  c.causal = true;
  auto g = expect_fused(c);
  EXPECT_EQ(fused_node(*g)->inputs().size(), 4u);
}

TEST(FuseAttention, NearMissPermutations) {
  Chain c;
  c.square_seq = true;
  c.mask = false;
  expect_fused(c);  // the square form itself fuses
  for (auto perm : std::vector<std::vector<int64_t>>{{0, 2, 3, 1}, {0, 1, 2, 3}, {0, 3, 1, 2}}) {
    Chain q = c, k = c, v = c, m = c;
    q.q_perm = perm;
    expect_not_fused(q, "Q permutation");
    if (perm != std::vector<int64_t>{0, 2, 3, 1}) {
      k.k_perm = perm;
      expect_not_fused(k, "K permutation");
    }
    v.v_perm = perm;
    expect_not_fused(v, "V permutation");
    m.merge_perm = perm;
    expect_not_fused(m, "merge permutation");
  }
}

TEST(FuseAttention, NearMissScale) {
  Chain c;
  c.scale_shape_extra = {2, 2};  // a [2,1,1,1] divisor broadcasts over batch
  c.mask = false;
  std::shared_ptr<Graph> g = build(c);
  // (that graph only runs at batch 2; the pass must not fuse it either way)
  run_pass(*g, passes::fuse_attention());
  EXPECT_EQ(count_ops(*g, "Attention", "octet"), 0);
}

TEST(FuseAttention, NearMissCausal) {
  Chain c;
  c.mask = false;
  c.causal = true;
  c.trilu_upper = 1;
  expect_not_fused(c, "upper triangle");
  c.trilu_upper = 0;
  c.trilu_k = 1;
  expect_not_fused(c, "diagonal shifted");
  c.trilu_k = 0;
  c.fill = -10000.0f;
  expect_not_fused(c, "fill that does not hide a key");
}

TEST(FuseAttention, NearMissReadersAndMask) {
  Chain c;
  c.softmax_read_elsewhere = true;
  expect_not_fused(c, "probabilities are a graph output");
  c = Chain{};
  c.shape_reader_to_output = true;
  expect_not_fused(c, "shape arithmetic that outlives the chain");
  c = Chain{};
  c.softmax_axis = 2;
  expect_not_fused(c, "softmax over queries");
}

TEST(FuseAttention, SeqFirstMultiheadAttention) {
  // nn.MultiheadAttention: [S, B, E] -> [S, B*H, D] -> (1,0,2); q scaled before the
  // product; merged back to [S*B, E] by a Reshape that stays and reads Y.
  auto make = [] {
    PassGraph b;
    const Dim batch = Dim::symbol("batch");
    for (const char* n : {"q", "k", "v"}) b.input(n, DType::Float32, {7, batch, kChannels});
    b.init("head_shape", Tensor::from_vector<int64_t>({3}, {7, -1, kHead}));
    b.init("flat", Tensor::from_vector<int64_t>({2}, {-1, kChannels}));
    b.node("Reshape", {"q", "head_shape"}, {"q3"});
    b.node("Transpose", {"q3"}, {"qh"}, {Attribute::make_ints("perm", {1, 0, 2})});
    b.node("Reshape", {"k", "head_shape"}, {"k3"});
    b.node("Transpose", {"k3"}, {"kt"}, {Attribute::make_ints("perm", {1, 2, 0})});
    b.node("Reshape", {"v", "head_shape"}, {"v3"});
    b.node("Transpose", {"v3"}, {"vh"}, {Attribute::make_ints("perm", {1, 0, 2})});
    b.scalar("divisor", 2.0f);
    b.node("Div", {"qh", "divisor"}, {"qs"});
    b.node("MatMul", {"qs", "kt"}, {"scores"});
    b.node("Softmax", {"scores"}, {"probs"}, {Attribute::make_int("axis", -1)});
    b.node("MatMul", {"probs", "vh"}, {"ctx"});
    b.node("Transpose", {"ctx"}, {"merged"}, {Attribute::make_ints("perm", {1, 0, 2})});
    b.node("Reshape", {"merged", "flat"}, {"y"});
    b.output("y");
    return b.done();
  };
  NamedTensors in = {{"q", testing::ramp(DType::Float32, {7, 3, kChannels}, 1, 1.5f)},
                     {"k", testing::ramp(DType::Float32, {7, 3, kChannels}, 2, 1.5f)},
                     {"v", testing::ramp(DType::Float32, {7, 3, kChannels}, 3, 1.5f)}};
  auto g = testing::rewrite_and_compare(make, passes::fuse_attention(), in, 1e-6);
  const Node* n = fused_node(*g);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->attr_int("seq_first", 0), 1);
  EXPECT_EQ(n->attr_int("num_heads", 0), kHeads);
  EXPECT_EQ(count_ops(*g, "Reshape"), 1);  // the flattening Reshape, now reading Y
  EXPECT_EQ(g->node_count(), 2u);
}

// ---- the exporter fixtures: every block fuses, and the result matches the original

std::shared_ptr<Graph> load_fixture(const std::string& name) {
  Model m = load_model(std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/" + name + ".onnx");
  return std::shared_ptr<Graph>(std::move(m.graph));
}

// Token ids in the vocabulary, alternating token types; attention_mask: row 0 all ones,
// row 1 right-padded by 2, row 2 all padding (every key masked), and so on.
NamedTensors fixture_inputs(const Graph& g, int64_t batch, int64_t seq) {
  NamedTensors in;
  for (const Value* v : g.inputs()) {
    if (v->type.dtype != DType::Int64) {
      in.emplace_back(v->name(), testing::ramp(v->type.dtype, {batch, 3, 224, 224}, 0, 1.0f));
      continue;
    }
    std::vector<int64_t> data(static_cast<size_t>(batch * seq));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t j = 0; j < seq; ++j) {
        int64_t& x = data[static_cast<size_t>(b * seq + j)];
        if (v->name() == "attention_mask") x = b % 3 == 2 ? 0 : (b % 3 == 1 ? j + 2 < seq : 1);
        else if (v->name() == "token_type_ids") x = j % 2;
        else x = (b * seq + j) * 37 % 997;
      }
    in.emplace_back(v->name(), Tensor::from_vector<int64_t>({batch, seq}, data));
  }
  return in;
}

double max_abs_difference(const NamedTensors& a, const NamedTensors& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    std::vector<float> x = a[i].second.to_float_vector(), y = b[i].second.to_float_vector();
    for (size_t k = 0; k < x.size(); ++k) worst = std::max(worst, std::fabs(double(x[k]) - y[k]));
  }
  return worst;
}

TEST(FuseAttention, FixturesFuseEveryBlockAndMatchTheOriginal) {
  struct Fixture {
    const char* name;
    const char* kind;
  };
  for (Fixture f : {Fixture{"bert_tiny", "octet.Attention(mask)"}, Fixture{"gpt2_tiny", "octet.Attention(causal)"},
                    Fixture{"vit_tiny", "octet.Attention(none)"}}) {
    std::shared_ptr<Graph> original = load_fixture(f.name), unfused = load_fixture(f.name), fused = load_fixture(f.name);
    OptimizeOptions opts;
    opts.verify = true;
    OptimizeReport r = optimize(*fused, opts);
    opts.disabled_passes = {"fuse_attention"};
    optimize(*unfused, opts);
    EXPECT_EQ(r.detail(f.kind), 2) << f.name;
    EXPECT_EQ(count_ops(*fused, "Softmax"), 0) << f.name;
    EXPECT_LT(fused->node_count(), unfused->node_count()) << f.name;
    std::cout << f.name << ": nodes " << r.nodes_before << " -> " << unfused->node_count()
              << " (level 2 without attention) -> " << fused->node_count() << "\n";
    const bool vit = std::string(f.name) == "vit_tiny";
    using Shapes = std::vector<std::pair<int64_t, int64_t>>;
    Session before(original), after(fused);
    double worst = 0;
    for (auto [batch, seq] : vit ? Shapes{{1, 0}, {2, 0}} : Shapes{{1, 1}, {3, 1}, {3, 7}, {4, 16}, {1, 128}}) {
      NamedTensors in = fixture_inputs(*original, batch, seq);
      NamedTensors want = before.run(in), got = after.run(in);
      const double err = testing::max_relative_error(got, want);
      EXPECT_LE(err, 1e-5) << f.name << " batch " << batch << " seq " << seq;
      worst = std::max(worst, max_abs_difference(got, want));
    }
    std::cout << "  max abs difference optimized vs original: " << worst << "\n";
  }
}

}  // namespace
}  // namespace octet
