// ModelProto -> Model: graph structure, attributes, stored types, subgraphs.
#include <gtest/gtest.h>

#include "onnx/model_io.h"
#include "ops/op_registry.h"
#include "onnx_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;

Model load(const onnx::ModelProto& m, const TempDir& dir, const LoadOptions& options = {}) {
  return load_model(save_proto(m, dir / "model.onnx"), options);
}

TEST(OnnxImport, ModelFieldsAndGraph) {
  TempDir dir;
  onnx::ModelProto m = add_model({1, 2, 3});
  m.set_producer_name("pytorch");
  m.set_producer_version("1.13");
  m.set_domain("ai.test");
  m.set_model_version(7);
  m.set_doc_string("model doc");
  m.mutable_opset_import(0)->set_domain("ai.onnx");
  auto* extra = m.add_opset_import();
  extra->set_domain("com.microsoft");
  extra->set_version(1);
  auto* kv = m.add_metadata_props();
  kv->set_key("author");
  kv->set_value("me");
  m.mutable_graph()->set_doc_string("graph doc");
  m.mutable_graph()->mutable_node(0)->set_doc_string("node doc");

  Model model = load(m, dir);
  EXPECT_EQ(model.ir_version, 8);
  EXPECT_EQ(model.producer_name, "pytorch");
  EXPECT_EQ(model.producer_version, "1.13");
  EXPECT_EQ(model.domain, "ai.test");
  EXPECT_EQ(model.model_version, 7);
  EXPECT_EQ(model.doc_string, "model doc");
  EXPECT_EQ(model.metadata, (std::vector<std::pair<std::string, std::string>>{{"author", "me"}}));
  EXPECT_EQ(model.source_path, dir / "model.onnx");
  const Graph& g = *model.graph;
  EXPECT_EQ(g.name, "test");
  EXPECT_EQ(g.doc_string, "graph doc");
  EXPECT_EQ(g.opset_imports, (std::map<std::string, int64_t>{{"", 17}, {"com.microsoft", 1}}));
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0]->type.to_string(), "float32[3]");
  ASSERT_EQ(g.initializers().size(), 1u);
  EXPECT_EQ(g.initializers()[0]->constant()->to_float_vector(), (std::vector<float>{1, 2, 3}));
  ASSERT_EQ(g.node_count(), 1u);
  const Node* add = g.nodes()[0];
  EXPECT_EQ(add->name(), "add");
  EXPECT_EQ(add->doc_string, "node doc");
  EXPECT_EQ(add->opset(), 17);
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->producer(), add);
  ASSERT_TRUE(model.declared.count("y"));
  EXPECT_EQ(model.declared.at("y").to_string(), "float32[3]");
  EXPECT_EQ(g.outputs()[0]->type.dtype, DType::Float32);  // from inference or the stored type
  EXPECT_TRUE(verify_graph(g).empty());
}

TEST(OnnxImport, InitializerListedAsInputIsAnInitializer) {
  TempDir dir;
  onnx::ModelProto m = add_model({1, 2});
  add_input(m.mutable_graph(), "w", onnx::TensorProto::FLOAT, {2});  // as old exporters did
  Model model = load(m, dir);
  const Value* w = model.graph->value("w");
  EXPECT_TRUE(w->is_initializer());
  EXPECT_FALSE(w->is_graph_input());
  EXPECT_EQ(model.graph->inputs().size(), 1u);
  EXPECT_EQ(w->uses().size(), 1u);
}

TEST(OnnxImport, UnsortedNodesAreSorted) {
  TempDir dir;
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {2});
  add_node(g, "Neg", {"b"}, {"c"}, "third");
  add_node(g, "Relu", {"a"}, {"b"}, "second");
  add_node(g, "Abs", {"x"}, {"a"}, "first");
  add_output(g, "c", onnx::TensorProto::FLOAT, {2});
  Model model = load(m, dir);
  std::vector<std::string> names;
  for (const Node* n : model.graph->nodes()) names.push_back(n->name());
  EXPECT_EQ(names, (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_TRUE(verify_graph(*model.graph).empty());
}

TEST(OnnxImport, StructuralErrorsNameFileAndNode) {
  TempDir dir;
  const std::string file = (dir / "model.onnx").string();
  {
    onnx::ModelProto m = make_model();
    auto* g = m.mutable_graph();
    add_input(g, "x", onnx::TensorProto::FLOAT, {2});
    add_node(g, "Add", {"x", "b"}, {"a"}, "n1");
    add_node(g, "Relu", {"a"}, {"b"}, "n2");
    add_output(g, "b", onnx::TensorProto::FLOAT, {2});
    expect_error([&] { load(m, dir); }, file + ": the graph has a cycle through node 'n1' (Add)");
  }
  {
    onnx::ModelProto m = make_model();
    auto* g = m.mutable_graph();
    add_input(g, "x", onnx::TensorProto::FLOAT, {2});
    add_node(g, "Add", {"x", "nowhere"}, {"y"}, "n1");
    add_output(g, "y", onnx::TensorProto::FLOAT, {2});
    expect_error([&] { load(m, dir); }, file + ": node 'n1' (Add): input 1 'nowhere' is not defined");
  }
  {
    onnx::ModelProto m = make_model();
    auto* g = m.mutable_graph();
    add_input(g, "x", onnx::TensorProto::FLOAT, {2});
    add_node(g, "Relu", {"x"}, {"y"}, "n1");
    add_node(g, "Abs", {"x"}, {"y"}, "n2");
    add_output(g, "y", onnx::TensorProto::FLOAT, {2});
    expect_error([&] { load(m, dir); }, "output 'y' is already defined elsewhere");
  }
  {
    onnx::ModelProto m = add_model({1});
    add_output(m.mutable_graph(), "ghost", onnx::TensorProto::FLOAT, {1});
    expect_error([&] { load(m, dir); }, file + ": graph output 'ghost' is not produced by any node, input or initializer");
  }
  {
    onnx::ModelProto m = add_model({1});
    m.mutable_graph()->mutable_node(0)->clear_op_type();
    expect_error([&] { load(m, dir); }, "node has no op_type");
  }
  {
    onnx::ModelProto m = add_model({1});
    add_raw_initializer(m.mutable_graph(), "w", onnx::TensorProto::FLOAT, {1}, std::string(4, '\0'));
    expect_error([&] { load(m, dir); }, file + ": value name 'w' is defined twice");
  }
}

TEST(OnnxImport, TwoBitAndE8M0Types) {
  // int2 data with a float8e8m0 (MX) scale, opset 25 / IR 13.
  TempDir dir;
  onnx::ModelProto m = make_model(25, 13);
  auto* g = m.mutable_graph();
  add_input(g, "x", dtype_to_onnx(DType::Int2), {5});  // newer than this onnx.proto
  add_raw_initializer(g, "s", dtype_to_onnx(DType::Float8E8M0), {}, std::string("\x7e", 1));
  auto* n = add_node(g, "DequantizeLinear", {"x", "s"}, {"y"}, "dq");
  auto* a = n->add_attribute();
  a->set_name("output_dtype");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(onnx::TensorProto::FLOAT);
  add_output(g, "y", onnx::TensorProto::FLOAT, {5});
  Model model = load(m, dir);
  EXPECT_TRUE(model.warnings.empty()) << model.warnings.front();
  EXPECT_EQ(model.graph->value("x")->type.to_string(), "int2[5]");
  EXPECT_EQ(model.graph->value("s")->type.to_string(), "float8e8m0[]");
  EXPECT_EQ(model.graph->value("y")->type.to_string(), "float32[5]");
}

TEST(OnnxImport, GraphInputTypeErrors) {
  TempDir dir;
  {
    onnx::ModelProto m = add_model({1});
    m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(999);
    expect_error([&] { load(m, dir); }, "graph input 'x' has unknown elem_type 999");
  }
  {
    // float6e2m3 (27) is the first code octet does not implement.
    onnx::ModelProto m = add_model({1});
    m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(27);
    expect_error([&] { load(m, dir); }, "graph input 'x' has unknown elem_type 27 (octet does not implement ONNX's float6e2m3");
  }
  {
    onnx::ModelProto m = add_model({1});
    m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_sequence_type();
    expect_error([&] { load(m, dir); }, "graph input 'x' has a sequence type; octet supports tensor inputs only");
  }
  {
    onnx::ModelProto m = add_model({1});
    m.mutable_graph()->mutable_input(0)->clear_type();
    expect_error([&] { load(m, dir); }, "graph input 'x' has no type");
  }
}

TEST(OnnxImport, UnnamedNodesGetUniqueNames) {
  TempDir dir;
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {2});
  add_node(g, "Relu", {"x"}, {"a"});
  add_node(g, "Relu", {"a"}, {"b"}, "Relu_0");  // a file name the generator must not reuse
  add_node(g, "Relu", {"b"}, {"c"});
  add_output(g, "c", onnx::TensorProto::FLOAT, {2});
  Model model = load(m, dir);
  std::set<std::string> names;
  for (const Node* n : model.graph->nodes()) names.insert(n->name());
  EXPECT_EQ(names.size(), 3u);
  EXPECT_TRUE(names.count("Relu_0"));
}

TEST(OnnxImport, ConstantNodesAndAttributes) {
  TempDir dir;
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {3});
  auto* c = add_node(g, "Constant", {}, {"c"}, "const");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(3);
  for (float v : {1.f, 2.f, 3.f}) a->mutable_t()->add_float_data(v);
  auto* n = add_node(g, "Custom", {"x", "c"}, {"y"}, "custom");
  n->set_domain("my.domain");
  auto attr = [&](const char* name, onnx::AttributeProto::AttributeType type) {
    auto* p = n->add_attribute();
    p->set_name(name);
    p->set_type(type);
    return p;
  };
  attr("f", onnx::AttributeProto::FLOAT)->set_f(0.5f);
  attr("i", onnx::AttributeProto::INT)->set_i(-3);
  attr("s", onnx::AttributeProto::STRING)->set_s("tanh");
  auto* fs_ = attr("fs", onnx::AttributeProto::FLOATS);
  fs_->add_floats(1.f);
  fs_->add_floats(2.f);
  auto* is = attr("is", onnx::AttributeProto::INTS);
  is->add_ints(4);
  auto* ss = attr("ss", onnx::AttributeProto::STRINGS);
  ss->add_strings("a");
  auto* ts = attr("ts", onnx::AttributeProto::TENSORS);
  ts->add_tensors()->set_data_type(onnx::TensorProto::INT64);
  ts->mutable_tensors(0)->add_int64_data(9);
  auto* tp = attr("tp", onnx::AttributeProto::TYPE_PROTO);
  tp->mutable_tp()->mutable_tensor_type()->set_elem_type(1);
  auto* old = n->add_attribute();  // IR < 3 files leave `type` unset
  old->set_name("old");
  old->set_i(11);
  auto* ref = n->add_attribute();
  ref->set_name("ref");
  ref->set_type(onnx::AttributeProto::INT);
  ref->set_ref_attr_name("outer");
  add_output(g, "y", onnx::TensorProto::FLOAT, {3});
  auto* op = m.add_opset_import();
  op->set_domain("my.domain");
  op->set_version(1);

  Model model = load(m, dir);
  const Graph& graph = *model.graph;
  ASSERT_EQ(graph.node_count(), 2u);
  const Node* cn = graph.nodes()[0];
  EXPECT_EQ(cn->op_type(), "Constant");
  ASSERT_NE(cn->attr_tensor("value"), nullptr);
  EXPECT_EQ(cn->attr_tensor("value")->to_float_vector(), (std::vector<float>{1, 2, 3}));
  const Node* cu = graph.nodes()[1];
  EXPECT_EQ(cu->domain(), "my.domain");
  EXPECT_EQ(cu->attr_float("f", 0), 0.5f);
  EXPECT_EQ(cu->attr_int("i", 0), -3);
  EXPECT_EQ(cu->attr_string("s", ""), "tanh");
  EXPECT_EQ(cu->attr_floats("fs"), (std::vector<float>{1, 2}));
  EXPECT_EQ(cu->attr_ints("is"), (std::vector<int64_t>{4}));
  EXPECT_EQ(cu->find_attr("ss")->strings, (std::vector<std::string>{"a"}));
  ASSERT_EQ(cu->find_attr("ts")->tensors.size(), 1u);
  EXPECT_EQ(cu->find_attr("ts")->tensors[0]->to_int64_vector(), (std::vector<int64_t>{9}));
  EXPECT_EQ(cu->find_attr("tp")->kind, Attribute::Kind::TypeProto);
  EXPECT_FALSE(cu->find_attr("tp")->opaque_proto.empty());
  EXPECT_EQ(cu->attr_int("old", 0), 11);
  EXPECT_FALSE(cu->find_attr("ref")->opaque_proto.empty());
}

TEST(OnnxImport, ConstantAttributeTensorWithExternalData) {
  TempDir dir;
  write_file(dir / "c.bin", bytes_of(std::vector<float>{4, 5}));
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  auto* a = add_node(g, "Constant", {}, {"y"}, "const")->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(2);
  set_external(a->mutable_t(), "c.bin", 0, 8);
  add_output(g, "y", onnx::TensorProto::FLOAT, {2});
  Model model = load(m, dir);
  EXPECT_EQ(model.graph->nodes()[0]->attr_tensor("value")->to_float_vector(), (std::vector<float>{4, 5}));

  set_external(a->mutable_t(), "../c.bin", 0, 8);
  expect_error([&] { load(m, dir); }, "node 'const' (Constant) attribute 'value': external data location");
}

TEST(OnnxImport, SparseInitializersBecomeDense) {
  TempDir dir;
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {2, 3});
  auto* s = g->add_sparse_initializer();
  s->add_dims(2);
  s->add_dims(3);
  s->mutable_values()->set_name("w");
  s->mutable_values()->set_data_type(onnx::TensorProto::FLOAT);
  s->mutable_values()->add_dims(2);
  s->mutable_values()->add_float_data(5);
  s->mutable_values()->add_float_data(7);
  s->mutable_indices()->set_data_type(onnx::TensorProto::INT64);
  s->mutable_indices()->add_dims(2);
  s->mutable_indices()->add_int64_data(1);
  s->mutable_indices()->add_int64_data(5);
  add_node(g, "Add", {"x", "w"}, {"y"}, "add");
  add_output(g, "y", onnx::TensorProto::FLOAT, {2, 3});
  Model model = load(m, dir);
  EXPECT_EQ(model.graph->value("w")->constant()->to_float_vector(), (std::vector<float>{0, 5, 0, 0, 0, 7}));

  // Coordinate form: [nnz, rank].
  s->mutable_indices()->clear_int64_data();
  s->mutable_indices()->clear_dims();
  s->mutable_indices()->add_dims(2);
  s->mutable_indices()->add_dims(2);
  for (int64_t v : {1, 0, 0, 2}) s->mutable_indices()->add_int64_data(v);
  model = load(m, dir);
  EXPECT_EQ(model.graph->value("w")->constant()->to_float_vector(), (std::vector<float>{0, 0, 7, 5, 0, 0}));

  s->mutable_indices()->set_int64_data(0, 2);  // row 2 of 2
  expect_error([&] { load(m, dir); }, "sparse_initializer 'w': sparse index 2 out of range for axis 0");
}

TEST(OnnxImport, StoredDimsBecomeSymbols) {
  TempDir dir;
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {std::string("batch"), std::string("unk__3"), 768});
  add_node(g, "Mystery", {"x"}, {"a"}, "m1")->set_domain("test.unknown");
  add_node(g, "Mystery", {"a"}, {"y"}, "m2")->set_domain("test.unknown");
  // unk__3 again, an empty name, no name at all, a DynamicDimension and a -1.
  add_value_info(g, "a", onnx::TensorProto::FLOAT,
                 {std::string("unk__3"), std::string(""), std::string("<none>"), std::string("DynamicDimension.0"),
                  int64_t{-1}});
  auto* no_shape = g->add_value_info();
  no_shape->set_name("rankless");
  no_shape->mutable_type()->mutable_tensor_type()->set_elem_type(1);
  add_output(g, "y", onnx::TensorProto::FLOAT, {std::string("batch"), std::string("seq")});
  auto* op = m.add_opset_import();
  op->set_domain("test.unknown");
  op->set_version(1);

  Model model = load(m, dir);
  const DimVector& in = *model.graph->value("x")->type.dims;
  EXPECT_EQ(in[0], Dim::symbol("batch"));
  EXPECT_TRUE(in[1].is_symbol());
  EXPECT_TRUE(Dim::is_anonymous_name(in[1].symbol_name()));
  EXPECT_EQ(in[2], Dim(768));

  const DimVector& a = *model.declared.at("a").dims;
  ASSERT_EQ(a.size(), 5u);
  // Two unk__3 are not the same symbol; every unknown dim is its own fresh symbol.
  EXPECT_NE(a[0], in[1]);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(a[i].is_symbol()) << i;
    for (size_t j = 0; j < i; ++j) EXPECT_NE(a[i], a[j]) << i << " vs " << j;
  }
  EXPECT_FALSE(model.declared.at("rankless").has_rank());
  EXPECT_EQ(model.declared.at("y").dims->at(1), Dim::symbol("seq"));
  // Unknown ops keep their stored types.
  EXPECT_EQ(model.graph->value("a")->type, model.declared.at("a"));
}

TEST(OnnxImport, StoredTypeConflictsAreWarnings) {
  TempDir dir;
  onnx::ModelProto m = add_model({1, 2, 3});
  auto* g = m.mutable_graph();
  add_value_info(g, "w", onnx::TensorProto::FLOAT, {4});   // the initializer has 3
  add_value_info(g, "x", onnx::TensorProto::INT64, {3});   // the input is float
  add_value_info(g, "q", onnx::TensorProto::FLOAT, {3});   // names nothing: harmless
  auto* bad = g->add_value_info();
  bad->set_name("y");
  bad->mutable_type()->mutable_tensor_type()->set_elem_type(999);
  Model model = load(m, dir);
  ASSERT_GE(model.warnings.size(), 3u);
  std::string all;
  for (const auto& w : model.warnings) all += w + "\n";
  EXPECT_NE(all.find("value_info says 'w' is float32[4] but it is float32[3]"), std::string::npos) << all;
  EXPECT_NE(all.find("'x' is int64[3]"), std::string::npos) << all;
  EXPECT_NE(all.find("value_info 'y' has unknown elem_type 999 (octet does not implement ONNX's float6e2m3, "
                     "float6e3m2 or newer types)"),
            std::string::npos)
      << all;
  EXPECT_EQ(model.graph->value("w")->type.to_string(), "float32[3]");
}

TEST(OnnxImport, InferenceConflictIsAWarning) {
  if (!OpRegistry::global().find("", "Relu") || !OpRegistry::global().find("", "Relu")->infer)
    GTEST_SKIP() << "no inference rule for Relu in this build yet";
  TempDir dir;
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {2, 3});
  add_node(g, "Relu", {"x"}, {"y"}, "relu");
  add_value_info(g, "y", onnx::TensorProto::FLOAT, {2, 4});
  add_output(g, "y", onnx::TensorProto::FLOAT, {2, 4});
  Model model = load(m, dir);
  EXPECT_FALSE(model.warnings.empty());
  EXPECT_EQ(model.graph->value("y")->type.to_string(), "float32[2,3]");
}

TEST(OnnxImport, NoInferenceKeepsStoredTypes) {
  TempDir dir;
  onnx::ModelProto m = add_model({1, 2});
  add_value_info(m.mutable_graph(), "y", onnx::TensorProto::FLOAT, {std::string("n")});
  m.mutable_graph()->mutable_output(0)->clear_type();
  LoadOptions options;
  options.infer_types = false;
  Model model = load(m, dir, options);
  EXPECT_EQ(model.graph->value("y")->type.to_string(), "float32[n]");
}

// An If whose branches read outer values, one of them only from a Loop nested inside.
onnx::ModelProto if_model() {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "cond", onnx::TensorProto::BOOL, {});
  add_input(g, "x", onnx::TensorProto::FLOAT, {4});
  add_raw_initializer(g, "bias", onnx::TensorProto::FLOAT, {4}, bytes_of(std::vector<float>{1, 2, 3, 4}));
  add_node(g, "Relu", {"x"}, {"h"}, "relu");
  add_node(g, "Neg", {"x"}, {"deep"}, "neg");
  auto* node = add_node(g, "If", {"cond"}, {"y"}, "if");

  auto* then_attr = node->add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(onnx::AttributeProto::GRAPH);
  auto* then_g = then_attr->mutable_g();
  then_g->set_name("then");
  add_node(then_g, "Add", {"h", "bias"}, {"t"}, "then_add");
  add_node(then_g, "Identity", {"t"}, {"t_out"}, "then_id");  // 't' is local to the branch
  add_output(then_g, "t_out", onnx::TensorProto::FLOAT, {4});

  auto* else_attr = node->add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(onnx::AttributeProto::GRAPH);
  auto* else_g = else_attr->mutable_g();
  else_g->set_name("else");
  auto* loop = add_node(else_g, "Loop", {"", "", "h"}, {"e_out"}, "loop");
  auto* body_attr = loop->add_attribute();
  body_attr->set_name("body");
  body_attr->set_type(onnx::AttributeProto::GRAPH);
  auto* body = body_attr->mutable_g();
  body->set_name("body");
  add_input(body, "i", onnx::TensorProto::INT64, {});
  add_input(body, "c", onnx::TensorProto::BOOL, {});
  add_input(body, "acc", onnx::TensorProto::FLOAT, {4});
  add_node(body, "Add", {"acc", "deep"}, {"acc2"}, "body_add");  // 'deep' is two scopes out
  add_node(body, "Identity", {"c"}, {"c2"}, "body_c");
  add_output(body, "c2", onnx::TensorProto::BOOL, {});
  add_output(body, "acc2", onnx::TensorProto::FLOAT, {4});
  add_output(else_g, "e_out", onnx::TensorProto::FLOAT, {4});

  add_output(g, "y", onnx::TensorProto::FLOAT, {4});
  return m;
}

TEST(OnnxImport, SubgraphOuterReadsAreImplicitInputs) {
  TempDir dir;
  onnx::ModelProto m = if_model();
  Model model = load(m, dir);
  const Graph& g = *model.graph;
  const Node* node = nullptr;
  for (const Node* n : g.nodes())
    if (n->op_type() == "If") node = n;
  ASSERT_NE(node, nullptr);
  std::vector<std::string> implicit;
  for (const Value* v : node->implicit_inputs()) implicit.push_back(v->name());
  EXPECT_EQ(implicit, (std::vector<std::string>{"h", "bias", "deep"}));
  // Dead-code logic and "is this initializer shared" see the subgraph's reads.
  const Value* bias = g.value("bias");
  ASSERT_EQ(bias->uses().size(), 1u);
  EXPECT_TRUE(bias->uses()[0].implicit);
  EXPECT_EQ(g.value("deep")->uses().size(), 1u);
  EXPECT_EQ(g.value("h")->uses().size(), 1u);
  EXPECT_TRUE(verify_graph(g).empty());
  const Attribute* then_branch = node->find_attr("then_branch");
  ASSERT_NE(then_branch, nullptr);
  EXPECT_EQ(then_branch->kind, Attribute::Kind::Graph);
  onnx::AttributeProto original = m.graph().node(2).attribute(0);
  EXPECT_EQ(then_branch->opaque_proto, original.SerializeAsString());
}

TEST(OnnxImport, SubgraphNodesAreOrderedAfterWhatTheyRead) {
  TempDir dir;
  onnx::ModelProto m = if_model();
  // Put the If first: it must still come after Relu and Neg, which its branches read.
  auto* nodes = m.mutable_graph()->mutable_node();
  nodes->SwapElements(0, 2);
  Model model = load(m, dir);
  EXPECT_EQ(model.graph->nodes().back()->op_type(), "If");
  EXPECT_TRUE(verify_graph(*model.graph).empty());
}

TEST(OnnxImport, SubgraphReadingAnUndefinedNameIsAnError) {
  TempDir dir;
  onnx::ModelProto m = if_model();
  auto* then_g = m.mutable_graph()->mutable_node(2)->mutable_attribute(0)->mutable_g();
  then_g->mutable_node(0)->set_input(1, "missing");
  expect_error([&] { load(m, dir); }, "node 'if' (If): a subgraph reads 'missing', which the graph does not define");
}

}  // namespace
}  // namespace octet
