// Model -> file: what is written, what is preserved, and external data on save.
#include <gtest/gtest.h>

#include <google/protobuf/unknown_field_set.h>

#include "onnx/model_io.h"
#include "onnx_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;

onnx::ModelProto reparse(const fs::path& path) {
  onnx::ModelProto m;
  EXPECT_TRUE(m.ParseFromString(read_file(path)));
  return m;
}

// x -> Relu(a) -> Custom(b) -> y, with an initializer and stored intermediate types.
onnx::ModelProto chain_model() {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {std::string("batch"), 4});
  add_raw_initializer(g, "w", onnx::TensorProto::FLOAT, {4}, bytes_of(std::vector<float>{1, 2, 3, 4}));
  add_node(g, "Relu", {"x"}, {"a"}, "relu");
  add_node(g, "Add", {"a", "w"}, {"b"}, "add");
  add_node(g, "Mystery", {"b"}, {"y"}, "mystery")->set_domain("test.unknown");
  add_value_info(g, "a", onnx::TensorProto::FLOAT, {std::string("batch"), 4});
  add_value_info(g, "b", onnx::TensorProto::FLOAT, {std::string("unk__1"), 4});
  add_value_info(g, "x", onnx::TensorProto::FLOAT, {std::string("batch"), 4});  // a duplicate to drop
  add_output(g, "y", onnx::TensorProto::FLOAT, {std::string("batch"), std::string("out")});
  auto* op = m.add_opset_import();
  op->set_domain("test.unknown");
  op->set_version(1);
  return m;
}

TEST(OnnxExport, PreservesWhatTheIrDoesNotModel) {
  TempDir dir;
  onnx::ModelProto m = chain_model();
  m.set_producer_name("exporter");
  m.set_doc_string("doc");
  auto* kv = m.add_metadata_props();
  kv->set_key("k");
  kv->set_value("v");
  auto* fn = m.add_functions();
  fn->set_name("MyFn");
  fn->set_domain("local");
  m.add_training_info()->mutable_algorithm()->set_name("train");
  m.mutable_unknown_fields()->AddLengthDelimited(99, "from the future");
  m.mutable_graph()->mutable_unknown_fields()->AddLengthDelimited(98, "graph future");
  auto* ann = m.mutable_graph()->add_quantization_annotation();
  ann->set_tensor_name("a");
  auto* gone = m.mutable_graph()->add_quantization_annotation();
  gone->set_tensor_name("not_a_value");
  save_proto(m, dir / "in.onnx");

  Model model = load_model(dir / "in.onnx");
  save_model(model, dir / "out.onnx");
  onnx::ModelProto out = reparse(dir / "out.onnx");
  EXPECT_EQ(out.ir_version(), 8);
  EXPECT_EQ(out.producer_name(), "exporter");
  EXPECT_EQ(out.doc_string(), "doc");
  ASSERT_EQ(out.metadata_props_size(), 1);
  EXPECT_EQ(out.metadata_props(0).value(), "v");
  ASSERT_EQ(out.functions_size(), 1);
  EXPECT_EQ(out.functions(0).name(), "MyFn");
  ASSERT_EQ(out.training_info_size(), 1);
  EXPECT_EQ(out.training_info(0).algorithm().name(), "train");
  ASSERT_EQ(out.unknown_fields().field_count(), 1);
  EXPECT_EQ(out.unknown_fields().field(0).length_delimited(), "from the future");
  ASSERT_EQ(out.graph().unknown_fields().field_count(), 1);
  EXPECT_EQ(out.graph().unknown_fields().field(0).length_delimited(), "graph future");
  ASSERT_EQ(out.graph().quantization_annotation_size(), 1);
  EXPECT_EQ(out.graph().quantization_annotation(0).tensor_name(), "a");
  EXPECT_EQ(out.graph().name(), "test");
  ASSERT_EQ(out.opset_import_size(), 2);
  // Loading the saved file gives the same model again.
  Model again = load_model(dir / "out.onnx");
  EXPECT_EQ(again.graph->node_count(), 3u);
  EXPECT_EQ(again.metadata, model.metadata);
}

TEST(OnnxExport, InitializersAreRawLittleEndian) {
  TempDir dir;
  onnx::ModelProto m = chain_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  for (float v : {1.f, 2.f, 3.f, 4.f}) w->add_float_data(v);
  auto* h = m.mutable_graph()->add_initializer();  // unused, still written
  h->set_name("half");
  h->set_data_type(onnx::TensorProto::FLOAT16);
  h->add_dims(2);
  h->add_int32_data(0x3c00);
  h->add_int32_data(0xc000);
  save_proto(m, dir / "in.onnx");
  save_model(load_model(dir / "in.onnx"), dir / "out.onnx");
  onnx::ModelProto out = reparse(dir / "out.onnx");
  ASSERT_EQ(out.graph().initializer_size(), 2);
  const auto& ow = out.graph().initializer(0);
  EXPECT_EQ(ow.name(), "w");
  EXPECT_EQ(ow.float_data_size(), 0);
  EXPECT_EQ(ow.raw_data(), bytes_of(std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(out.graph().initializer(1).raw_data(), std::string("\x00\x3c\x00\xc0", 4));
}

TEST(OnnxExport, ValueInfoIsWrittenOncePerIntermediate) {
  TempDir dir;
  save_proto(chain_model(), dir / "in.onnx");
  Model model = load_model(dir / "in.onnx");
  save_model(model, dir / "out.onnx");
  onnx::ModelProto out = reparse(dir / "out.onnx");
  std::map<std::string, std::vector<std::string>> vi;
  for (const auto& v : out.graph().value_info()) {
    std::vector<std::string> dims;
    for (const auto& d : v.type().tensor_type().shape().dim())
      dims.push_back(d.has_dim_value() ? std::to_string(d.dim_value()) : d.dim_param());
    EXPECT_FALSE(vi.count(v.name())) << "duplicate value_info " << v.name();
    vi[v.name()] = dims;
  }
  // Inputs, initializers and outputs are typed where they are listed.
  EXPECT_EQ(vi.size(), 2u);
  EXPECT_EQ(vi["a"], (std::vector<std::string>{"batch", "4"}));
  // Stored as [unk__1, 4]; inference derives the input's symbol, and that is what is written.
  EXPECT_EQ(vi["b"], (std::vector<std::string>{"batch", "4"}));
  const auto& y = out.graph().output(0).type().tensor_type();
  EXPECT_EQ(y.shape().dim(0).dim_param(), "batch");
  EXPECT_EQ(y.shape().dim(1).dim_param(), "out");

  SaveOptions no_vi;
  no_vi.write_value_info = false;
  save_model(model, dir / "out2.onnx", no_vi);
  EXPECT_EQ(reparse(dir / "out2.onnx").graph().value_info_size(), 0);

  // Fresh symbols come back as fresh symbols, not as named ones: an anonymous input dim
  // stays unknown through inference, save and reload.
  onnx::ModelProto anon = chain_model();
  anon.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()
      ->mutable_dim(0)->set_dim_param("unk__7");
  save_proto(anon, dir / "anon.onnx");
  save_model(load_model(dir / "anon.onnx"), dir / "anon_out.onnx");
  Model again = load_model(dir / "anon_out.onnx");
  const Dim& x0 = again.graph->inputs()[0]->type.dims->at(0);
  EXPECT_TRUE(x0.is_symbol());
  EXPECT_TRUE(Dim::is_anonymous_name(x0.symbol_name())) << x0;
}

TEST(OnnxExport, SubgraphAttributesAreWrittenVerbatim) {
  TempDir dir;
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "cond", onnx::TensorProto::BOOL, {});
  add_input(g, "x", onnx::TensorProto::FLOAT, {2});
  auto* node = add_node(g, "If", {"cond"}, {"y"}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* a = node->add_attribute();
    a->set_name(branch);
    a->set_type(onnx::AttributeProto::GRAPH);
    a->set_doc_string("kept");
    auto* b = a->mutable_g();
    b->set_name(branch);
    add_node(b, "Neg", {"x"}, {std::string(branch) + "_out"});
    add_output(b, std::string(branch) + "_out", onnx::TensorProto::FLOAT, {2});
    b->mutable_unknown_fields()->AddVarint(97, 1);
  }
  add_output(g, "y", onnx::TensorProto::FLOAT, {2});
  save_proto(m, dir / "in.onnx");
  Model model = load_model(dir / "in.onnx");
  ASSERT_EQ(model.graph->nodes()[0]->implicit_inputs().size(), 1u);
  save_model(model, dir / "out.onnx");
  onnx::ModelProto out = reparse(dir / "out.onnx");
  ASSERT_EQ(out.graph().node_size(), 1);
  for (int i = 0; i < 2; ++i)
    EXPECT_EQ(out.graph().node(0).attribute(i).SerializeAsString(), m.graph().node(0).attribute(i).SerializeAsString());
}

TEST(OnnxExport, OldIrListsInitializersAsInputs) {
  TempDir dir;
  onnx::ModelProto m = add_model({1, 2});
  m.set_ir_version(3);
  add_input(m.mutable_graph(), "w", onnx::TensorProto::FLOAT, {2});
  save_proto(m, dir / "in.onnx");
  save_model(load_model(dir / "in.onnx"), dir / "out.onnx");
  onnx::ModelProto out = reparse(dir / "out.onnx");
  ASSERT_EQ(out.graph().input_size(), 2);
  EXPECT_EQ(out.graph().input(1).name(), "w");

  m.set_ir_version(8);
  save_proto(m, dir / "in8.onnx");
  save_model(load_model(dir / "in8.onnx"), dir / "out8.onnx");
  EXPECT_EQ(reparse(dir / "out8.onnx").graph().input_size(), 1);
}

// ---------------------------------------------------------------- external data

onnx::ModelProto weights_model() {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {2048});
  std::vector<float> big(2048), mid(300), small(4);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.5f;
  for (size_t i = 0; i < mid.size(); ++i) mid[i] = -static_cast<float>(i);
  for (size_t i = 0; i < small.size(); ++i) small[i] = static_cast<float>(i) + 100;
  add_raw_initializer(g, "small", onnx::TensorProto::FLOAT, {4}, bytes_of(small));
  add_raw_initializer(g, "big", onnx::TensorProto::FLOAT, {2048}, bytes_of(big));
  add_raw_initializer(g, "mid", onnx::TensorProto::FLOAT, {300}, bytes_of(mid));
  add_raw_initializer(g, "big2", onnx::TensorProto::FLOAT, {2048}, bytes_of(big));
  add_node(g, "Add", {"x", "big"}, {"y"}, "add");
  add_output(g, "y", onnx::TensorProto::FLOAT, {2048});
  return m;
}

std::map<std::string, std::map<std::string, std::string>> external_entries(const onnx::ModelProto& m) {
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const auto& t : m.graph().initializer()) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) continue;
    for (const auto& kv : t.external_data()) out[t.name()][kv.key()] = kv.value();
  }
  return out;
}

TEST(OnnxExport, ExternalDataOneAlignedSideFile) {
  TempDir dir;
  save_proto(weights_model(), dir / "in.onnx");
  Model model = load_model(dir / "in.onnx");
  SaveOptions options;
  options.external_data = true;
  save_model(model, dir / "out.onnx", options);
  EXPECT_TRUE(fs::exists(dir / "out.onnx.data"));
  auto ext = external_entries(reparse(dir / "out.onnx"));
  EXPECT_EQ(ext.size(), 3u);  // "small" (16 bytes) stays inline
  EXPECT_FALSE(ext.count("small"));
  for (const auto& [name, kv] : ext) {
    EXPECT_EQ(kv.at("location"), "out.onnx.data");
    uint64_t offset = std::stoull(kv.at("offset"));
    uint64_t length = std::stoull(kv.at("length"));
    EXPECT_EQ(offset % (length >= 4096 ? 4096 : 64), 0u) << name;
  }
  Model again = load_model(dir / "out.onnx");
  for (const char* name : {"small", "big", "mid", "big2"}) {
    const Tensor& a = *model.graph->value(name)->constant();
    const Tensor& b = *again.graph->value(name)->constant();
    ASSERT_EQ(a.bytes(), b.bytes());
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.bytes()), 0) << name;
  }
  EXPECT_FALSE(again.graph->value("big")->constant()->buffer()->owns_memory());  // mapped

  options.external_file = "weights.bin";
  options.external_threshold = 8;
  save_model(model, dir / "out2.onnx", options);
  auto ext2 = external_entries(reparse(dir / "out2.onnx"));
  EXPECT_EQ(ext2.size(), 4u);
  EXPECT_EQ(ext2["small"]["location"], "weights.bin");
}

TEST(OnnxExport, ExternalFileMustStayInTheFolder) {
  TempDir dir;
  save_proto(weights_model(), dir / "in.onnx");
  Model model = load_model(dir / "in.onnx");
  SaveOptions options;
  options.external_data = true;
  for (std::string bad : {"../w.bin", "/tmp/w.bin", "sub/w.bin", "..", "out.onnx"}) {
    options.external_file = bad;
    expect_error([&] { save_model(model, dir / "out.onnx", options); }, "external data file '" + bad + "'");
  }
  EXPECT_FALSE(fs::exists(dir / "out.onnx"));
}

TEST(OnnxExport, SavingOverTheMappedFileWorks) {
  TempDir dir;
  save_proto(weights_model(), dir / "in.onnx");
  SaveOptions options;
  options.external_data = true;
  save_model(load_model(dir / "in.onnx"), dir / "model.onnx", options);
  Model model = load_model(dir / "model.onnx");  // weights mapped from model.onnx.data
  ASSERT_FALSE(model.graph->value("big")->constant()->buffer()->owns_memory());
  options.external_threshold = 8;  // a different layout, so the side file really changes
  save_model(model, dir / "model.onnx", options);
  EXPECT_EQ(model.graph->value("big")->constant()->to_float_vector()[7], 3.5f);  // old mapping intact
  Model again = load_model(dir / "model.onnx");
  EXPECT_EQ(again.graph->value("big")->constant()->to_float_vector()[7], 3.5f);
  EXPECT_EQ(again.graph->value("small")->constant()->to_float_vector()[3], 103.f);
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << "left behind: " << e.path();
}

TEST(OnnxExport, TooBigForProtobufSwitchesToExternalData) {
  TempDir dir;
  save_proto(weights_model(), dir / "in.onnx");
  Model model = load_model(dir / "in.onnx");
  SaveOptions options;
  options.max_inline_bytes = 4096;  // stands in for protobuf's 2 GiB
  auto warnings = save_model(model, dir / "out.onnx", options);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("too many for one protobuf file"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("'out.onnx.data'"), std::string::npos) << warnings[0];
  EXPECT_EQ(external_entries(reparse(dir / "out.onnx")).size(), 3u);
  EXPECT_EQ(load_model(dir / "out.onnx").graph->initializers().size(), 4u);
}

TEST(OnnxExport, UnwritableDestinationIsAnError) {
  TempDir dir;
  save_proto(add_model({1}), dir / "in.onnx");
  Model model = load_model(dir / "in.onnx");
  expect_error([&] { save_model(model, dir / "no" / "such" / "out.onnx"); }, "cannot write");
}

}  // namespace
}  // namespace octet
