// LayerNormalization read by static octet.QMatMul nodes -> octet.LayerNormQuantize: the
// one-LayerNorm case (its output read only by QMatMuls, or by them and a float reader),
// the SmoothQuant pair (a smoothed copy read only by QMatMuls next to the float original),
// each with per-token (dynamic) readers too (the per-row mode), and the cases the pass must leave alone. The rewritten graph's outputs must be the same
// bits as the original's with the optimized kernels (the same row kernels run in the same
// order), and within the QMatMul tolerance with the reference kernels, at every ISA level
// (oneDNN's is chosen per process: child runs).
#include <gtest/gtest.h>

#include <cstring>

#include "isa_child_runs.h"
#include "pass_test_util.h"
#include "qmatmul_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;
using testing::run_graph_with;

struct Options {
  std::vector<int64_t> x_shape = {2, 9, 24};
  DType act = DType::UInt8;  // the QMatMuls' a_zero_point type
  bool twin = false;         // a smoothed copy (gamma / s, beta / s) feeds the QMatMuls
  bool float_reader = false; // the LayerNorm's output is also a residual of a QMatMul
  int readers = 1;           // QMatMuls reading the (smoothed) LayerNorm
  bool no_bias = false;
  // Per-token readers (dynamic QMatMuls, this dynamic_type): the per-row mode.
  std::string per_token;
  // Cases the pass must leave alone:
  bool other_scale = false;    // the second reader quantizes with another a_scale
  bool channel_scale = false;  // the reader folds a smoothing Mul (a_channel_scale)
  bool dynamic = false;        // the first of two readers quantizes per row, the other statically
  bool mixed_types = false;    // per-token readers of two dynamic_types
  bool norm_output = false;    // the LayerNorm's output is a graph output
  int64_t axis = -1;
};

std::shared_ptr<Graph> make(const Options& o) {
  PassGraph b;
  b.g->opset_imports["octet"] = 1;
  const int64_t k = o.x_shape.back();
  b.input("x", DType::Float32, DimVector(o.x_shape.begin(), o.x_shape.end()));
  b.init("g", testing::ramp(DType::Float32, {k}, 3, 1.0f));
  b.init("beta", testing::ramp(DType::Float32, {k}, 4, 0.5f));
  b.init("g_s", testing::ramp(DType::Float32, {k}, 5, 2.0f));
  b.init("beta_s", testing::ramp(DType::Float32, {k}, 6, 0.7f));
  b.init("sa", Tensor::scalar<float>(3.1f / 255.0f));
  b.init("sa2", Tensor::scalar<float>(2.3f / 255.0f));
  if (o.act == DType::UInt8) b.init("za", Tensor::scalar<uint8_t>(119));
  else b.init("za", Tensor::scalar<int8_t>(-9));
  b.init("cs", testing::ramp(DType::Float32, {k}, 7, 0.3f));
  const std::vector<Attribute> norm_attrs = {Attribute::make_int("axis", o.axis),
                                             Attribute::make_float("epsilon", 1e-6f)};
  b.node("LayerNormalization", {"x", "g", o.no_bias ? "" : "beta"}, {"n"}, norm_attrs);
  if (o.twin) b.node("LayerNormalization", {"x", "g_s", o.no_bias ? "" : "beta_s"}, {"ns"}, norm_attrs);
  const std::string a = o.twin ? "ns" : "n";
  const int64_t n = 20;
  std::vector<std::string> outs;
  for (int i = 0; i < o.readers; ++i) {
    const std::string p = "p" + std::to_string(i);
    b.init(p + "_w", testing::qmm::rand_int8({k, n}, 30 + i));
    Tensor sb(DType::Float32, {n});
    for (int64_t c = 0; c < n; ++c) sb.mutable_data<float>()[c] = (0.5f + 0.03f * float(c)) / (127.0f * std::sqrt(float(k)));
    b.init(p + "_sb", std::move(sb));
    b.init(p + "_b", testing::ramp(DType::Float32, {n}, 40 + i, 0.3f));
    const bool dynamic = (o.dynamic && i == 0) || !o.per_token.empty();
    std::vector<std::string> ins = {a, dynamic ? "" : (o.other_scale && i == 1 ? "sa2" : "sa"), dynamic ? "" : "za",
                                    p + "_w", p + "_sb", "", p + "_b"};
    if (o.channel_scale && i == 0) ins.insert(ins.end(), {"", "cs"});
    std::vector<Attribute> attrs;
    if (!o.per_token.empty())
      attrs.push_back(Attribute::make_string("dynamic_type", o.mixed_types && i == 1 ? "int8" : o.per_token));
    b.node("QMatMul", ins, {p}, attrs, "octet");
    outs.push_back(p);
  }
  if (o.float_reader || o.twin) {
    // A float read of the (unsmoothed) LayerNorm: the residual of a QMatMul, as the next
    // projection of a BERT layer has it.
    b.init("r_w", testing::qmm::rand_int8({k, k}, 50));
    b.init("r_sb", Tensor::scalar<float>(1.0f / (127.0f * std::sqrt(float(k)))));
    b.node("QMatMul", {"x", "sa", "za", "r_w", "r_sb", "", "", "n"}, {"r"}, {}, "octet");
    outs.push_back("r");
  }
  for (const std::string& out : outs) b.output(out);
  if (o.norm_output) b.output("n");
  return b.done();
}

void expect_same_numbers(const Options& o, int rewrites) {
  auto original = make(o), fused = make(o);
  const auto report = run_pass(*fused, passes::fuse_layer_norm_quantize());
  EXPECT_EQ(report.passes[0].rewrites, rewrites);
  EXPECT_TRUE(verify_graph(*fused).empty());
  if (rewrites == 0) return;
  EXPECT_EQ(count_ops(*fused, "LayerNormalization"), 0);
  EXPECT_EQ(count_ops(*fused, "LayerNormQuantize", "octet"), 1);
  for (const Node* n : fused->nodes()) {
    if (n->op_type() != "LayerNormQuantize") continue;
    EXPECT_EQ(n->outputs().size(), (o.twin || o.float_reader ? 2u : 1u) + (o.per_token.empty() ? 0u : 2u));
  }
  const NamedTensors in = {{"x", testing::ramp(DType::Float32, o.x_shape, 1, 4.0f)}};
  for (int threads : {1, 2}) {
    SessionOptions opts;
    opts.threads = threads;
    Session a(std::shared_ptr<const Graph>(original), opts), f(std::shared_ptr<const Graph>(fused), opts);
    EXPECT_TRUE(f.reference_ops().empty()) << (f.reference_ops().empty() ? "" : f.reference_ops().begin()->first);
    const NamedTensors want = a.run(in), got = f.run(in);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(want[i].second.bytes(), got[i].second.bytes());
      EXPECT_EQ(std::memcmp(want[i].second.raw(), got[i].second.raw(), want[i].second.bytes()), 0)
          << "output " << want[i].first << " threads " << threads;
    }
  }
  // Reference kernels: the LayerNorm statistics (float32 vs double) may move a value
  // across a rounding boundary in one kernel and not the other; one level of A is a
  // small change of the product.
  const NamedTensors want = run_graph_with(original, in, KernelChoice::Reference),
                     got = run_graph_with(fused, in, KernelChoice::Reference);
  EXPECT_LE(testing::max_relative_error(got, want), 1e-6);
}

TEST(FuseLayerNormQuantize, RewritesGiveTheSameBits) {
  Options plain, two, int8, twin, twin_no_bias, mixed, rank2;
  two.readers = 2;
  int8.act = DType::Int8;
  twin.twin = true;
  twin_no_bias.twin = twin_no_bias.no_bias = true;
  mixed.float_reader = true;
  rank2.x_shape = {7, 40};
  rank2.axis = 1;
  for (const Options& o : {plain, two, int8, twin, twin_no_bias, mixed, rank2}) {
    SCOPED_TRACE("x " + shape_to_string(o.x_shape) + (o.twin ? " twin" : "") + (o.float_reader ? " float reader" : "") +
                 " readers " + std::to_string(o.readers));
    expect_same_numbers(o, 1);
  }
}

// Per-token readers (issue 15's static mode quantizes MatMul inputs per row at run time):
// the LayerNorm writes Q with each row's scale and zero point, the same numbers each
// QMatMul computed from the float rows itself.
TEST(FuseLayerNormQuantize, PerTokenRewritesGiveTheSameBits) {
  for (const std::string type : {"uint8", "int8"}) {
    Options plain, two, twin, twin_no_bias, mixed, rank2, odd;
    for (Options* o : {&plain, &two, &twin, &twin_no_bias, &mixed, &rank2, &odd}) o->per_token = type;
    two.readers = 2;
    twin.twin = true;
    twin_no_bias.twin = twin_no_bias.no_bias = true;
    mixed.float_reader = true;
    rank2.x_shape = {7, 40};
    rank2.axis = 1;
    odd.x_shape = {1, 130, 33};  // enough rows for two threads to split them
    for (const Options& o : {plain, two, twin, twin_no_bias, mixed, rank2, odd}) {
      SCOPED_TRACE(type + " x " + shape_to_string(o.x_shape) + (o.twin ? " twin" : "") +
                   (o.float_reader ? " float reader" : "") + " readers " + std::to_string(o.readers));
      expect_same_numbers(o, 1);
    }
  }
}

TEST(FuseLayerNormQuantize, RewritesGiveTheSameBitsAtEveryIsa) {
  testing::expect_child_runs_pass_at_every_isa("FuseLayerNormQuantize.RewritesGiveTheSameBits",
                                               "fuse_layer_norm_quantize");
  testing::expect_child_runs_pass_at_every_isa("FuseLayerNormQuantize.PerTokenRewritesGiveTheSameBits",
                                               "fuse_layer_norm_quantize");
}

TEST(FuseLayerNormQuantize, CasesThatMustStay) {
  Options other_scale, channel, output, per_token_channel, mixed_types;
  other_scale.readers = 2;
  other_scale.other_scale = true;
  channel.channel_scale = true;
  output.norm_output = true;
  per_token_channel.per_token = "uint8";
  per_token_channel.channel_scale = true;
  mixed_types.per_token = "uint8";
  mixed_types.readers = 2;
  mixed_types.mixed_types = true;
  for (const Options& o : {other_scale, channel, output, per_token_channel, mixed_types}) {
    auto g = make(o);
    EXPECT_EQ(run_pass(*g, passes::fuse_layer_norm_quantize()).passes[0].rewrites, 0);
    EXPECT_EQ(count_ops(*g, "LayerNormQuantize", "octet"), 0);
  }
}

}  // namespace
}  // namespace octet
