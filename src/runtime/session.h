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

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernel.h"

namespace octet {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

struct SessionOptions {
  // Compare every kernel output with the inferred type under the run's bindings. Cheap
  // next to the kernels; catches an inference rule and a kernel that disagree.
  bool check_inferred_shapes = true;
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

 private:
  struct Step {
    const Node* node;
    KernelFn kernel;
    std::vector<int> inputs;   // value slots, -1 for an omitted input
    std::vector<int> outputs;  // value slots, -1 for an unused output
    std::vector<int> release;  // slots whose last reader is this step
  };
  int slot_of(const Value* v) const;

  std::shared_ptr<const Graph> graph_;
  SessionOptions options_;
  std::unordered_map<const Value*, int> slots_;
  std::vector<Step> steps_;
};

// Binds each symbol of `declared` from `actual`, or checks it against an existing
// binding. Errors name `what` (e.g. "input 'input_ids'").
void bind_dims(const DimVector& declared, const std::vector<int64_t>& actual,
               const std::string& what, Bindings& bindings);

}  // namespace octet
