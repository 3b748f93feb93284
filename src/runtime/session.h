// Session: runs a graph on concrete inputs with the reference kernels.
//
// At construction every node must have a kernel; otherwise the error lists every
// unsupported op of the model at once (not one per run). At each run the graph inputs'
// symbolic dims are bound from the actual tensors (batch and seq may differ per call),
// inputs are validated (names, dtype, rank, known dims, consistent symbols), and each
// node's outputs are checked against what shape inference promised under those bindings.
//
// A Session is immutable after construction: run() keeps all per-run state on its own
// stack, so several threads may call run() on one Session at once.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernel.h"

namespace octet {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

enum class KernelChoice {
  Optimized,  // the optimized kernel where one takes the node, else the reference one
  Reference,  // the scalar reference kernels only (the oracle; for debugging)
};

struct SessionOptions {
  // Compare every kernel output with the inferred type under the run's bindings. Cheap
  // next to the kernels; catches an inference rule and a kernel that disagree.
  bool check_inferred_shapes = true;
  KernelChoice kernels = KernelChoice::Optimized;
  // Threads each kernel may use; 0 means one per core the process may run on.
  int threads = 0;
};

class Session {
 public:
  explicit Session(std::shared_ptr<const Graph> graph, SessionOptions options = {});

  // Runs the graph. Inputs are matched by name; every graph input without a default
  // (initializer) must be given. Returns the graph outputs in order.
  NamedTensors run(const NamedTensors& inputs) const;

  const Graph& graph() const { return *graph_; }
  // Graph inputs the caller must provide (inputs that are not initializers).
  std::vector<const Value*> required_inputs() const;
  // The threads kernels use (options.threads resolved).
  int threads() const { return threads_; }
  // How many nodes run an optimized kernel, and which ops fell back to the reference
  // kernels ("ai.onnx::Erf" -> count): what `octet bench` and `inspect` report.
  int optimized_nodes() const;
  std::map<std::string, int> reference_ops() const;

 private:
  struct Step {
    const Node* node;
    const KernelDef* kernel;
    std::unique_ptr<KernelState> state;  // what the kernel prepared for this node
    std::vector<int> inputs;   // value slots, -1 for an omitted input
    std::vector<int> outputs;  // value slots, -1 for an unused output
    std::vector<int> release;  // slots whose last reader is this step
  };
  int slot_of(const Value* v) const;

  std::shared_ptr<const Graph> graph_;
  SessionOptions options_;
  int threads_ = 1;
  std::unordered_map<const Value*, int> slots_;
  std::vector<Step> steps_;
};

// Binds each symbol of `declared` from `actual`, or checks it against an existing
// binding. Errors name `what` (e.g. "input 'input_ids'").
void bind_dims(const DimVector& declared, const std::vector<int64_t>& actual,
               const std::string& what, Bindings& bindings);

}  // namespace octet
