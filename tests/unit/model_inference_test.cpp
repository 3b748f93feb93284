// Inference on real exporter output, and the user-story-1 regression: anonymous dims
// (unk__N, empty, DynamicDimension.N) that meet a literal 1 must load, infer and run.
#include <gtest/gtest.h>

#include <cmath>

#include "onnx/model_io.h"
#include "runtime/session.h"

namespace octet {
namespace {

std::string fixture(const std::string& name) {
  return std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/" + name;
}

void expect_all_typed(const Graph& g, const std::string& model) {
  for (const Node* n : g.nodes())
    for (const Value* v : n->outputs()) {
      if (!v) continue;
      EXPECT_TRUE(v->type.known()) << model << ": " << n->describe() << " output '" << v->name() << "' untyped";
      EXPECT_TRUE(v->type.has_rank()) << model << ": " << n->describe() << " output '" << v->name()
                                      << "' has unknown rank";
    }
}

TEST(ModelInference, UnkDimsMeetingLiteralOneLoadInferAndRun) {
  Model m = load_model(fixture("unk_constantofshape.onnx"));
  const Graph& g = *m.graph;
  // The stored value_info says [unk__3, unk__4]; inference derives the literal 1 from
  // Shape(x)[0] and keeps seq symbolic. That is not a conflict worth a warning.
  EXPECT_EQ(dims_to_string(*g.value("ones")->type.dims), "[1,seq]");
  EXPECT_EQ(dims_to_string(*g.value("y")->type.dims), "[1,seq]");
  for (const auto& w : m.warnings) EXPECT_EQ(w.find("unk__"), std::string::npos) << w;

  Session session(std::shared_ptr<const Graph>(std::move(m.graph)));
  for (int64_t seq : {1, 5, 9}) {
    std::vector<float> x(static_cast<size_t>(seq));
    for (int64_t i = 0; i < seq; ++i) x[i] = 0.5f * static_cast<float>(i) - 1.0f;
    auto out = session.run({{"x", Tensor::from_vector<float>({1, seq}, x)}});
    ASSERT_EQ(out[0].second.shape(), (std::vector<int64_t>{1, seq}));
    const float* y = out[0].second.data<float>();
    for (int64_t i = 0; i < seq; ++i) EXPECT_FLOAT_EQ(y[i], (x[i] + 1) * x[i]);
  }
}

TEST(ModelInference, AnonymousInputDimsBecomeFreshSymbols) {
  Model m = load_model(fixture("unk_constantofshape_anon.onnx"));
  const Graph& g = *m.graph;
  const DimVector& in = *g.inputs()[0]->type.dims;
  ASSERT_EQ(in.size(), 2u);
  EXPECT_TRUE(in[0].is_symbol());
  EXPECT_TRUE(in[1].is_symbol());
  EXPECT_NE(in[0], in[1]);  // two anonymous dims are two unknowns, never unified
  // ones is [1, d1]; broadcasting it with x keeps x's unknown batch.
  EXPECT_EQ((*g.value("ones")->type.dims)[0], Dim(1));
  EXPECT_EQ(*g.value("y")->type.dims, in);

  Session session(std::shared_ptr<const Graph>(std::move(m.graph)));
  auto out = session.run({{"x", Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_EQ(out[0].second.shape(), (std::vector<int64_t>{3, 2}));
  EXPECT_FLOAT_EQ(out[0].second.data<float>()[5], 42.0f);
}

TEST(ModelInference, ExporterFixturesAreFullyTyped) {
  for (const char* name : {"bert_tiny.onnx", "vit_tiny.onnx", "gpt2_tiny.onnx", "bert_tiny_inferred.onnx",
                           "gpt2_tiny_inferred.onnx", "opset21_int4.onnx", "external_data/model.onnx"}) {
    Model m = load_model(fixture(name));
    expect_all_typed(*m.graph, name);
  }
}

TEST(ModelInference, AttentionShapesStaySymbolic) {
  Model bert = load_model(fixture("bert_tiny.onnx"));
  Model gpt = load_model(fixture("gpt2_tiny.onnx"));
  for (Model* m : {&bert, &gpt}) {
    int softmaxes = 0;
    for (const Node* n : m->graph->nodes()) {
      if (n->op_type() != "Softmax") continue;
      ++softmaxes;
      const DimVector& d = *n->output(0)->type.dims;
      ASSERT_EQ(d.size(), 4u) << n->describe();
      EXPECT_EQ(d[0], Dim::symbol("batch")) << n->describe() << " " << dims_to_string(d);
      EXPECT_TRUE(d[1].is_constant()) << n->describe() << " " << dims_to_string(d);  // heads
      EXPECT_EQ(d[2], Dim::symbol("seq")) << n->describe() << " " << dims_to_string(d);
      EXPECT_EQ(d[3], Dim::symbol("seq")) << n->describe() << " " << dims_to_string(d);
    }
    EXPECT_EQ(softmaxes, 2);
  }
  const Value* logits = gpt.graph->outputs()[0];
  EXPECT_EQ(dims_to_string(*logits->type.dims), "[batch,seq,1000]");
}

TEST(ModelInference, StoredUnkDimsNeverConflictWithInference) {
  // The shape-inferred copies carry hundreds of unk__N value_info dims where octet
  // derives literals or input symbols: none of those may produce a warning.
  for (const char* name : {"bert_tiny_inferred.onnx", "gpt2_tiny_inferred.onnx"}) {
    Model m = load_model(fixture(name));
    for (const auto& w : m.warnings) ADD_FAILURE() << name << ": " << w;
  }
}

}  // namespace
}  // namespace octet
