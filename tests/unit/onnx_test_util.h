// Helpers for the ONNX import/export tests: a scratch folder per test and small builders
// for ModelProtos, so each test states only what it is about.
#pragma once

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "octet/error.h"

namespace octet::testing {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("octet_onnx_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

// Runs `fn` and expects an octet::Error whose message contains `needle` and is one line.
inline void expect_error(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg << "\nexpected: " << needle;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message spans lines: " << msg;
    return;
  }
  ADD_FAILURE() << "no error; expected one containing: " << needle;
}

inline void write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

using DimSpec = std::variant<int64_t, std::string>;  // a string is a dim_param

inline onnx::ModelProto make_model(int64_t opset = 17, int64_t ir_version = 8) {
  onnx::ModelProto m;
  m.set_ir_version(ir_version);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("test");
  return m;
}

inline void set_type(onnx::ValueInfoProto* vi, const std::string& name, int32_t elem,
                     const std::vector<DimSpec>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (const auto& d : dims) {
    auto* dim = shape->add_dim();
    if (std::holds_alternative<int64_t>(d)) dim->set_dim_value(std::get<int64_t>(d));
    else if (std::get<std::string>(d) != "<none>") dim->set_dim_param(std::get<std::string>(d));
  }
}

inline void add_input(onnx::GraphProto* g, const std::string& name, int32_t elem,
                      const std::vector<DimSpec>& dims) {
  set_type(g->add_input(), name, elem, dims);
}
inline void add_output(onnx::GraphProto* g, const std::string& name, int32_t elem,
                       const std::vector<DimSpec>& dims) {
  set_type(g->add_output(), name, elem, dims);
}
inline void add_value_info(onnx::GraphProto* g, const std::string& name, int32_t elem,
                           const std::vector<DimSpec>& dims) {
  set_type(g->add_value_info(), name, elem, dims);
}

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op,
                                 const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

inline onnx::TensorProto* add_raw_initializer(onnx::GraphProto* g, const std::string& name, int32_t dtype,
                                              const std::vector<int64_t>& dims, const std::string& raw) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(dtype);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(raw);
  return t;
}

inline void set_external(onnx::TensorProto* t, const std::string& location, int64_t offset = -1,
                         int64_t length = -1) {
  t->clear_raw_data();
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    auto* kv = t->add_external_data();
    kv->set_key(k);
    kv->set_value(v);
  };
  add("location", location);
  if (offset >= 0) add("offset", std::to_string(offset));
  if (length >= 0) add("length", std::to_string(length));
}

// y = x + w for x, w float32[n]: the smallest model with an initializer.
inline onnx::ModelProto add_model(const std::vector<float>& w) {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  int64_t n = static_cast<int64_t>(w.size());
  add_input(g, "x", onnx::TensorProto::FLOAT, {n});
  add_raw_initializer(g, "w", onnx::TensorProto::FLOAT, {n}, bytes_of(w));
  add_node(g, "Add", {"x", "w"}, {"y"}, "add");
  add_output(g, "y", onnx::TensorProto::FLOAT, {n});
  return m;
}

inline fs::path save_proto(const onnx::ModelProto& m, const fs::path& path) {
  write_file(path, m.SerializeAsString());
  return path;
}

}  // namespace octet::testing
