// What the public API's classes hold (the Impl structs the public headers only declare)
// and the conversions between public and internal types. Only src/api includes this.
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"
#include "octet/quantize.h"
#include "octet/session.h"
#include "octet/tensor.h"
#include "onnx/model_io.h"
#include "runtime/session.h"

namespace octet::v1 {

struct Tensor::Impl {
  ::octet::Tensor tensor;
  bool view = false;  // borrows the caller's memory
};

struct Model::Impl {
  ::octet::Model model;
  std::string name;
};

struct Session::Impl {
  std::string name;
  std::shared_ptr<const ::octet::Session> session;
  std::vector<TensorInfo> inputs, outputs;
};

namespace api {

DType to_internal(ElementType type);
ElementType to_public(DType type);
TensorInfo tensor_info(const Value& value);
// Wraps an internal tensor whose memory it may keep (outputs, samples).
Tensor wrap(::octet::Tensor tensor);
const ::octet::Tensor& unwrap(const Tensor& tensor, const std::string& name);

// The public octet::Error for the exception being handled: file() is `file` (the call's
// model or data file), node() the node its message names, reason() the message without
// the "file: " prefix. Errors already carrying a file pass through unchanged, and so do
// exceptions that are not octet's (a caller's CalibrationSource may throw its own).
[[noreturn]] void rethrow_public(const std::string& file);

// Runs `f`, turning whatever it throws into the public octet::Error (see above).
template <typename F>
auto guarded(const std::string& file, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (...) {
    rethrow_public(file);
  }
}

}  // namespace api
}  // namespace octet::v1
