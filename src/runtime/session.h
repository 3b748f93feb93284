// Session: runs a graph on concrete inputs.
//
// At construction every node must have a kernel; otherwise the error lists every
// unsupported op of the model at once (not one per run). Each node gets the optimized
// kernel when one takes it (which may prepack weights now, once), else the reference
// kernel. At each run the graph inputs' symbolic dims are bound from the actual tensors
// (batch and seq may differ per call), inputs are validated (names, dtype, rank, known
// dims, consistent symbols), and each node's outputs are checked against what shape
// inference promised under those bindings.
//
// Intermediate tensors live in one arena per run, laid out by the memory planner
// (runtime/memory_plan.h) for the run's bindings; the layout is cached per binding.
//
// Weights: an optimized kernel may keep a constant weight packed in its own layout
// (KernelState). A Session that is the sole owner of its graph (built from a
// std::shared_ptr<Graph> nobody else holds) then drops the graph's plain copy of each
// initializer whose every reader keeps it (KernelState::owns_input), so the weight lives
// once; see SessionOptions::release_packed_weights.
//
// run() keeps its per-run state on its own stack (the plan cache and arena pool are
// guarded), so several threads may call run() on one Session at once.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "kernels/kernel.h"
#include "runtime/memory_plan.h"

namespace octet {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Where a run's time went, per node in execution order (octet bench --profile).
struct RunProfile {
  struct Entry {
    const Node* node = nullptr;
    bool optimized = false;  // an optimized kernel ran it (else the reference kernel)
    double ms = 0;           // summed over the profiled runs
  };
  std::vector<Entry> steps;
  int runs = 0;
};

// Called with every value a run computes, right after the step that produced it (graph
// inputs first). The tensor may live in the run's arena: it is valid only during the call,
// so an observer that keeps data copies it. Calibration and per-layer error reports read
// intermediate tensors this way without making them graph outputs.
using ValueObserver = std::function<void(const Value& value, const Tensor& tensor)>;

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
  // Drop the graph's data of initializers whose readers all keep a packed copy of their
  // own (oneDNN's blocked weights under AVX-512), when the session solely owns a mutable
  // graph. The graph then cannot be exported; graph() still shows every Value and type.
  bool release_packed_weights = true;
  // Let float MatMul/Gemm kernels keep their weight packed in oneDNN's layout (a copy made
  // at creation). false: they read the graph's plain weight, a little slower, and the
  // session adds no copy of the weights (what the quantizer's float passes want).
  bool pack_weights = true;
};

class Session {
 public:
  // Shares the graph with the caller; never changes it.
  explicit Session(std::shared_ptr<const Graph> graph, SessionOptions options = {});
  // Takes the graph: when no other shared_ptr holds it (the caller moved it in), the
  // session may release the data of weights its kernels keep packed (see above).
  explicit Session(std::shared_ptr<Graph> graph, SessionOptions options = {});

  // Runs the graph. Inputs are matched by name; every graph input without a default
  // (initializer) must be given. Returns the graph outputs in order.
  NamedTensors run(const NamedTensors& inputs) const { return run(inputs, nullptr); }
  // The same, adding each step's wall time to `profile` (when not null).
  NamedTensors run(const NamedTensors& inputs, RunProfile* profile) const;
  // The same, showing `observer` every value as it is computed (see ValueObserver).
  NamedTensors run(const NamedTensors& inputs, const ValueObserver& observer) const;

  const Graph& graph() const { return *graph_; }
  // Graph inputs the caller must provide (inputs that are not initializers).
  std::vector<const Value*> required_inputs() const;
  // The threads kernels use (options.threads resolved).
  int threads() const { return threads_; }
  // How many nodes run an optimized kernel, and which ops fell back to the reference
  // kernels ("ai.onnx::Erf" -> count): what `octet bench` and `inspect` report.
  int optimized_nodes() const;
  std::map<std::string, int> reference_ops() const;

  struct MemoryStats {
    size_t arena_bytes = 0;    // the arena one run needs
    size_t tensor_bytes = 0;   // the tensors placed in it, summed: the arena's savings
    size_t arena_tensors = 0;  // how many tensors the plan placed
  };
  // The memory plan for runs with these input dim bindings ({"batch": 1, "seq": 128}).
  MemoryStats memory_stats(const Bindings& bindings) const;

  // Initializers whose graph data this session released (release_packed_weights), and
  // their bytes: the memory saved by keeping only the kernels' packed copies.
  int released_weights() const { return released_weights_; }
  size_t released_weight_bytes() const { return released_weight_bytes_; }

 private:
  struct Step {
    const Node* node;
    const KernelDef* kernel;
    bool optimized;                      // kernel is an optimized one, not the reference
    std::unique_ptr<KernelState> state;  // what the kernel prepared for this node
    std::vector<int> inputs;   // value slots, -1 for an omitted input
    std::vector<int> outputs;  // value slots, -1 for an unused output
    std::vector<int> release;  // slots whose last reader is this step
  };
  // What a run needs to know for one set of input bindings.
  struct RunPlan {
    std::vector<int64_t> arena_offset;  // per slot; -1 where the tensor uses the heap
    std::vector<size_t> arena_bytes;    // per slot: the bytes reserved at arena_offset
    // Per slot, the shape inference promises when every dim evaluates, else empty
    // with known_shape false (fresh symbols are bound as outputs appear).
    std::vector<std::vector<int64_t>> shape;
    std::vector<char> known_shape;
    size_t arena_size = 0;
  };
  class RunAllocator;

  int slot_of(const Value* v) const;
  void select_kernels();
  void release_packed_weights(Graph& graph);
  void plan_lifetimes();
  std::shared_ptr<const RunPlan> plan_for(const Bindings& bindings) const;
  std::shared_ptr<const RunPlan> make_plan(const Bindings& bindings) const;
  NamedTensors run_steps(const NamedTensors& inputs, RunProfile* profile, const ValueObserver* observer) const;

  std::shared_ptr<const Graph> graph_;
  SessionOptions options_;
  int threads_ = 1;
  std::unordered_map<const Value*, int> slots_;
  std::vector<const Value*> slot_values_;
  std::vector<Step> steps_;
  // Memory lifetimes, per slot that owns its memory (not a view, input, constant or
  // graph output): first and last step touching it or any view of it; -1 otherwise.
  std::vector<int> life_first_, life_last_;
  // Per slot: an initializer whose data was released; runs pass its kernels nullptr.
  std::vector<char> released_;
  int released_weights_ = 0;
  size_t released_weight_bytes_ = 0;

  mutable std::mutex plans_mutex_;
  mutable std::map<Bindings, std::shared_ptr<const RunPlan>> plans_;
  mutable ArenaPool arenas_;
};

// Binds each symbol of `declared` from `actual`, or checks it against an existing
// binding. Errors name `what` (e.g. "input 'input_ids'").
void bind_dims(const DimVector& declared, const std::vector<int64_t>& actual,
               const std::string& what, Bindings& bindings);

}  // namespace octet
