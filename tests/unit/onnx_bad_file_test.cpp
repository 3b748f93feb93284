// Files that are not ONNX, or broken ONNX: each must give one clear line naming the file,
// never a crash or a hang. The mutation test runs under the sanitizer build too.
#include <gtest/gtest.h>

#include <iostream>
#include <random>

#include "onnx/model_io.h"
#include "onnx_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;

TEST(OnnxBadFile, NotOnnx) {
  TempDir dir;
  auto check = [&](const std::string& name, const std::string& bytes, const std::string& needle) {
    fs::path p = dir / name;
    write_file(p, bytes);
    expect_error([&] { load_model(p); }, p.string() + ": ");
    expect_error([&] { load_model(p); }, needle);
  };
  check("empty.onnx", "", "file is empty");
  check("text.onnx", "this is not a model, just some text\n",
        "not a valid ONNX model (protobuf parse failed: truncated or not ONNX)");
  check("png.onnx", std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16), "the file looks like a PNG image");
  check("zip.onnx", std::string("PK\x03\x04garbage", 11), "looks like a zip archive");

  onnx::ModelProto no_graph;
  no_graph.set_ir_version(8);
  no_graph.add_opset_import()->set_version(17);
  check("no_graph.onnx", no_graph.SerializeAsString(), "not a valid ONNX model (no graph)");

  onnx::ModelProto no_ir = add_model({1});
  no_ir.clear_ir_version();
  check("no_ir.onnx", no_ir.SerializeAsString(), "not a valid ONNX model (ir_version 0)");

  onnx::ModelProto no_opset = add_model({1});
  no_opset.clear_opset_import();
  check("no_opset.onnx", no_opset.SerializeAsString(), "not a valid ONNX model (no opset_import)");

  std::string full = add_model({1, 2, 3, 4}).SerializeAsString();
  check("truncated.onnx", full.substr(0, full.size() / 2), "protobuf parse failed");

  expect_error([&] { load_model(dir / "missing.onnx"); }, (dir / "missing.onnx").string() + ": cannot open");
  expect_error([&] { load_model(dir.path()); }, "is a directory");
}

TEST(OnnxBadFile, OverTwoGigabytesNeedsExternalData) {
  TempDir dir;
  fs::path p = dir / "huge.onnx";
  write_file(p, "x");
  fs::resize_file(p, (uint64_t{5} << 29));  // 2.5 GiB, sparse: no disk used
  expect_error([&] { load_model(p); }, "over protobuf's 2 GiB limit");
}

// Truncations and byte flips of a valid model: each either loads or throws octet::Error.
TEST(OnnxBadFile, MutatedModelsNeverCrash) {
  TempDir dir;
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {std::string("n"), 4});
  add_raw_initializer(g, "w", onnx::TensorProto::FLOAT, {4}, bytes_of(std::vector<float>{1, 2, 3, 4}));
  auto* t = g->add_initializer();
  t->set_name("i");
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(2);
  t->add_int64_data(1);
  t->add_int64_data(2);
  add_node(g, "Add", {"x", "w"}, {"a"}, "add");
  auto* c = add_node(g, "Constant", {}, {"c"}, "const")->add_attribute();
  c->set_name("value");
  c->set_type(onnx::AttributeProto::TENSOR);
  c->mutable_t()->set_data_type(dtype_to_onnx(DType::Int4));
  c->mutable_t()->add_dims(3);
  c->mutable_t()->add_int32_data(0x21);
  c->mutable_t()->add_int32_data(0x03);
  add_node(g, "Reshape", {"a", "i"}, {"y"}, "reshape");
  add_value_info(g, "a", onnx::TensorProto::FLOAT, {std::string("unk__1"), 4});
  add_output(g, "y", onnx::TensorProto::FLOAT, {std::string("n"), 4});
  const std::string good = m.SerializeAsString();
  fs::path p = dir / "m.onnx";

  int loaded = 0, rejected = 0;
  auto attempt = [&](const std::string& bytes) {
    write_file(p, bytes);
    try {
      Model model = load_model(p);
      save_model(model, dir / "out.onnx");
      ++loaded;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      ++rejected;
    }
  };
  for (size_t n = 0; n < good.size(); ++n) attempt(good.substr(0, n));
  std::mt19937 rng(1234);
  for (int i = 0; i < 400; ++i) {
    std::string bytes = good;
    int flips = 1 + static_cast<int>(rng() % 3);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    attempt(bytes);
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(loaded, 0);
  std::cout << "mutations: " << loaded << " loaded, " << rejected << " rejected\n";
}

}  // namespace
}  // namespace octet
