// Loading, optimizing and running a model: the public API's Model and Session.
//
//   octet::Session session("model.onnx", {.threads = 2});
//   std::vector<int64_t> ids(128, 101), mask(128, 1);
//   auto outputs = session.run({{"input_ids", octet::Tensor::view(octet::ElementType::Int64, {1, 128}, ids.data())},
//                               {"attention_mask", octet::Tensor::view(octet::ElementType::Int64, {1, 128}, mask.data())}});
//
// Every failure throws octet::Error (octet/error.h) naming the file, node and reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "octet/tensor.h"

namespace octet {
namespace v1 {

// One dim of a declared shape: a known size (value >= 0) or a symbol ("batch", "seq",
// "seq + past"; value -1).
struct Dimension {
  int64_t value = -1;
  std::string symbol;
  bool known() const { return value >= 0; }
};

// A graph input or output as the model declares it.
struct TensorInfo {
  std::string name;
  ElementType type = ElementType::Undefined;
  bool rank_known = false;       // false: shape is empty and says nothing
  std::vector<Dimension> shape;  // when rank_known
};

// What optimize() did.
struct OptimizeSummary {
  int64_t nodes_before = 0, nodes_after = 0;
  std::string text;  // one line per pass that changed something
  std::string json;  // the full per-pass report
};

class Model {
 public:
  // Reads an ONNX file (external data next to it is memory-mapped).
  static Model load(const std::string& path);
  // Parses an ONNX model held in memory. External data, if the model has any, is looked up
  // in `base_dir`; `name` is what error messages call the model.
  static Model load_bytes(const void* data, size_t size, const std::string& base_dir = ".",
                          const std::string& name = "<bytes>");

  // Runs octet's optimizer in place: level 0 nothing, 1 cleanup and folding, 2 also the
  // fusions (GeLU, LayerNorm, attention, MatMul epilogues).
  OptimizeSummary optimize(int level = 2);
  // Writes the model as ONNX (fused ops in the `octet` domain, which only octet runs).
  void save(const std::string& path) const;

  std::vector<TensorInfo> inputs() const;  // those a run must be given (no initializers)
  std::vector<TensorInfo> outputs() const;
  const std::string& name() const;  // the path or name it was loaded from
  size_t node_count() const;

  struct Impl;
  const std::shared_ptr<Impl>& impl() const { return impl_; }

 private:
  explicit Model(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

struct SessionOptions {
  int threads = 0;             // kernel threads; 0: one per core the process may use
  int optimization_level = 2;  // as Model::optimize; applied when the session is made
  // A run uses one thread while other processes compete for the cores, probing now and
  // then whether they left: beside a neighbour that is faster than threads waiting on each
  // other, and the outputs are the same bits. false: every run uses `threads`.
  bool adapt_threads = true;
};

// A model prepared to run: kernels chosen and weights packed once. run() may be called
// from several threads at once on one Session.
class Session {
 public:
  explicit Session(const std::string& model_path, const SessionOptions& options = {});
  // Takes the model (it is left empty): the session may then keep only its packed copy
  // of each weight.
  explicit Session(Model&& model, const SessionOptions& options = {});

  // Runs the model. Inputs by name (every required input once); tensors that are views
  // are read in place, never copied. Returns the outputs named in `output_names` in that
  // order, or every output when it is empty. Batch and sequence sizes may change between
  // runs; each input is checked against the declared type and shape first.
  NamedTensors run(const NamedTensors& inputs, const std::vector<std::string>& output_names = {}) const;

  std::vector<TensorInfo> inputs() const;
  std::vector<TensorInfo> outputs() const;
  int threads() const;
  const std::string& model_name() const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

}  // namespace v1
}  // namespace octet
