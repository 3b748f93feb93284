// Conv with stride == kernel and no padding, read as tokens or channels-last, becomes
// patches + MatMul: same results (on the optimized kernels and against the reference
// Conv), the tail's Transpose absorbed; every other Conv (read as NCHW too) left alone.
#include <gtest/gtest.h>

#include "io/npy.h"
#include "onnx/model_io.h"
#include "pass_test_util.h"
#include "passes/specialize.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;

enum class Tail {
  Nchw,          // Relu reads Y
  Tokens,        // Reshape [N, OC, patches] + Transpose(0,2,1), as ViT
  ChannelsLast,  // Transpose(0, 2, ..., s+1, 1), as ConvNeXt's permute
};

struct ConvCase {
  std::vector<Dim> x;                 // input dims; spatial ones known
  std::vector<int64_t> w;             // [OC, C, k...]
  std::vector<Attribute> attrs;       // strides etc.
  bool bias = true;
  Tail tail = Tail::Tokens;
  bool w_is_input = false;            // W a graph input: not a constant
  bool flatten_from_shape = false;    // the tail's target as torch writes it: Shape(Y)[0:2] ++ [-1]
};

std::vector<int64_t> kernel_of(const ConvCase& c) { return {c.w.begin() + 2, c.w.end()}; }

// X -> Conv -> (Relu | token tail) -> y
std::shared_ptr<Graph> conv_graph(const ConvCase& c) {
  PassGraph b;
  b.input("x", DType::Float32, c.x);
  if (c.w_is_input) b.input("w", DType::Float32, std::vector<Dim>(c.w.begin(), c.w.end()));
  else b.init("w", testing::ramp(DType::Float32, c.w, 1, 0.5f));
  std::vector<std::string> ins = {"x", "w"};
  if (c.bias) {
    b.init("b", testing::ramp(DType::Float32, {c.w[0]}, 2));
    ins.push_back("b");
  }
  b.node("Conv", ins, {"c"}, c.attrs);
  if (c.tail == Tail::Tokens) {
    if (c.flatten_from_shape) {
      b.flatten2_target("c", "flat");
    } else {
      // -1: the cases that must stay Conv have other output sizes.
      b.init("flat", Tensor::from_vector<int64_t>({3}, {0, c.w[0], -1}));
    }
    b.node("Reshape", {"c", "flat"}, {"f"});
    b.node("Transpose", {"f"}, {"y"}, {Attribute::make_ints("perm", {0, 2, 1})});
  } else if (c.tail == Tail::ChannelsLast) {
    std::vector<int64_t> perm = {0};
    for (size_t i = 2; i < c.x.size(); ++i) perm.push_back(static_cast<int64_t>(i));
    perm.push_back(1);
    b.node("Transpose", {"c"}, {"y"}, {Attribute::make_ints("perm", perm)});
  } else {
    b.node("Relu", {"c"}, {"y"});
  }
  b.output("y");
  return b.done();
}

ConvCase patchify(std::vector<Dim> x, std::vector<int64_t> w) {
  ConvCase c{std::move(x), std::move(w), {}};
  c.tail = Tail::Tokens;
  c.attrs = {Attribute::make_ints("kernel_shape", kernel_of(c)), Attribute::make_ints("strides", kernel_of(c))};
  return c;
}

NamedTensors inputs_for(const ConvCase& c, int64_t batch) {
  std::vector<int64_t> shape;
  for (const Dim& d : c.x) shape.push_back(d.constant().value_or(batch));
  NamedTensors in = {{"x", testing::ramp(DType::Float32, shape, 3)}};
  if (c.w_is_input) in.emplace_back("w", testing::ramp(DType::Float32, c.w, 1, 0.5f));
  return in;
}

// Rewrites, checks the graph's form, and compares with the original Conv on the optimized
// kernels and on the reference kernels.
void expect_rewritten(const ConvCase& c, int64_t batch, const std::string& what) {
  SCOPED_TRACE(what);
  const NamedTensors in = inputs_for(c, batch);
  auto g = testing::rewrite_and_compare([&] { return conv_graph(c); }, passes::conv_patches_to_matmul(), in, 1e-5);
  EXPECT_EQ(count_ops(*g, "Conv"), 0);
  EXPECT_EQ(count_ops(*g, "MatMul"), 1);
  EXPECT_EQ(count_ops(*g, "Add"), c.bias ? 1 : 0);
  EXPECT_EQ(count_ops(*g, "Transpose"), 1);  // the patches'; the tail's is gone
  SessionOptions ref;
  ref.kernels = KernelChoice::Reference;
  const NamedTensors want = Session(conv_graph(c), ref).run(in);
  EXPECT_LE(testing::max_relative_error(testing::run_graph(g, in), want), 1e-5);
}

TEST(ConvPatchesToMatmul, PatchConvsBecomeAMatMulWithTheSameResult) {
  // ViT-like with the token tail, batch 2, filters not a multiple of 16, ragged patch grid.
  expect_rewritten(patchify({2, 3, 12, 20}, {5, 3, 4, 4}), 2, "vit tail");
  // The same Conv read channels-last.
  ConvCase last = patchify({2, 3, 12, 20}, {5, 3, 4, 4});
  last.tail = Tail::ChannelsLast;
  expect_rewritten(last, 2, "channels-last");
  // Non-square kernel, one channel, no bias.
  ConvCase mono = patchify({1, 1, 6, 10}, {17, 1, 3, 5});
  mono.bias = false;
  expect_rewritten(mono, 1, "one channel, 3x5 kernel, no bias");
  // k = 1 with stride 1: a 1x1 Conv is a GEMM over pixels too; attributes left to defaults.
  ConvCase one{{2, 7, 3, 5}, {9, 7, 1, 1}, {}};
  one.tail = Tail::ChannelsLast;
  expect_rewritten(one, 2, "1x1 conv");
  // 1-D (channels-last is Transpose(0,2,1) there) and 3-D, both tails.
  ConvCase line = patchify({2, 4, 12}, {6, 4, 3});
  line.tail = Tail::ChannelsLast;
  expect_rewritten(line, 2, "1-D channels-last");
  expect_rewritten(patchify({2, 4, 12}, {6, 4, 3}), 2, "1-D tokens");
  expect_rewritten(patchify({1, 2, 4, 6, 4}, {3, 2, 2, 3, 2}), 1, "3-D tokens");
  ConvCase cube = patchify({1, 2, 4, 6, 4}, {3, 2, 2, 3, 2});
  cube.tail = Tail::ChannelsLast;
  expect_rewritten(cube, 1, "3-D channels-last");
  // Explicit zero pads, unit dilations and auto_pad VALID say the same as no attributes.
  ConvCase valid = patchify({1, 3, 8, 8}, {4, 3, 2, 2});
  valid.attrs.push_back(Attribute::make_ints("pads", {0, 0, 0, 0}));
  valid.attrs.push_back(Attribute::make_ints("dilations", {1, 1}));
  valid.attrs.push_back(Attribute::make_string("auto_pad", "VALID"));
  expect_rewritten(valid, 1, "explicit zero pads");
  // SAME_* pads nothing when the stride is the kernel and divides the input.
  ConvCase same = patchify({1, 3, 8, 6}, {4, 3, 2, 3});
  same.attrs.push_back(Attribute::make_string("auto_pad", "SAME_UPPER"));
  expect_rewritten(same, 1, "auto_pad SAME_UPPER");
}

TEST(ConvPatchesToMatmul, SymbolicBatchIsCopiedByTheReshapes) {
  ConvCase c = patchify({Dim::symbol("batch"), 3, 8, 12}, {8, 3, 4, 4});
  c.tail = Tail::ChannelsLast;
  auto make = [&] { return conv_graph(c); };
  std::shared_ptr<Graph> original = make(), rewritten = make();
  run_pass(*rewritten, passes::conv_patches_to_matmul());
  ASSERT_EQ(count_ops(*rewritten, "Conv"), 0);
  EXPECT_EQ(rewritten->outputs()[0]->type.dims->front(), Dim::symbol("batch"));
  for (int64_t batch : {1, 3}) {
    const NamedTensors in = inputs_for(c, batch);
    EXPECT_LE(testing::max_relative_error(testing::run_graph(rewritten, in), testing::run_graph(original, in)), 1e-5)
        << "batch " << batch;
  }
}

TEST(ConvPatchesToMatmul, SymbolicBatchFlattenFromShapeStillWritesTokens) {
  // torch's x.flatten(2).transpose(1, 2) at a symbolic batch: the flatten's target is
  // computed from Shape(Y); that Shape is rebuilt from X's batch and Y goes.
  ConvCase c = patchify({Dim::symbol("batch"), 3, 8, 12}, {8, 3, 4, 4});
  c.flatten_from_shape = true;
  std::shared_ptr<Graph> original = conv_graph(c), rewritten = conv_graph(c);
  const OptimizeReport r = run_pass(*rewritten, passes::conv_patches_to_matmul());
  EXPECT_EQ(r.detail("Conv patches -> MatMul, tokens out"), 1) << r.to_text();
  EXPECT_EQ(count_ops(*rewritten, "Conv"), 0);
  EXPECT_EQ(count_ops(*rewritten, "Transpose"), 1);  // only the patch Transpose
  for (int64_t batch : {1, 2}) {
    const NamedTensors in = inputs_for(c, batch);
    EXPECT_LE(testing::max_relative_error(testing::run_graph(rewritten, in), testing::run_graph(original, in)), 1e-5)
        << "batch " << batch;
  }
}

TEST(ConvPatchesToMatmul, OtherConvsStay) {
  auto stays = [](ConvCase c, const std::string& why) {
    auto g = conv_graph(c);
    EXPECT_EQ(run_pass(*g, passes::conv_patches_to_matmul()).passes[0].rewrites, 0) << why;
    EXPECT_EQ(count_ops(*g, "Conv"), 1) << why;
  };
  // Each case has the token tail, so only the property named keeps it a Conv.
  ConvCase base = patchify({1, 3, 8, 8}, {4, 3, 2, 2});
  ConvCase nchw = base;
  nchw.tail = Tail::Nchw;
  stays(nchw, "read as NCHW (measured slower as patches + MatMul + Transpose back)");
  ConvCase padded = base;
  padded.attrs.push_back(Attribute::make_ints("pads", {1, 1, 1, 1}));
  stays(padded, "padding");
  ConvCase dilated = base;
  dilated.attrs.push_back(Attribute::make_ints("dilations", {2, 2}));
  stays(dilated, "dilation");
  ConvCase grouped = patchify({1, 4, 8, 8}, {4, 2, 2, 2});
  grouped.attrs.push_back(Attribute::make_int("group", 2));
  stays(grouped, "groups");
  ConvCase overlapping{{1, 3, 8, 8}, {4, 3, 2, 2}, {Attribute::make_ints("strides", {1, 1})}};
  overlapping.tail = Tail::Tokens;
  stays(overlapping, "kernel != stride");
  ConvCase from_input = base;
  from_input.w_is_input = true;
  stays(from_input, "W not a constant");
  stays(patchify({1, 3, 9, 8}, {4, 3, 2, 2}), "height not a multiple of the kernel");
  stays(patchify({1, 3, Dim::symbol("h"), 8}, {4, 3, 2, 2}), "height unknown");
}

TEST(ConvPatchesToMatmul, TokenTailOnlyWhenItIsExactlyFlattenThenSwap) {
  // A Transpose that is not (0,2,1) after the flatten: no tail, the Conv stays.
  ConvCase c = patchify({1, 3, 8, 8}, {4, 3, 2, 2});
  auto g = conv_graph(c);
  for (Node* n : g->nodes())
    if (n->op_type() == "Transpose") {
      GraphPatch p(*g);
      Node* t = p.add_node("Transpose", {n->input(0)}, 1, {Attribute::make_ints("perm", {1, 0, 2})}, "", "swap01");
      p.replace_uses(n->output(0), t->output(0));
      p.remove_node(n);
      p.apply();
    }
  infer_graph(*g);
  EXPECT_EQ(run_pass(*g, passes::conv_patches_to_matmul()).passes[0].rewrites, 0);
  EXPECT_EQ(count_ops(*g, "Conv"), 1);
  // Y read by the tail and by something else: Y must stay, so the Conv does.
  auto shared = conv_graph(c);
  GraphPatch p(*shared);
  Node* extra = p.add_node("Relu", {shared->value("c")}, 1, {}, "", "extra");
  p.apply();
  shared->mark_output(extra->output(0));
  EXPECT_EQ(run_pass(*shared, passes::conv_patches_to_matmul()).passes[0].rewrites, 0);
}

// The exported ViT (torch.onnx.export) specialized to its batch, as `octet bench --dim`
// does: the patch Conv, its flatten and its transpose to tokens become one MatMulBias
// fed by the patch Transpose, and the whole optimized model on the optimized kernels
// matches the original on the reference kernels.
TEST(ConvPatchesToMatmul, VitFixtureSpecializedReadsTokensStraightFromTheMatMul) {
  const std::string path = std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/vit_tiny.onnx";
  for (int64_t batch : {1, 2}) {
    std::shared_ptr<Graph> original(load_model(path).graph.release()), g(load_model(path).graph.release());
    bind_symbols(*g, {{"batch", batch}});
    OptimizeOptions opts;
    opts.verify = true;
    const OptimizeReport r = optimize(*g, opts);
    EXPECT_EQ(r.detail("Conv patches -> MatMul, tokens out"), 1) << r.to_text();
    EXPECT_EQ(count_ops(*g, "Conv"), 0);
    const NamedTensors in = {{"pixel_values", testing::ramp(DType::Float32, {batch, 3, 224, 224}, 5, 1.0f)}};
    SessionOptions ref;
    ref.kernels = KernelChoice::Reference;
    const double err = testing::max_relative_error(Session(g).run(in), Session(original, ref).run(in));
    EXPECT_LE(err, 1e-5) << "batch " << batch;
  }
}

// Other vision exports (tests/models/export_patch_conv_fixtures.py, torch): a ConvNeXt-style
// stem read channels-last and a Conv1d transposed to tokens become MatMuls; a 1x1 Conv read
// as NCHW and a padded 3x3 stay. Unspecialized and at batch 2, against torch's outputs and
// the original graph on the reference kernels.
TEST(ConvPatchesToMatmul, TorchExportedPatchStemsMatchTorch) {
  const std::string dir = std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/";
  const Tensor x = read_npy(dir + "patch_convs_data/input_0.npy");
  const Tensor want_y = read_npy(dir + "patch_convs_data/output_0.npy");
  const Tensor want_tokens = read_npy(dir + "patch_convs_data/output_1.npy");
  for (bool specialize : {false, true}) {
    SCOPED_TRACE(specialize ? "batch 2" : "symbolic batch");
    std::shared_ptr<Graph> original(load_model(dir + "patch_convs.onnx").graph.release());
    std::shared_ptr<Graph> g(load_model(dir + "patch_convs.onnx").graph.release());
    if (specialize) bind_symbols(*g, {{"batch", 2}});
    OptimizeOptions opts;
    opts.verify = true;
    const OptimizeReport r = optimize(*g, opts);
    EXPECT_EQ(r.detail("Conv patches -> MatMul, channels-last out"), 2) << r.to_text();  // stem, Conv1d
    EXPECT_EQ(count_ops(*g, "Conv"), 2);                                                 // 1x1, 3x3
    const NamedTensors got = Session(g).run({{"x", x}});
    ASSERT_EQ(got.size(), 2u);
    EXPECT_LE(testing::max_relative_error({got[0]}, {{"y", want_y}}), 1e-5);
    EXPECT_LE(testing::max_relative_error({got[1]}, {{"tokens", want_tokens}}), 1e-5);
    SessionOptions ref;
    ref.kernels = KernelChoice::Reference;
    EXPECT_LE(testing::max_relative_error(got, Session(original, ref).run({{"x", x}})), 1e-5);
  }
}

}  // namespace
}  // namespace octet
