// Session run plans: what a run needs to know for one set of input bindings (the shape of
// every value, the contents of the shape values the bindings decide, where each tensor
// lives in the arena), made cheaply enough to redo at every decode step.
//
// Once per session (compile_shapes) every inferred shape and every folded content is
// compiled into a DimTable, so a plan evaluates each distinct symbolic dim once. A decode
// loop binds a new past length every step, so it gets a new plan every step; two things
// keep that cheap:
//   - folded contents that did not change are shared with the previous plan, not rebuilt;
//   - the arena layout of the previous plan is reused whenever every tensor still fits the
//     bytes it reserved. When one does not, the new layout reserves twice the bytes of each
//     tensor that grew, so a tensor growing one token a step is laid out again only each
//     time it doubles.
#include <algorithm>
#include <cstring>

#include "core/sizes.h"
#include "runtime/session.h"

namespace octet {

namespace {

// Plans are cached per binding; a caller cycling through many shapes must not grow the
// cache without bound (a decode loop makes a new binding every step).
constexpr size_t kMaxCachedPlans = 16;

size_t aligned(int64_t bytes) {
  const size_t n = std::max<size_t>(static_cast<size_t>(bytes), 1);
  return (n + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

bool foldable_dtype(DType t) { return t == DType::Int64 || t == DType::Int32 || t == DType::Bool; }

bool same_contents(const Tensor& t, const int64_t* values, size_t n) {
  if (static_cast<size_t>(t.numel()) != n) return false;
  for (size_t i = 0; i < n; ++i) {
    bool same = false;
    switch (t.dtype()) {
      case DType::Int64: same = t.data<int64_t>()[i] == values[i]; break;
      case DType::Int32: same = t.data<int32_t>()[i] == static_cast<int32_t>(values[i]); break;
      default: same = t.data<bool>()[i] == (values[i] != 0); break;
    }
    if (!same) return false;
  }
  return true;
}

Tensor make_contents(DType dtype, std::vector<int64_t> shape, const int64_t* values, size_t n) {
  Tensor t = Tensor::uninitialized(dtype, std::move(shape));
  for (size_t i = 0; i < n; ++i) switch (dtype) {
      case DType::Int64: t.mutable_data<int64_t>()[i] = values[i]; break;
      case DType::Int32: t.mutable_data<int32_t>()[i] = static_cast<int32_t>(values[i]); break;
      default: t.mutable_data<bool>()[i] = values[i] != 0; break;
    }
  return t;
}

}  // namespace

void Session::compile_shapes() {
  const size_t n = slot_values_.size();
  slot_shape_.assign(n, {});
  slot_contents_.assign(n, {});
  has_shape_.assign(n, 0);
  has_contents_.assign(n, 0);
  for (size_t s = 0; s < n; ++s) {
    const TensorType& type = slot_values_[s]->type;
    if (!type.known() || !type.dims) continue;
    slot_shape_[s] = dim_table_.add(*type.dims);
    has_shape_[s] = 1;
    if (life_first_[s] >= 0 && type.dtype != DType::String) arena_slots_.push_back(static_cast<int>(s));
  }
  input_of_slot_.assign(n, -1);
  int inputs = 0;
  for (const Value* v : graph_->inputs()) {
    if (!v->is_initializer()) required_slots_.push_back(slot_of(v));
    input_of_slot_[slot_of(v)] = inputs++;
    input_slots_.push_back(slot_of(v));
    binder_.add(v->name(), v->type.dims ? &*v->type.dims : nullptr);
  }
  for (const Value* v : graph_->initializers()) initializer_slots_.push_back(slot_of(v));
  for (const Value* v : graph_->outputs()) output_slots_.push_back(slot_of(v));
  // The reference kernels stay the oracle: with them, every value is computed by its kernel.
  if (options_.kernels != KernelChoice::Optimized) return;
  for (Step& step : steps_) {
    if (!step.implicit.empty()) continue;
    bool foldable = false;
    for (int out : step.outputs) {
      if (out < 0) continue;
      const Value* v = slot_values_[out];
      foldable = v->known_values && has_shape_[out] && v->type.dims->size() <= 1 && foldable_dtype(v->type.dtype);
      if (!foldable) break;
    }
    if (!foldable) continue;
    step.foldable = true;
    for (int out : step.outputs)
      if (out >= 0) {
        slot_contents_[out] = dim_table_.add(*slot_values_[out]->known_values);
        has_contents_[out] = 1;
      }
  }
}

std::shared_ptr<const Session::RunPlan> Session::plan_for(const InputBinder::State& state) const {
  {
    std::lock_guard<std::mutex> lock(plans_mutex_);
    auto it = plans_.find(state.symbols);
    if (it != plans_.end()) return it->second;
  }
  auto plan = make_plan(binder_.bindings(state), true);
  std::lock_guard<std::mutex> lock(plans_mutex_);
  if (plans_.emplace(state.symbols, plan).second) plan_order_.push_back(state.symbols);
  while (plans_.size() > kMaxCachedPlans) {
    plans_.erase(plan_order_.front());
    plan_order_.pop_front();
  }
  last_plan_ = plan;
  return plan;
}

std::shared_ptr<const Session::RunPlan> Session::make_plan(const Bindings& bindings, bool reuse_arena) const {
  auto plan = std::make_shared<RunPlan>();
  const size_t n = slot_values_.size();
  dim_table_.evaluate(bindings, plan->dims, plan->dim_known);
  plan->known_shape.assign(n, 0);
  for (size_t s = 0; s < n; ++s) {
    if (!has_shape_[s]) continue;
    const DimTable::Span span = slot_shape_[s];
    bool all = true;
    for (uint32_t i = 0; i < span.size && all; ++i) all = plan->dim_known[span.offset + i];
    plan->known_shape[s] = all;
  }
  std::shared_ptr<const RunPlan> previous;
  if (reuse_arena) {
    std::lock_guard<std::mutex> lock(plans_mutex_);
    previous = last_plan_;
  }
  fold_steps(*plan, previous.get());

  plan->bytes.assign(n, -1);
  for (int s : arena_slots_) {
    if (!plan->known_shape[s] || plan->folded[s]) continue;
    const Value* v = slot_values_[s];
    // The element count without building a shape vector (a decode step's plan sizes some
    // 400 tensors); a negative dim or an overflow goes to the checked path below.
    const int64_t* dims = planned_shape(*plan, s);
    int64_t numel = 1;
    bool ok = true;
    for (uint32_t i = 0; i < slot_shape_[s].size && ok; ++i)
      ok = dims[i] >= 0 && !__builtin_mul_overflow(numel, dims[i], &numel);
    auto bytes = ok ? try_storage_bytes(v->type.dtype, numel) : std::nullopt;
    // Else fails, naming the tensor and the limit it passed.
    plan->bytes[s] = static_cast<int64_t>(
        bytes ? *bytes
              : checked_tensor_bytes(v->type.dtype, std::vector<int64_t>(dims, dims + slot_shape_[s].size),
                                     (v->producer() ? v->producer()->describe() + " output '" : "'") + v->name() + "'"));
  }
  plan->arena = place_arena(*plan, previous ? previous->arena : nullptr);
  return plan;
}

void Session::fold_steps(RunPlan& plan, const RunPlan* previous) const {
  plan.folded.assign(slot_values_.size(), nullptr);
  plan.folded_step.assign(steps_.size(), 0);
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    if (!step.foldable) continue;
    bool decided = true;
    for (int out : step.outputs) {
      if (out < 0) continue;
      const DimTable::Span span = slot_contents_[out];
      if (!plan.known_shape[out]) decided = false;
      for (uint32_t k = 0; k < span.size && decided; ++k) decided = plan.dim_known[span.offset + k];
      // Inference promised contents that fill the shape; a rule that did not is not trusted.
      int64_t numel = 1;
      for (uint32_t k = 0; decided && k < slot_shape_[out].size; ++k) numel *= planned_shape(plan, out)[k];
      if (decided && numel != static_cast<int64_t>(span.size)) decided = false;
      if (!decided) break;
    }
    if (!decided) continue;
    for (int out : step.outputs) {
      if (out < 0) continue;
      const DimTable::Span span = slot_contents_[out];
      const int64_t* values = plan.dims.data() + span.offset;
      if (previous && previous->folded[out] && same_contents(*previous->folded[out], values, span.size)) {
        plan.folded[out] = previous->folded[out];
        continue;
      }
      const int64_t* dims = planned_shape(plan, out);
      plan.folded[out] = std::make_shared<const Tensor>(make_contents(
          slot_values_[out]->type.dtype, std::vector<int64_t>(dims, dims + slot_shape_[out].size), values, span.size));
    }
    plan.folded_step[i] = 1;
  }
}

std::shared_ptr<const Session::ArenaPlan> Session::place_arena(const RunPlan& plan,
                                                               const std::shared_ptr<const ArenaPlan>& previous) const {
  // The previous layout serves when every tensor fits the bytes it reserved there, and
  // the tensors fill at least half of those bytes: a long prompt's layout would spread
  // the small tensors of the decode steps after it over far more memory.
  const ArenaPlan* grow_from = nullptr;
  if (previous) {
    bool fits = true;
    size_t total = 0;
    for (int s : arena_slots_) {
      const int64_t b = plan.bytes[s];
      if (b < 0) continue;
      fits = fits && previous->offset[s] >= 0 && static_cast<size_t>(b) <= previous->reserved[s];
      total += aligned(b);
    }
    const bool dense = total * 2 >= previous->reserved_total;
    if (fits && dense) return previous;
    // Outgrown, not oversized: the new layout keeps the old reservations.
    if (dense) grow_from = previous.get();
  }
  std::vector<Lifetime> lives;
  std::vector<int> lives_slot;
  for (int s : arena_slots_) {
    const int64_t b = plan.bytes[s];
    if (b < 0) continue;
    size_t reserve = static_cast<size_t>(b);
    if (grow_from && grow_from->offset[s] >= 0) {
      // A tensor that outgrew its place keeps growing (a decode step's past): room to
      // double, so it is laid out again only each time it doubles.
      const size_t had = grow_from->reserved[s];
      reserve = reserve > had ? 2 * reserve : had;
    }
    lives.push_back({reserve, life_first_[s], life_last_[s]});
    lives_slot.push_back(s);
  }
  ArenaLayout layout = place_lifetimes(lives);
  auto arena = std::make_shared<ArenaPlan>();
  arena->offset.assign(slot_values_.size(), -1);
  arena->reserved.assign(slot_values_.size(), 0);
  for (size_t i = 0; i < lives.size(); ++i) {
    arena->offset[lives_slot[i]] = static_cast<int64_t>(layout.offsets[i]);
    arena->reserved[lives_slot[i]] = lives[i].bytes;
    arena->reserved_total += aligned(static_cast<int64_t>(lives[i].bytes));
  }
  arena->size = layout.total_bytes;
  return arena;
}

Session::MemoryStats Session::memory_stats(const Bindings& bindings) const {
  auto plan = make_plan(bindings, false);
  MemoryStats stats;
  stats.arena_bytes = plan->arena->size;
  for (int s : arena_slots_)
    if (plan->bytes[s] >= 0) {
      stats.tensor_bytes += static_cast<size_t>(plan->bytes[s]);
      ++stats.arena_tensors;
    }
  return stats;
}

}  // namespace octet
