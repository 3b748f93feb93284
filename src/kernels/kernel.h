// The interface every kernel implements: read concrete input tensors, allocate and fill
// outputs. Kernels compute their own output shapes from the concrete inputs, so the
// runtime can cross-check them against symbolic inference.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace octet {

class KernelContext {
 public:
  KernelContext(const Node& node, std::vector<const Tensor*> inputs)
      : node_(node), inputs_(std::move(inputs)), outputs_(node.outputs().size()) {}

  const Node& node() const { return node_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  // The input; an error naming the node when a required input is absent.
  const Tensor& input(size_t i) const;
  const Tensor* optional_input(size_t i) const { return has_input(i) ? inputs_[i] : nullptr; }

  size_t num_outputs() const { return outputs_.size(); }
  // False for an optional output the model does not use (empty name in ONNX).
  bool output_wanted(size_t i) const { return node_.output(i) != nullptr; }
  // A zero-filled output of this type and shape.
  Tensor& allocate_output(size_t i, DType dtype, std::vector<int64_t> shape);
  // An output that shares memory with an existing tensor (Identity, Reshape, ...).
  void set_output(size_t i, Tensor tensor);
  std::vector<Tensor>& outputs() { return outputs_; }

  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    ::octet::fail(node_.describe(), ": ", parts...);
  }

 private:
  const Node& node_;
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor> outputs_;
};

using KernelFn = void (*)(KernelContext&);

// Kernels by (domain, op_type). The reference table holds the scalar kernels that are
// the test oracle for every optimized kernel.
class KernelRegistry {
 public:
  static const KernelRegistry& reference();

  void add(const std::string& domain, const std::string& op_type, KernelFn fn);
  KernelFn find(const std::string& domain, const std::string& op_type) const;
  std::vector<std::pair<std::string, std::string>> ops() const;

 private:
  std::map<std::pair<std::string, std::string>, KernelFn> kernels_;
};

}  // namespace octet
