// The optimizer on the real exporter fixtures: the optimized graph computes what the
// original computes (same Session, same inputs, two bindings of the symbolic dims), the
// pipeline reaches its fixed point, and each model gets the fusions its exporter's
// patterns call for. Prints each fixture's report (nodes before/after, per-pass counts).
//
// Tolerances, relative to the largest reference magnitude of each output: float32 1e-5
// (fused ops round once where the chains they replace rounded at every step); float16
// 5e-3 and bfloat16 3e-2, the tolerances half_precision_test.cpp documents for these
// models against float32.
#include <gtest/gtest.h>

#include <iostream>

#include "onnx/model_io.h"
#include "pass_test_util.h"
#include "passes/specialize.h"

namespace octet {
namespace {

using testing::count_ops;

std::shared_ptr<Graph> load(const std::string& name) {
  Model m = load_model(std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/" + name + ".onnx");
  return std::shared_ptr<Graph>(std::move(m.graph));
}

// Inputs for every required input: token ids within the tiny vocabularies, a padded
// attention mask, alternating token types, smooth float data elsewhere. `batch` and `seq`
// bind the named dims; any other symbolic dim gets `seq`.
NamedTensors inputs_for(const Graph& g, int64_t batch, int64_t seq) {
  NamedTensors in;
  for (const Value* v : g.inputs()) {
    std::vector<int64_t> shape;
    for (const Dim& d : *v->type.dims) {
      if (auto c = d.constant()) shape.push_back(*c);
      else shape.push_back(d.is_symbol() && d.symbol_name() == "batch" ? batch : seq);
    }
    if (v->type.dtype == DType::Int64) {
      std::vector<int64_t> data(static_cast<size_t>(shape_numel(shape)));
      for (size_t i = 0; i < data.size(); ++i) {
        const size_t pos = i % static_cast<size_t>(shape.back());
        if (v->name() == "attention_mask") data[i] = pos + 2 < static_cast<size_t>(shape.back()) ? 1 : 0;
        else if (v->name() == "token_type_ids") data[i] = static_cast<int64_t>(pos % 2);
        else data[i] = static_cast<int64_t>((i * 37 + 11) % 997);
      }
      in.emplace_back(v->name(), Tensor::from_vector<int64_t>(shape, data));
    } else {
      in.emplace_back(v->name(), testing::ramp(v->type.dtype, shape, 0, 1.0f));
    }
  }
  return in;
}

double tolerance_for(const Graph& g) {
  DType t = g.outputs()[0]->type.dtype;
  return t == DType::Float16 ? 5e-3 : t == DType::BFloat16 ? 3e-2 : 1e-5;
}

// Optimizes a fresh copy of `name` and checks it against the original at two bindings.
OptimizeReport check_fixture(const std::string& name, std::shared_ptr<Graph>* optimized_out = nullptr) {
  std::shared_ptr<Graph> original = load(name), optimized = load(name);
  OptimizeOptions opts;
  opts.verify = true;
  OptimizeReport r = optimize(*optimized, opts);
  std::cout << name << ": " << r.to_text();
  EXPECT_TRUE(r.converged) << name;
  EXPECT_TRUE(r.warnings.empty()) << name << ": " << r.warnings.front();
  EXPECT_TRUE(verify_graph(*optimized).empty()) << name;
  EXPECT_EQ(count_ops(*optimized, "Constant"), 0) << name;
  EXPECT_EQ(count_ops(*optimized, "Identity"), 0) << name;

  Session before(original), after(optimized);
  for (auto [batch, seq] : {std::pair<int64_t, int64_t>{1, 7}, {2, 16}}) {
    NamedTensors in = inputs_for(*original, batch, seq);
    const double err = testing::max_relative_error(after.run(in), before.run(in));
    std::cout << "  batch " << batch << " seq " << seq << ": max relative difference " << err << "\n";
    EXPECT_LE(err, tolerance_for(*original)) << name << " batch " << batch << " seq " << seq;
  }
  // A second optimize finds nothing left to do.
  OptimizeReport again = optimize(*optimized, opts);
  EXPECT_EQ(again.nodes_before, again.nodes_after) << name;
  for (const PassStats& p : again.passes) EXPECT_EQ(p.changed_runs, 0) << name << ": " << p.name;
  if (optimized_out) *optimized_out = optimized;
  return r;
}

TEST(OptimizeFixtures, OptimizedModelsSaveAndLoadBack) {
  // The octet-domain ops, their opset import and the folded initializers survive a trip
  // through the ONNX writer and reader, and the reloaded model runs the same.
  for (const char* name : {"bert_tiny", "gpt2_tiny", "vit_tiny"}) {
    Model m = load_model(std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/" + name + ".onnx");
    optimize(*m.graph);
    const std::string path = std::string(OCTET_BINARY_DIR) + "/optimized_" + name + ".onnx";
    save_model(m, path);
    Model back = load_model(path);
    for (const std::string& w : back.warnings) ADD_FAILURE() << name << ": " << w;
    EXPECT_EQ(back.graph->node_count(), m.graph->node_count()) << name;
    EXPECT_EQ(back.graph->opset_version("octet"), 1) << name;
    auto g = std::shared_ptr<Graph>(std::move(m.graph)), h = std::shared_ptr<Graph>(std::move(back.graph));
    NamedTensors in = inputs_for(*g, 2, 5);
    EXPECT_EQ(testing::max_relative_error(testing::run_graph(h, in), testing::run_graph(g, in)), 0.0) << name;
  }
}

TEST(OptimizeFixtures, Bert) {
  for (const char* name : {"bert_tiny", "bert_tiny_fp16", "bert_tiny_bf16"}) {
    std::shared_ptr<Graph> g;
    OptimizeReport r = check_fixture(name, &g);
    EXPECT_EQ(r.detail("octet.Gelu(none)"), 2) << name;
    EXPECT_EQ(r.detail("octet.MatMulBias"), 12) << name;  // q, k, v, out, ffn in/out x 2 layers
    EXPECT_EQ(r.detail("octet.MatMulBias+gelu"), 2) << name;      // ffn in
    EXPECT_EQ(r.detail("octet.MatMulBias+residual"), 4) << name;  // attention out, ffn out
    EXPECT_EQ(count_ops(*g, "Erf"), 0) << name;
    EXPECT_EQ(r.detail("octet.Attention(mask)"), 2) << name;  // padding mask, one per layer
    // float32 only: the three Q/K/V projections of each layer become one packed product.
    EXPECT_EQ(r.detail("Q/K/V projections merged"), std::string(name) == "bert_tiny" ? 2 : 0) << name;
    EXPECT_EQ(count_ops(*g, "MatMul"), 0) << name;  // the attention products are inside it
    EXPECT_EQ(count_ops(*g, "LayerNormalization"), 5) << name;
  }
}

TEST(OptimizeFixtures, Gpt2) {
  for (const char* name : {"gpt2_tiny", "gpt2_tiny_fp16", "gpt2_tiny_bf16"}) {
    std::shared_ptr<Graph> g;
    OptimizeReport r = check_fixture(name, &g);
    EXPECT_EQ(r.detail("octet.Gelu(tanh)"), 2) << name;
    EXPECT_EQ(r.detail("octet.Attention(causal)"), 2) << name;  // the Trilu mask became causal=1
    EXPECT_EQ(r.detail("Split read in place"), 2) << name;       // c_attn's Q/K/V split, per layer
    EXPECT_EQ(count_ops(*g, "Trilu"), 0) << name;
    EXPECT_EQ(count_ops(*g, "Tanh"), 0) << name;
    EXPECT_EQ(count_ops(*g, "Pow"), 0) << name;  // the sqrt(head_dim) Pow folded too
  }
}

TEST(OptimizeFixtures, Vit) {
  for (const char* name : {"vit_tiny", "vit_tiny_fp16"}) {
    std::shared_ptr<Graph> g;
    OptimizeReport r = check_fixture(name, &g);
    EXPECT_EQ(r.detail("octet.Gelu(none)"), 2) << name;
    // qkv in-projection, mlp in/out x 2 blocks; in float32 also the patch embedding, whose
    // Conv became a MatMul writing the tokens (conv_patches_to_matmul.cpp).
    const bool fp32 = std::string(name) == "vit_tiny";
    EXPECT_EQ(r.detail("octet.MatMulBias"), fp32 ? 7 : 6) << name;
    EXPECT_EQ(r.detail("Conv patches -> MatMul, tokens out"), fp32 ? 1 : 0) << name;
    EXPECT_EQ(r.detail("octet.MatMulBias+gelu"), 2) << name;      // mlp in
    EXPECT_EQ(r.detail("octet.MatMulBias+residual"), 2) << name;  // mlp out
    EXPECT_EQ(r.detail("octet.Attention(none)"), 2) << name;
    EXPECT_EQ(count_ops(*g, "Softmax"), 0) << name;
    EXPECT_EQ(count_ops(*g, "Erf"), 0) << name;
  }
}

TEST(OptimizeFixtures, OptimizedOnFastKernelsMatchesTheOriginalOnReferenceKernels) {
  // End to end: fused graph on the optimized kernels (oneDNN GEMMs with their epilogues)
  // against the untouched graph on the scalar reference kernels.
  for (const char* name : {"bert_tiny", "gpt2_tiny", "vit_tiny"}) {
    std::shared_ptr<Graph> original = load(name), optimized = load(name);
    optimize(*optimized);
    SessionOptions ref;
    ref.kernels = KernelChoice::Reference;
    Session fast(optimized), slow(original, ref);
    EXPECT_GT(fast.optimized_nodes(), 0) << name;
    for (auto [batch, seq] : {std::pair<int64_t, int64_t>{1, 7}, {2, 16}}) {
      NamedTensors in = inputs_for(*original, batch, seq);
      const double err = testing::max_relative_error(fast.run(in), slow.run(in));
      std::cout << name << " batch " << batch << " seq " << seq << ": optimized graph and kernels vs reference "
                << err << " (" << fast.optimized_nodes() << " optimized nodes)\n";
      EXPECT_LE(err, 1e-5) << name << " batch " << batch << " seq " << seq;
    }
  }
}

// Specialized to one sample (and one token), as `octet bench --dim` and deployments do:
// ViT's batch-1 Transposes become views and its attention reads the packed QKV in place;
// GPT-2 at one token still fuses attention although its head-split Transposes then move
// only size-1 axes (transpose_to_reshape runs after the fusions have converged).
TEST(OptimizeFixtures, SpecializedToOneSampleAndOneToken) {
  struct Case {
    const char* name;
    int64_t seq;
    const char* attention;
  };
  for (const Case& c : {Case{"vit_tiny", 0, "octet.Attention(none)"}, Case{"gpt2_tiny", 1, "octet.Attention(causal)"},
                        Case{"bert_tiny", 1, "octet.Attention(mask)"}}) {
    std::shared_ptr<Graph> original = load(c.name), g = load(c.name);
    Bindings dims = {{"batch", 1}};
    if (c.seq) dims["seq"] = c.seq;
    bind_symbols(*g, dims);
    OptimizeOptions opts;
    opts.verify = true;
    const OptimizeReport r = optimize(*g, opts);
    EXPECT_EQ(r.detail(c.attention), 2) << c.name;
    if (std::string(c.name) == "vit_tiny") {
      EXPECT_EQ(r.detail("Transpose of unit axes"), 4) << r.to_text();  // [1,S,E] <-> [S,1,E] twice per block
      EXPECT_EQ(r.detail("Slice read in place"), 6) << r.to_text();     // Q, K, V per block
      EXPECT_EQ(count_ops(*g, "Slice"), 0);
    }
    SessionOptions ref;
    ref.kernels = KernelChoice::Reference;
    const NamedTensors in = inputs_for(*original, 1, c.seq ? c.seq : 1);
    const double err = testing::max_relative_error(Session(g).run(in), Session(original, ref).run(in));
    EXPECT_LE(err, 1e-5) << c.name;
  }
}

TEST(OptimizeFixtures, AnonymousDimModels) {
  for (const char* name : {"unk_constantofshape", "unk_constantofshape_anon"}) {
    std::shared_ptr<Graph> g;
    OptimizeReport r = check_fixture(name, &g);
    // Shape(x)[0] is the literal 1 in the first model and folds; the anonymous model's
    // dims are all unknowns, so only its Constant nodes fold.
    EXPECT_EQ(r.find("fold_shape_values")->rewrites, std::string(name) == "unk_constantofshape" ? 1 : 0) << name;
    EXPECT_EQ(count_ops(*g, "Gather"), 1) << name;  // only the symbolic seq is still read at run time
  }
}

}  // namespace
}  // namespace octet
