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
// (runtime/memory_plan.h) for the run's bindings. A run plan (session_plan.cpp) is cached
// per binding and cheap to make: shapes are compiled once, a layout is reused while every
// tensor fits it, and small integer values whose contents the bindings decide (the shape
// arithmetic of exported models) are computed once per plan instead of by their nodes.
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

#include <deque>
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
#include "runtime/dim_table.h"
#include "runtime/input_binding.h"
#include "runtime/memory_plan.h"
#include "runtime/thread_governor.h"

namespace octet {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

// Where a run's time went, per node in execution order (octet bench --profile).
struct RunProfile {
  struct Entry {
    const Node* node = nullptr;
    bool optimized = false;  // an optimized kernel ran it (else the reference kernel)
    double ms = 0;           // summed over the profiled runs
    int calls = 0;           // profiled runs in which its kernel ran (a folded step's does not)
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
  // Run on one thread while other processes compete for the cores, probing now and then
  // whether they left (runtime/thread_governor.h: faster beside a neighbour than waiting
  // OpenMP threads, and the same outputs). false: always `threads`.
  bool adapt_threads = true;
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

  // Repeated runs of one model (a decode loop: some 180 inputs a step) without the name
  // lookups: the caller finds each input's position once (input_position: its index in
  // graph().inputs(), -1 when there is no such input) and gives (position, tensor) pairs;
  // `outputs` lists the graph outputs wanted (output_position), returned in that order.
  // Checks as run() does.
  int input_position(const std::string& name) const;
  int output_position(const std::string& name) const;
  using PositionalTensors = std::vector<std::pair<int, Tensor>>;
  std::vector<Tensor> run_positional(const PositionalTensors& inputs, const std::vector<int>& outputs,
                                     RunProfile* profile = nullptr) const;

  const Graph& graph() const { return *graph_; }
  // Graph inputs the caller must provide (inputs that are not initializers).
  std::vector<const Value*> required_inputs() const;
  // The threads kernels use (options.threads resolved); a run may use one instead while
  // other processes hold the cores (adapt_threads), which thread_stats() counts.
  int threads() const { return threads_; }
  ThreadGovernor::Stats thread_stats() const { return governor_->stats(); }
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
    std::vector<int> implicit; // slots a subgraph reads (node->implicit_inputs())
    // Every output is a small integer tensor whose contents inference knows symbolically
    // (Shape, Gather of a shape, Concat of scalars, ...): a plan whose bindings decide them
    // computes them once, and the step does not run (see RunPlan::folded).
    bool foldable = false;
    // Identity, Reshape, Squeeze, Unsqueeze, Flatten, and Transpose where it moves only
    // size-1 axes: output 0 is input 0's bytes under another shape. Where the plan knows
    // that shape, the run makes the view itself and the kernel does not run (a decode step
    // has a few hundred; see run_view_step).
    bool views_input = false;
  };
  // Where the planned tensors live in a run's arena. Plans for different bindings share
  // one when every tensor fits its reserved bytes (see make_plan), so a decode loop whose
  // past grows by one token a step does not lay memory out again every step.
  struct ArenaPlan {
    std::vector<int64_t> offset;   // per slot; -1 where the tensor uses the heap
    std::vector<size_t> reserved;  // per slot: the bytes reserved at offset
    size_t size = 0;               // the arena's bytes
    size_t reserved_total = 0;     // the reserved bytes summed (aligned)
  };
  // What a run needs to know for one set of input bindings.
  struct RunPlan {
    // Per DimTable entry (slot shapes, folded contents), its value under the bindings.
    std::vector<int64_t> dims;
    std::vector<char> dim_known;
    // Per slot: every dim of its inferred shape evaluates (else empty with known_shape
    // false; fresh symbols are bound as outputs appear).
    std::vector<char> known_shape;
    // Per slot: the bytes of its tensor where the arena holds it, else -1.
    std::vector<int64_t> bytes;
    std::shared_ptr<const ArenaPlan> arena;
    // Per slot: contents decided by the bindings alone (the outputs of folded steps).
    std::vector<std::shared_ptr<const Tensor>> folded;
    std::vector<char> folded_step;  // per step: its outputs are folded, its kernel skipped
  };
  class RunAllocator;

  // The graph and, when this session may release its weights' data (sole owner, option
  // on), the same graph as mutable.
  struct OwnedGraph {
    std::shared_ptr<const Graph> graph;
    Graph* releasable = nullptr;
  };
  static OwnedGraph own(std::shared_ptr<Graph> graph, bool release);
  Session(OwnedGraph graph, SessionOptions options);

  int slot_of(const Value* v) const;
  void select_kernels();
  // Drops the graph's data of `v` once every reader's kernel is prepared and keeps it packed.
  void release_if_packed(Value* v, const std::unordered_map<const Node*, size_t>& step_of);
  void plan_lifetimes();
  void compile_shapes();
  // The plan for the bindings `state` holds (cached by its symbol values).
  std::shared_ptr<const RunPlan> plan_for(const InputBinder::State& state) const;
  // reuse_arena: may share the arena layout of the plan made last (plan_for); memory_stats
  // asks for the layout of exactly these bindings.
  std::shared_ptr<const RunPlan> make_plan(const Bindings& bindings, bool reuse_arena) const;
  void fold_steps(RunPlan& plan, const RunPlan* previous) const;
  std::shared_ptr<const ArenaPlan> place_arena(const RunPlan& plan, const std::shared_ptr<const ArenaPlan>& previous) const;
  // The shape slot `slot` has under `plan` (known_shape[slot] must be set).
  const int64_t* planned_shape(const RunPlan& plan, int slot) const { return plan.dims.data() + slot_shape_[slot].offset; }
  // The run proper: inputs as (input position, tensor), outputs by position (`outputs`
  // null: every graph output, in order).
  std::vector<Tensor> run_steps(const std::vector<std::pair<int, const Tensor*>>& inputs,
                                const std::vector<int>* outputs, RunProfile* profile,
                                const ValueObserver* observer) const;
  NamedTensors run_named(const NamedTensors& inputs, RunProfile* profile, const ValueObserver* observer) const;
  // Per step: it computes nothing the graph outputs `outputs` need (a decode runner that
  // wants only the logits skips the steps that feed the presents). Cached per list.
  std::shared_ptr<const std::vector<char>> unneeded_steps(const std::vector<int>& outputs) const;
  // Runs a views_input step without its kernel: its output becomes input 0 under the shape
  // the plan has for it. False (nothing done) when that cannot be made; the kernel runs.
  bool run_view_step(const Step& step, const RunPlan& plan, std::vector<std::shared_ptr<const Tensor>>& values) const;

  std::shared_ptr<const Graph> graph_;
  Graph* releasable_ = nullptr;  // set only while the constructor runs (OwnedGraph)
  size_t untrimmed_bytes_ = 0;    // released since the heap was last returned (constructor only)
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

  // Shapes and folded contents, compiled once (runtime/dim_table.h); per slot, -1 rank
  // where the inferred type has no known rank, -1 contents where nothing is folded.
  DimTable dim_table_;
  std::vector<DimTable::Span> slot_shape_, slot_contents_;
  std::vector<char> has_shape_, has_contents_;
  // Slots that may live in the arena: the roots of their view classes that a step writes.
  std::vector<int> arena_slots_;
  std::vector<int> required_slots_;  // graph inputs a run must be given
  // The graph inputs' dims compiled for binding (runtime/input_binding.h); per slot, its
  // input number there (-1 for a slot that is not a graph input).
  InputBinder binder_;
  std::vector<int> input_of_slot_;
  std::vector<int> input_slots_;  // per graph input position, its slot
  std::vector<int> initializer_slots_, output_slots_;

  mutable std::mutex plans_mutex_;
  // Keyed by the input symbols' values (InputBinder::State::symbols): comparing a few
  // integers, not a map of names, at every run.
  mutable std::map<std::vector<int64_t>, std::shared_ptr<const RunPlan>> plans_;
  mutable std::deque<std::vector<int64_t>> plan_order_;  // plans_' keys, oldest first (eviction)
  mutable std::shared_ptr<const RunPlan> last_plan_;  // made last by plan_for: a layout donor
  mutable std::map<std::vector<int>, std::shared_ptr<const std::vector<char>>> unneeded_;  // unneeded_steps' cache
  mutable ArenaPool arenas_;
  std::unique_ptr<ThreadGovernor> governor_;  // per run: all threads, or one beside a neighbour
};

// Binds each symbol of `declared` from `actual`, or checks it against an existing
// binding. Errors name `what` (e.g. "input 'input_ids'").
void bind_dims(const DimVector& declared, const std::vector<int64_t>& actual,
               const std::string& what, Bindings& bindings);
// The same, building the label only when a dim does not match.
void bind_dims(const DimVector& declared, const std::vector<int64_t>& actual,
               const std::function<std::string()>& what, Bindings& bindings);

}  // namespace octet
