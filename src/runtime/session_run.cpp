// Session::run: binding inputs, the per-binding run plan, and the step loop.
//
// The step loop is the hot path for small models (a BERT layer at seq 128 is tens of
// microseconds of kernels), so per step it does no string work and no map lookups:
// expected output shapes are evaluated once per plan, and error messages are built only
// when a check fails.
#include <omp.h>

#include <chrono>
#include <cstring>
#include <algorithm>

#include "core/sizes.h"
#include "ops/transpose_layout.h"
#include "runtime/session.h"

namespace octet {

// Hands out arena regions for the outputs the plan placed, heap memory for the rest.
class Session::RunAllocator : public OutputAllocator {
 public:
  RunAllocator(const RunPlan& plan, std::shared_ptr<Buffer> arena) : plan_(plan), arena_(std::move(arena)) {}

  void begin_step(const Step& step) { step_ = &step; }

  std::shared_ptr<Buffer> allocate(size_t output, size_t bytes, bool zero_fill) override {
    int slot = output < step_->outputs.size() ? step_->outputs[output] : -1;
    const ArenaPlan& arena = *plan_.arena;
    if (slot < 0 || arena.offset[slot] < 0 || bytes > arena.reserved[slot])
      return zero_fill ? Buffer::allocate(bytes) : Buffer::allocate_uninitialized(bytes);
    uint8_t* p = arena_->mutable_data() + arena.offset[slot];
    if (zero_fill && bytes > 0) std::memset(p, 0, bytes);
    return Buffer::borrow_writable(p, bytes, arena_);
  }

  bool in_arena(const Tensor& t) const {
    const uint8_t* p = t.raw();
    const uint8_t* base = arena_->data();
    return p && p >= base && p < base + arena_->size();
  }
  // True when `t` sits exactly where the plan put this slot's tensor.
  bool at_planned_place(const Tensor& t, int slot) const {
    const int64_t offset = plan_.arena->offset[slot];
    return offset >= 0 && t.raw() == arena_->data() + offset;
  }
  const std::shared_ptr<Buffer>& arena() const { return arena_; }

 private:
  const RunPlan& plan_;
  std::shared_ptr<Buffer> arena_;
  const Step* step_ = nullptr;
};

namespace {

// True when the Transpose `node` takes `in` to `out` (rank dims) by moving only size-1
// axes, so its output is its input's bytes under the new shape. False for anything else,
// a malformed perm included (the kernel then runs, and reports it).
bool transpose_is_view(const Node& node, const std::vector<int64_t>& in, const int64_t* out, size_t rank) {
  const auto perm = transpose_permutation(node, static_cast<int64_t>(rank));
  if (!perm || in.size() != rank) return false;
  for (size_t i = 0; i < rank; ++i)
    if (in[static_cast<size_t>((*perm)[i])] != out[i]) return false;
  return moves_only_unit_axes(in, *perm);
}

}  // namespace

bool Session::run_view_step(const Step& step, const RunPlan& plan,
                            std::vector<std::shared_ptr<const Tensor>>& values) const {
  const int in = step.inputs[0], out = step.outputs[0];
  const std::shared_ptr<const Tensor>& x = values[in];
  // A released weight (null), folded contents (they stay with the plan: a graph output
  // viewing them would be returned without a copy) or a shape the plan does not know:
  // the kernel runs.
  if (!x || plan.folded[in] || !plan.known_shape[out]) return false;
  const int64_t* dims = planned_shape(plan, out);
  const size_t rank = slot_shape_[out].size;
  // (Before the same-shape case: a [3, 3] Transpose keeps its shape but moves elements.)
  if (step.node->op_type() == "Transpose" && !transpose_is_view(*step.node, x->shape(), dims, rank)) return false;
  if (x->shape().size() == rank && std::equal(dims, dims + rank, x->shape().begin())) {
    values[out] = x;  // the same shape (Identity): the same tensor
    return true;
  }
  int64_t numel = 1;
  for (size_t i = 0; i < rank; ++i) numel *= dims[i];
  // A count that differs is a model error: the kernel reports it.
  if (numel != x->numel()) return false;
  values[out] = std::make_shared<const Tensor>(x->dtype(), std::vector<int64_t>(dims, dims + rank), x->buffer());
  return true;
}

NamedTensors Session::run(const NamedTensors& inputs, RunProfile* profile) const {
  return run_named(inputs, profile, nullptr);
}

NamedTensors Session::run(const NamedTensors& inputs, const ValueObserver& observer) const {
  return run_named(inputs, nullptr, observer ? &observer : nullptr);
}

int Session::input_position(const std::string& name) const {
  const auto& ins = graph_->inputs();
  for (size_t i = 0; i < ins.size(); ++i)
    if (ins[i]->name() == name) return static_cast<int>(i);
  return -1;
}

int Session::output_position(const std::string& name) const {
  const auto& outs = graph_->outputs();
  for (size_t i = 0; i < outs.size(); ++i)
    if (outs[i]->name() == name) return static_cast<int>(i);
  return -1;
}

NamedTensors Session::run_named(const NamedTensors& inputs, RunProfile* profile, const ValueObserver* observer) const {
  std::vector<std::pair<int, const Tensor*>> positional;
  positional.reserve(inputs.size());
  for (const auto& [name, tensor] : inputs) {
    const Value* v = graph_->find_value(name);
    if (!v || !v->is_graph_input()) {
      std::string expected;
      for (const Value* r : required_inputs()) expected += (expected.empty() ? "" : ", ") + r->name();
      fail("'", name, "' is not an input of this model (inputs: ", expected, ")");
    }
    positional.emplace_back(input_of_slot_[slot_of(v)], &tensor);
  }
  std::vector<Tensor> out = run_steps(positional, nullptr, profile, observer);
  NamedTensors named;
  named.reserve(out.size());
  for (size_t i = 0; i < out.size(); ++i) named.emplace_back(slot_values_[output_slots_[i]]->name(), std::move(out[i]));
  return named;
}

std::vector<Tensor> Session::run_positional(const PositionalTensors& inputs, const std::vector<int>& outputs,
                                            RunProfile* profile) const {
  std::vector<std::pair<int, const Tensor*>> positional;
  positional.reserve(inputs.size());
  for (const auto& [position, tensor] : inputs) {
    if (position < 0 || static_cast<size_t>(position) >= input_slots_.size())
      fail("input position ", position, " is not one of this model's ", input_slots_.size(), " inputs");
    positional.emplace_back(position, &tensor);
  }
  for (int o : outputs)
    if (o < 0 || static_cast<size_t>(o) >= output_slots_.size())
      fail("output position ", o, " is not one of this model's ", output_slots_.size(), " outputs");
  return run_steps(positional, &outputs, profile, nullptr);
}

std::shared_ptr<const std::vector<char>> Session::unneeded_steps(const std::vector<int>& outputs) const {
  {
    std::lock_guard<std::mutex> lock(plans_mutex_);
    auto it = unneeded_.find(outputs);
    if (it != unneeded_.end()) return it->second;
  }
  std::vector<char> needed_slot(slot_values_.size(), 0);
  for (int o : outputs) needed_slot[output_slots_[static_cast<size_t>(o)]] = 1;
  auto unneeded = std::make_shared<std::vector<char>>(steps_.size(), 1);
  for (size_t i = steps_.size(); i-- > 0;) {
    const Step& step = steps_[i];
    bool needed = false;
    for (int out : step.outputs) needed = needed || (out >= 0 && needed_slot[out]);
    if (!needed) continue;
    (*unneeded)[i] = 0;
    for (int in : step.inputs)
      if (in >= 0) needed_slot[in] = 1;
    for (int in : step.implicit) needed_slot[in] = 1;
  }
  std::lock_guard<std::mutex> lock(plans_mutex_);
  // A caller asks for one list or a few: bounded anyway.
  if (unneeded_.size() >= 16) unneeded_.clear();
  unneeded_.emplace(outputs, unneeded);
  return unneeded;
}

std::vector<Tensor> Session::run_steps(const std::vector<std::pair<int, const Tensor*>>& inputs,
                                       const std::vector<int>* wanted, RunProfile* profile,
                                       const ValueObserver* observer) const {
  // oneDNN and the kernels' parallel loops size their teams from this thread's setting;
  // the governor picks it per run (one thread beside a neighbour).
  const ThreadGovernor::Run governed = governor_->begin();
  const int threads = governed.threads;
  omp_set_num_threads(threads);
  std::vector<std::shared_ptr<const Tensor>> values(slot_values_.size());
  for (int slot : initializer_slots_) values[slot] = slot_values_[slot]->constant();

  // Bind and validate inputs (compiled per session: runtime/input_binding.h).
  InputBinder::State bound = binder_.start();
  std::vector<char> given(slot_values_.size(), 0);
  for (const auto& [position, tensor] : inputs) {
    const int slot = input_slots_[static_cast<size_t>(position)];
    const Value* v = slot_values_[slot];
    if (given[slot]) fail("input '", v->name(), "' is given twice");
    given[slot] = 1;
    if (v->type.known() && tensor->dtype() != v->type.dtype)
      fail("input '", v->name(), "' is ", dtype_name(tensor->dtype()), ", the model expects ",
           dtype_name(v->type.dtype));
    binder_.bind(position, tensor->shape(), bound);
    values[slot] = std::make_shared<const Tensor>(*tensor);
    if (observer) (*observer)(*v, *tensor);
  }
  for (int slot : required_slots_)
    if (!given[slot]) {
      const Value* v = slot_values_[slot];
      fail("input '", v->name(), "' (", v->type.to_string(), ") is missing");
    }
  binder_.finish(bound);
  // Steps whose outputs nothing wanted reads do not run (run_positional's output list).
  const std::shared_ptr<const std::vector<char>> unneeded = wanted ? unneeded_steps(*wanted) : nullptr;

  std::shared_ptr<const RunPlan> plan = plan_for(bound);
  // The name -> value bindings, made only when a step's output binds a symbol its plan
  // did not know (a fresh dim of an op whose output shape depends on data).
  Bindings bindings;
  bool have_bindings = false;
  const ArenaPlan& arena = *plan->arena;
  // The arena holds every planned tensor; when it cannot be had, the largest one says why.
  const auto arena_label = [&] {
    size_t largest = 0;
    for (size_t s = 1; s < arena.reserved.size(); ++s)
      if (arena.reserved[s] > arena.reserved[largest]) largest = s;
    const Value* v = slot_values_.empty() ? nullptr : slot_values_[largest];
    std::string label = "the run's memory (" + std::to_string(arena.size) + " bytes";
    if (v) label += "; the largest tensor is " + (v->producer() ? v->producer()->describe() + " output " : std::string()) +
                    "'" + v->name() + "', " + std::to_string(arena.reserved[largest]) + " bytes";
    return label + ")";
  };
  RunAllocator allocator(*plan, naming_allocation_failures(arena_label, [&] { return arenas_.acquire(arena.size); }));
  if (profile && profile->steps.size() != steps_.size()) {
    profile->steps.assign(steps_.size(), {});
    for (size_t i = 0; i < steps_.size(); ++i) {
      profile->steps[i].node = steps_[i].node;
      profile->steps[i].optimized = steps_[i].optimized;
    }
  }
  std::vector<const Tensor*> in;
  for (size_t index = 0; index < steps_.size(); ++index) {
    const Step& step = steps_[index];
    if (unneeded && (*unneeded)[index]) {
      for (int slot : step.release) values[slot].reset();
      continue;
    }
    if (plan->folded_step[index]) {
      // The bindings decided these outputs when the plan was made: nothing to run.
      for (int slot : step.outputs)
        if (slot >= 0) {
          values[slot] = plan->folded[slot];
          if (observer) (*observer)(*slot_values_[slot], *values[slot]);
        }
      for (int slot : step.release) values[slot].reset();
      continue;
    }
    const auto step_start = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    auto record = [&] {  // the step's time and call, when profiling
      if (!profile) return;
      profile->steps[index].ms +=
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - step_start).count();
      ++profile->steps[index].calls;
    };
    if (step.views_input && run_view_step(step, *plan, values)) {
      const int out = step.outputs[0];
      if (observer) (*observer)(*slot_values_[out], *values[out]);
      for (int slot : step.release) values[slot].reset();
      record();
      continue;
    }
    in.clear();
    for (int slot : step.inputs) {
      // A released weight stays null: the step's kernel keeps its own packed copy.
      OCTET_ASSERT(slot < 0 || values[slot] || released_[slot], "value not computed before ", step.node->describe());
      in.push_back(slot >= 0 ? values[slot].get() : nullptr);
    }
    // A control-flow node's subgraphs read outer values (implicit inputs): its kernel finds
    // them after the node's own inputs, in node->implicit_inputs() order.
    for (int slot : step.implicit) in.push_back(values[slot].get());
    KernelContext ctx(*step.node, in);
    ctx.set_state(step.state.get());
    ctx.set_threads(threads);
    allocator.begin_step(step);
    ctx.set_allocator(&allocator);
    naming_allocation_failures([&] { return step.node->describe(); }, [&] { step.kernel->run(ctx); });
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      int slot = step.outputs[i];
      if (slot < 0) continue;
      Tensor& out = ctx.outputs()[i];
      const Value* v = slot_values_[slot];
      if (out.dtype() == DType::Undefined)
        fail(step.node->describe(), ": produced no output ", i, " ('", v->name(), "'); the op has fewer outputs than "
             "the node lists, or its kernel does not compute this one");
      if (options_.check_inferred_shapes && v->type.known()) {
        if (v->type.dtype != out.dtype())
          fail("internal error: ", step.node->describe(), " output '", v->name(), "' is ",
               dtype_name(out.dtype()), " but inference said ", dtype_name(v->type.dtype));
        if (plan->known_shape[slot]) {
          const int64_t* expected = planned_shape(*plan, slot);
          const size_t rank = slot_shape_[slot].size;
          if (out.shape().size() != rank || !std::equal(expected, expected + rank, out.shape().begin()))
            fail("internal error: ", step.node->describe(), " output '", v->name(), "' has shape ",
                 shape_to_string(out.shape()), " but inference said ",
                 shape_to_string(std::vector<int64_t>(expected, expected + rank)), " (", dims_to_string(*v->type.dims),
                 ")");
        } else if (v->type.dims) {
          // Symbols first seen here (fresh ones from unknown dims) get bound by the result.
          if (!have_bindings) {
            bindings = binder_.bindings(bound);
            have_bindings = true;
          }
          bind_dims(*v->type.dims, out.shape(),
                    [&] { return "internal error: " + step.node->describe() + " output '" + v->name() + "'"; },
                    bindings);
        }
      }
      // A kernel not declared as a view may still return an input's memory (a no-op
      // Cast); when that memory is in the arena, the plan does not know to keep it, so
      // the output gets its own copy.
      if (!step.kernel->may_alias_inputs && allocator.in_arena(out) && !allocator.at_planned_place(out, slot))
        out = out.deep_copy();
      values[slot] = std::make_shared<const Tensor>(std::move(out));
      if (observer) (*observer)(*v, *values[slot]);
    }
    for (int slot : step.release) values[slot].reset();
    record();
  }
  if (profile) ++profile->runs;

  std::vector<Tensor> outputs;
  const size_t n_out = wanted ? wanted->size() : output_slots_.size();
  outputs.reserve(n_out);
  for (size_t i = 0; i < n_out; ++i) {
    const int slot = output_slots_[wanted ? static_cast<size_t>((*wanted)[i]) : i];
    const auto& t = values[slot];
    OCTET_ASSERT(t, "graph output '", slot_values_[slot]->name(), "' was not computed");
    // The arena goes back to the pool, and folded contents stay with the plan: nothing
    // returned may point into either.
    outputs.push_back(allocator.in_arena(*t) || t == plan->folded[slot] ? t->deep_copy() : *t);
  }
  values.clear();
  arenas_.release(allocator.arena());
  governor_->end(governed);
  return outputs;
}

}  // namespace octet
