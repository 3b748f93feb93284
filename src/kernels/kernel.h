// The interface every kernel implements: read concrete input tensors, allocate and fill
// outputs. Kernels compute their own output shapes from the concrete inputs, so the
// runtime can cross-check them against symbolic inference.
//
// Two registries hold kernels. The reference registry has a scalar kernel for every op
// octet runs: the test oracle, never tuned. The optimized registry (src/kernels/cpu) has
// fast kernels for the ops that matter for speed; each may decline a node it does not
// handle (a dtype, a non-constant weight) at session creation, and the session then uses
// the reference kernel for that node.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"

namespace octet {

// Per-node data a kernel builds once at session creation and reads on every run:
// prepacked weights, cached GEMM primitives. Kernels read it through a const reference,
// so anything they mutate during a run (a per-shape cache) must be thread-safe.
class KernelState {
 public:
  virtual ~KernelState() = default;
  // True when this state holds everything the kernel needs of input `i` (a weight packed
  // at session creation) and the kernel never reads that input's data from the context,
  // fallback paths included. The session may then drop the graph's copy of a constant
  // input and pass nullptr for it (SessionOptions::release_packed_weights).
  virtual bool owns_input(size_t /*i*/) const { return false; }
};

// Whether the session being built on this thread lets prepare functions keep packed
// copies of float weights (SessionOptions::pack_weights; true outside a session's
// construction). A float MatMul/Gemm then reads the graph's plain weight instead: the
// quantizer runs float models on graphs it keeps and rewrites, where a packed copy would
// double the model in memory.
bool weight_packing_enabled();
class WeightPackingScope {
 public:
  explicit WeightPackingScope(bool enabled);
  ~WeightPackingScope();
  WeightPackingScope(const WeightPackingScope&) = delete;
  WeightPackingScope& operator=(const WeightPackingScope&) = delete;

 private:
  bool previous_;
};

// Where a kernel's outputs get their memory. The session's implementation hands out
// regions of its memory arena where the memory plan has a slot for the output, and heap
// memory otherwise.
class OutputAllocator {
 public:
  virtual ~OutputAllocator() = default;
  virtual std::shared_ptr<Buffer> allocate(size_t output, size_t bytes, bool zero_fill) = 0;
};

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
  // An output whose contents are undefined: for kernels that write every element.
  Tensor& allocate_output_uninitialized(size_t i, DType dtype, std::vector<int64_t> shape);
  // An output that shares memory with an existing tensor (Identity, Reshape, ...).
  void set_output(size_t i, Tensor tensor);
  std::vector<Tensor>& outputs() { return outputs_; }

  // The state this node's kernel built at session creation; nullptr when it has none.
  const KernelState* state() const { return state_; }
  template <typename T>
  const T& state_as() const {
    OCTET_ASSERT(state_, "kernel of ", node_.describe(), " has no prepared state");
    return static_cast<const T&>(*state_);
  }
  // How many threads the kernel may use (OpenMP); 1 unless the session says more.
  int threads() const { return threads_; }

  // Set by the session before the kernel runs.
  void set_state(const KernelState* state) { state_ = state; }
  void set_allocator(OutputAllocator* allocator) { allocator_ = allocator; }
  void set_threads(int threads) { threads_ = threads < 1 ? 1 : threads; }
  // Replaces input i for what runs next on this context: a kernel handing its node to the
  // reference kernel passes the weight it unpacked from its state (KernelState::owns_input).
  void set_input(size_t i, const Tensor* tensor) {
    if (i >= inputs_.size()) inputs_.resize(i + 1, nullptr);
    inputs_[i] = tensor;
  }

  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    ::octet::fail(node_.describe(), ": ", parts...);
  }

 private:
  Tensor& allocate(size_t i, DType dtype, std::vector<int64_t> shape, bool zero_fill);

  const Node& node_;
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor> outputs_;
  const KernelState* state_ = nullptr;
  OutputAllocator* allocator_ = nullptr;
  int threads_ = 1;
};

using KernelFn = void (*)(KernelContext&);
// Called once per node at session creation. Returns false to decline the node (the
// session falls back to the next registry); may fill `state` for the kernel to read.
using KernelPrepareFn = bool (*)(const Node& node, std::unique_ptr<KernelState>& state);

struct KernelDef {
  KernelFn run = nullptr;
  // Optional: without it the kernel takes every node of its op and keeps no state.
  KernelPrepareFn prepare = nullptr;
  // The kernel's outputs may share memory with its inputs (Reshape-like views). The
  // memory planner then keeps the inputs' memory alive as long as the outputs.
  bool may_alias_inputs = false;
};

// Kernels by (domain, op_type).
class KernelRegistry {
 public:
  // Scalar kernels for every op octet runs: the oracle for every optimized kernel.
  static const KernelRegistry& reference();
  // Fast kernels (src/kernels/cpu); a subset of the ops, consulted first.
  static const KernelRegistry& optimized();

  void add(const std::string& domain, const std::string& op_type, KernelFn fn);
  void add(const std::string& domain, const std::string& op_type, KernelDef def);
  // nullptr when the op has no kernel here. "ai.onnx" and "" name the same domain.
  const KernelDef* find_def(const std::string& domain, const std::string& op_type) const;
  KernelFn find(const std::string& domain, const std::string& op_type) const;
  std::vector<std::pair<std::string, std::string>> ops() const;

 private:
  std::map<std::pair<std::string, std::string>, KernelDef> kernels_;
};

}  // namespace octet
