#include "runtime/session.h"

#include "core/sizes.h"
#include "runtime/execution_order.h"

#include <omp.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace octet {

namespace {

std::string op_label(const Node& n) {
  std::ostringstream out;
  out << (n.domain().empty() ? "ai.onnx" : n.domain()) << "::" << n.op_type() << " (opset " << n.opset();
  return out.str();
}

// Every value whose dims are all known must fit in memory before a kernel prepares for
// it: oneDNN, handed dims whose products overflow, divides by what is left (SIGFPE).
void check_static_sizes(const Graph& graph) {
  for (const Node* n : graph.nodes()) {
    auto check = [&](const Value* v, const char* role) {
      if (!v || !v->type.known() || !v->type.dims) return;
      std::vector<int64_t> shape;
      for (const Dim& d : *v->type.dims) {
        auto c = d.constant();
        if (!c) return;
        shape.push_back(*c);
      }
      checked_tensor_bytes(v->type.dtype, shape, n->describe() + " " + role + " '" + v->name() + "'");
    };
    for (const Value* v : n->inputs()) check(v, "input");
    for (const Value* v : n->outputs()) check(v, "output");
  }
}

}  // namespace

namespace {

// `what` is called only when a dim does not match: the run loop binds outputs' fresh
// symbols on every run, and the label names the node (a string built per call).
template <typename What>
void bind_dims_with(const DimVector& declared, const std::vector<int64_t>& actual, const What& what,
                    Bindings& bindings) {
  if (declared.size() != actual.size())
    fail(what(), " has rank ", actual.size(), " (shape ", shape_to_string(actual), "), expected rank ",
         declared.size(), " ", dims_to_string(declared));
  for (size_t i = 0; i < declared.size(); ++i) {
    const Dim& d = declared[i];
    if (const std::string* name = d.symbol_name_ptr()) {
      // find first: a map's emplace allocates a node even when the key is there, and a
      // decode step binds the same few symbols from some 180 inputs
      auto it = bindings.lower_bound(*name);
      if (it == bindings.end() || it->first != *name) bindings.emplace_hint(it, *name, actual[i]);
      else if (it->second != actual[i])
        fail(what(), " dim ", i, " is ", actual[i], " but '", *name, "' is already ", it->second,
             " from another input");
      continue;
    }
    auto expected = d.evaluate(bindings);
    if (expected && *expected != actual[i])
      fail(what(), " dim ", i, " is ", actual[i], ", expected ", *expected,
           d.is_constant() ? "" : " (" + d.to_string() + ")");
  }
}

}  // namespace

void bind_dims(const DimVector& declared, const std::vector<int64_t>& actual,
               const std::string& what, Bindings& bindings) {
  bind_dims_with(declared, actual, [&] { return what; }, bindings);
}

void bind_dims(const DimVector& declared, const std::vector<int64_t>& actual,
               const std::function<std::string()>& what, Bindings& bindings) {
  bind_dims_with(declared, actual, what, bindings);
}

namespace {

// Hands the heap's free pages back to the system. Loading and optimizing a model frees
// hundreds of MB in blocks under glibc's mmap threshold (protobuf's strings, folded and
// merged constants, the weights a session releases), which glibc otherwise keeps resident;
// packed weights then come from fresh pages (weight_pages.h), so without this the plain
// and packed copies are both resident after all. SmolLM2's int8 decode export: 457 -> 312
// MB resident once the session is made.
void return_free_heap() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

// Released bytes after which the session returns the free heap while still preparing
// kernels (a trim walks the heap: milliseconds, so not after every weight).
constexpr size_t kTrimEveryBytes = 32u << 20;

}  // namespace

Session::Session(std::shared_ptr<const Graph> graph, SessionOptions options)
    : Session(OwnedGraph{std::move(graph), nullptr}, std::move(options)) {}

// The Graph was created mutable (load_model, make_shared<Graph>), so changing it through
// this pointer is well defined; it is done only when nobody else can see the change.
Session::OwnedGraph Session::own(std::shared_ptr<Graph> graph, bool release) {
  Graph* releasable = release && graph.use_count() == 1 ? graph.get() : nullptr;
  return {std::move(graph), releasable};
}

Session::Session(std::shared_ptr<Graph> graph, SessionOptions options)
    : Session(own(std::move(graph), options.release_packed_weights), options) {}

Session::Session(OwnedGraph graph, SessionOptions options)
    : graph_(std::move(graph.graph)), releasable_(graph.releasable), options_(options) {
  OCTET_ASSERT(options_.threads >= 0, "SessionOptions.threads must be >= 0");
  threads_ = options_.threads > 0 ? options_.threads : std::max(1, omp_get_num_procs());
  governor_ = std::make_unique<ThreadGovernor>(threads_, options_.adapt_threads);
  for (const Value* v : graph_->values()) {
    slots_.emplace(v, static_cast<int>(slot_values_.size()));
    slot_values_.push_back(v);
  }
  released_.assign(slot_values_.size(), 0);
  select_kernels();
  plan_lifetimes();
  compile_shapes();
  if (releasable_) {
    return_free_heap();
    releasable_ = nullptr;
  }
}

void Session::release_if_packed(Value* v, const std::unordered_map<const Node*, size_t>& step_of) {
  // Graph inputs may be overridden by a run, graph outputs are returned from the data.
  if (!v->constant() || v->data_released() || v->is_graph_input() || v->is_graph_output() || v->uses().empty())
    return;
  for (const Use& u : v->uses()) {
    auto it = u.implicit ? step_of.end() : step_of.find(u.node);
    const Step* step = it == step_of.end() ? nullptr : &steps_[it->second];
    if (!step || !step->state || !step->state->owns_input(static_cast<size_t>(u.index))) return;
  }
  const size_t bytes = releasable_->release_initializer_data(v);
  released_weight_bytes_ += bytes;
  ++released_weights_;
  released_[slot_of(v)] = 1;
  untrimmed_bytes_ += bytes;
  if (untrimmed_bytes_ >= kTrimEveryBytes) {
    return_free_heap();
    untrimmed_bytes_ = 0;
  }
}

void Session::select_kernels() {
  const KernelRegistry& reference = KernelRegistry::reference();
  // Every unsupported op at once, so the user learns the whole gap in one go.
  std::map<std::string, std::vector<std::string>> missing;
  for (const Node* n : graph_->nodes())
    if (!reference.find(n->domain(), n->op_type())) missing[op_label(*n)].push_back(n->name());
  if (!missing.empty()) {
    std::ostringstream msg;
    msg << "model uses " << missing.size() << " op(s) octet cannot run:";
    for (const auto& [op, nodes] : missing) {
      msg << "\n  " << op << ", node '" << nodes.front() << "'";
      if (nodes.size() > 1) msg << " and " << nodes.size() - 1 << " more";
      msg << ")";
    }
    fail(msg.str());
  }

  // A graph whose weights another session released cannot serve a second one: its
  // kernels would find no data to prepare from.
  for (const Value* v : graph_->initializers())
    if (v->data_released() && !v->uses().empty())
      fail("initializer '", v->name(), "' has no data: a Session released it after packing; create sessions "
           "from the model as loaded, or with SessionOptions::release_packed_weights = false");

  check_static_sizes(*graph_);

  std::map<int, size_t> last_reader;
  std::unordered_map<const Node*, size_t> step_of;  // nodes prepared so far (releasable_ only)
  const WeightPackingScope packing(options_.pack_weights);
  for (const Node* n : execution_order(*graph_)) {
    Step step{n, reference.find_def(n->domain(), n->op_type()), false, nullptr, {}, {}, {}, {}, false, false};
    // A reference kernel may build per-node state too (If keeps its branch sessions).
    if (step.kernel->prepare && !naming_allocation_failures([&] { return n->describe(); },
                                                            [&] { return step.kernel->prepare(*n, step.state); }))
      fail(n->describe(), ": the reference kernel declined the node");
    if (options_.kernels == KernelChoice::Optimized) {
      const KernelDef* fast = KernelRegistry::optimized().find_def(n->domain(), n->op_type());
      std::unique_ptr<KernelState> state;
      const bool prepared = fast && (!fast->prepare || naming_allocation_failures([&] { return n->describe(); },
                                                                                 [&] { return fast->prepare(*n, state); }));
      if (prepared) {
        step.kernel = fast;
        step.optimized = true;
        step.state = std::move(state);
      }
    }
    for (const Value* v : n->inputs()) {
      step.inputs.push_back(v ? slot_of(v) : -1);
      if (v) last_reader[slot_of(v)] = steps_.size();
    }
    for (const Value* v : n->implicit_inputs()) {
      step.implicit.push_back(slot_of(v));
      last_reader[slot_of(v)] = steps_.size();
    }
    for (const Value* v : n->outputs()) step.outputs.push_back(v ? slot_of(v) : -1);
    // The reference kernels stay the oracle: with them, every view is made by its kernel.
    if (options_.kernels == KernelChoice::Optimized && n->domain().empty() && n->outputs().size() == 1 &&
        step.outputs[0] >= 0 && !step.inputs.empty() && step.inputs[0] >= 0 && n->input(0)->type.known() &&
        n->output(0)->type.known() && n->input(0)->type.dtype == n->output(0)->type.dtype &&
        n->input(0)->type.dtype != DType::String) {
      // Only where the planner already treats the output as a view of the input.
      const std::string& op = n->op_type();
      step.views_input = step.kernel->may_alias_inputs && (op == "Identity" || op == "Reshape" || op == "Squeeze" ||
                                                           op == "Unsqueeze" || op == "Flatten" || op == "Transpose");
    }
    steps_.push_back(std::move(step));
    // A weight's plain copy goes as soon as its last reader has packed it, so the plain and
    // the packed copies of the whole model are never resident together.
    if (releasable_) {
      step_of.emplace(n, steps_.size() - 1);
      for (const Value* v : n->inputs())
        if (v && v->constant()) release_if_packed(releasable_->value(v->name()), step_of);
    }
  }
  std::set<int> keep;  // graph outputs and constants live for the whole run
  for (const Value* v : graph_->outputs()) keep.insert(slot_of(v));
  for (const Value* v : graph_->initializers()) keep.insert(slot_of(v));
  for (const auto& [slot, step] : last_reader)
    if (!keep.count(slot)) steps_[step].release.push_back(slot);
}

void Session::plan_lifetimes() {
  const size_t n = slot_values_.size();
  // Views share their input's memory: union them into one storage class whose root is
  // the tensor a kernel allocated.
  std::vector<int> root(n);
  for (size_t i = 0; i < n; ++i) root[i] = static_cast<int>(i);
  auto find = [&](int s) {
    while (root[s] != s) s = root[s] = root[root[s]];
    return s;
  };
  std::vector<int> first(n, -1), last(n, -1);
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    for (int out : step.outputs)
      if (out >= 0) first[out] = static_cast<int>(i);
    if (!step.kernel->may_alias_inputs) continue;
    for (int out : step.outputs)
      for (int in : step.inputs)
        if (out >= 0 && in >= 0) root[find(out)] = find(in);
  }
  // A class is planned only when its root was written by a step and no member is a
  // graph output (those must outlive the run's arena).
  std::vector<char> plannable(n, 1);
  for (size_t s = 0; s < n; ++s)
    if (first[s] < 0 && find(static_cast<int>(s)) == static_cast<int>(s)) plannable[s] = 0;
  for (const Value* v : graph_->outputs()) plannable[find(slot_of(v))] = 0;
  life_first_.assign(n, -1);
  life_last_.assign(n, -1);
  for (size_t s = 0; s < n; ++s) {
    int r = find(static_cast<int>(s));
    if (r == static_cast<int>(s) && plannable[s]) life_first_[s] = life_last_[s] = first[s];
  }
  for (size_t i = 0; i < steps_.size(); ++i) {
    auto touch = [&](int slot) {
      if (slot < 0) return;
      int r = find(slot);
      if (life_first_[r] >= 0) life_last_[r] = std::max(life_last_[r], static_cast<int>(i));
    };
    for (int in : steps_[i].inputs) touch(in);
    for (int slot : steps_[i].implicit) touch(slot);
    for (int out : steps_[i].outputs) touch(out);
  }
}

int Session::slot_of(const Value* v) const { return slots_.at(v); }

int Session::optimized_nodes() const {
  int count = 0;
  for (const Step& step : steps_)
    count += step.optimized;
  return count;
}

std::map<std::string, int> Session::reference_ops() const {
  std::map<std::string, int> out;
  for (const Step& step : steps_)
    if (!step.optimized) ++out[(step.node->domain().empty() ? "ai.onnx" : step.node->domain()) + "::" + step.node->op_type()];
  return out;
}

std::vector<const Value*> Session::required_inputs() const {
  std::vector<const Value*> out;
  for (const Value* v : graph_->inputs())
    if (!v->is_initializer()) out.push_back(v);
  return out;
}

}  // namespace octet
