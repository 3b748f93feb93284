// model_files (analysis/model_files.h): the files a model consists of, found by a streaming
// skim of the ModelProto that never reads tensor payloads; checked against what the
// ModelProto itself says, on every place an external location can sit, and on bad files.
#include <gtest/gtest.h>

#include "analysis/model_files.h"
#include "onnx_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;

onnx::TensorProto* tensor_attribute(onnx::GraphProto* g, const std::string& output, const std::string& location) {
  onnx::NodeProto* n = add_node(g, "Constant", {}, {output}, output + "_node");
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto* t = a->mutable_t();
  t->set_name(output);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(2);
  set_external(t, location, 0, 8);
  return t;
}

// Locations in initializers (two files, one twice), a sparse initializer's values and
// indices, and a Constant's tensor attribute; large raw tensors and other fields between
// them, which the skim has to step over.
onnx::ModelProto model_with_locations() {
  onnx::ModelProto m = make_model();
  m.set_doc_string(std::string(5000, 'd'));
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {4});
  add_raw_initializer(g, "raw_before", onnx::TensorProto::FLOAT, {20000}, std::string(80000, '\1'));
  set_external(add_raw_initializer(g, "w1", onnx::TensorProto::FLOAT, {4}, ""), "a.bin", 0, 16);
  set_external(add_raw_initializer(g, "w2", onnx::TensorProto::FLOAT, {4}, ""), "a.bin", 16, 16);
  set_external(add_raw_initializer(g, "w3", onnx::TensorProto::FLOAT, {4}, ""), "sub/b.bin", 0, 16);
  // A location entry on a tensor whose data is not external is not a file of the model.
  onnx::TensorProto* inline_tensor = add_raw_initializer(g, "inline", onnx::TensorProto::FLOAT, {1}, "abcd");
  auto* kv = inline_tensor->add_external_data();
  kv->set_key("location");
  kv->set_value("not_used.bin");
  onnx::SparseTensorProto* sparse = g->add_sparse_initializer();
  sparse->add_dims(8);
  sparse->mutable_values()->set_name("sparse");
  sparse->mutable_values()->set_data_type(onnx::TensorProto::FLOAT);
  sparse->mutable_values()->add_dims(2);
  set_external(sparse->mutable_values(), "c.bin", 0, 8);
  sparse->mutable_indices()->set_name("sparse_idx");
  sparse->mutable_indices()->set_data_type(onnx::TensorProto::INT64);
  sparse->mutable_indices()->add_dims(2);
  set_external(sparse->mutable_indices(), "d.bin", 0, 16);
  tensor_attribute(g, "k", "e.bin");
  add_node(g, "Add", {"x", "w1"}, {"y"}, "add");
  add_output(g, "y", onnx::TensorProto::FLOAT, {4});
  return m;
}

constexpr const char* kSideFiles[] = {"a.bin", "sub/b.bin", "c.bin", "d.bin", "e.bin"};

void write_side_files(const fs::path& dir) {
  for (const char* f : kSideFiles) write_file(dir / f, std::string(32, '\0'));
}

TEST(ModelFiles, FindsEveryExternalLocationAndSumsTheFiles) {
  TempDir dir;
  const fs::path model = save_proto(model_with_locations(), dir.path() / "m.onnx");
  write_side_files(dir.path());
  const uint64_t expected = fs::file_size(model) + 32 * std::size(kSideFiles);
  const ModelFiles files = model_files(model);
  std::vector<std::string> names;
  for (const fs::path& p : files.external) names.push_back(p.lexically_relative(fs::canonical(dir.path())).string());
  EXPECT_EQ(names, (std::vector<std::string>{"a.bin", "c.bin", "d.bin", "e.bin", "sub/b.bin"}));
  EXPECT_EQ(files.bytes, expected);
  EXPECT_EQ(files.all().size(), 6u);
}

TEST(ModelFiles, TheRealFixtureWithExternalData) {
  const fs::path dir = fs::path(OCTET_SOURCE_DIR) / "tests/models/fixtures/external_data";
  const ModelFiles files = model_files(dir / "model.onnx");
  ASSERT_EQ(files.external.size(), 1u);
  EXPECT_EQ(files.external[0].filename(), "weights.bin");
  EXPECT_EQ(files.bytes, fs::file_size(dir / "model.onnx") + fs::file_size(dir / "weights.bin"));
}

TEST(ModelFiles, ALocationOutsideTheFolderIsRefused) {
  TempDir dir;
  onnx::ModelProto m = model_with_locations();
  tensor_attribute(m.mutable_graph(), "escape", "../outside.bin");
  write_side_files(dir.path());
  const fs::path model = save_proto(m, dir.path() / "m.onnx");
  expect_error([&] { model_files(model); }, "tensor 'escape'");
}

TEST(ModelFiles, ATruncatedFileGetsTheReadersError) {
  TempDir dir;
  write_side_files(dir.path());
  const std::string bytes = model_with_locations().SerializeAsString();
  write_file(dir.path() / "cut.onnx", bytes.substr(0, bytes.size() / 2));
  expect_error([&] { model_files(dir.path() / "cut.onnx"); }, "not a valid ONNX model");
  expect_error([&] { model_files(dir.path() / "missing.onnx"); }, "missing.onnx");
}

}  // namespace
}  // namespace octet
