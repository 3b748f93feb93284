#include "generate/in_place_kv_runner.h"

#include <algorithm>
#include <cstring>

#include "core/sizes.h"
#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/pipeline.h"

namespace octet::generate {
namespace {

constexpr const char* kPastLength = "octet_past_length";

// One cached tensor (a layer's keys or values) and the graph inputs standing for it.
struct CacheSlot {
  std::string cache;         // the input CachedAttention reads and writes: [B, G, C, D]
  std::string past_view;     // past_key_values.N.*, when something (Shape) still reads it
  std::string present_view;  // stands for present.N.*: shape only
  int64_t groups = 0, head = 0;
  std::shared_ptr<Buffer> buffer;  // [batch, groups, capacity, head] float32
};

bool is_shape(const Node* n) { return n->domain().empty() && n->op_type() == "Shape"; }

// Every reader of `v` but `except` is a Shape node (they read no data).
bool only_shape_readers(const Value* v, const Node* except) {
  for (const Use& u : v->uses())
    if (u.node != except && !is_shape(u.node)) return false;
  return !passes::read_by_subgraph(v);
}

// The Concat(past, new) on the sequence axis behind a GroupedAttention's K or V, with past
// a graph input and the result a graph output (present.N.*) read otherwise only by Shape.
Node* cache_concat(const Node* attention, const Value* kv, std::string& why) {
  Node* concat = kv->producer();
  const std::string what = "'" + kv->name() + "' (read by " + attention->describe() + ")";
  if (!concat || !concat->domain().empty() || concat->op_type() != "Concat" || concat->inputs().size() != 2) {
    why = what + " is not Concat(past, new)";
    return nullptr;
  }
  const int64_t axis = concat->attr_int("axis", 0);
  const Value* past = concat->input(0);
  if ((axis != 2 && axis != -2) || !past->is_graph_input() || !past->type.dims || past->type.dims->size() != 4) {
    why = what + ": the Concat is not on the sequence axis of a rank-4 graph input";
    return nullptr;
  }
  if (!kv->is_graph_output() || !only_shape_readers(kv, attention) || !only_shape_readers(past, concat)) {
    why = what + ": the past or present tensor has readers other than the attention and Shape nodes";
    return nullptr;
  }
  return concat;
}

// Rewrites every GroupedAttention over Concat(past, new) into CachedAttention (see the
// header); returns the cache slots, or an empty list and `why`.
std::vector<CacheSlot> rewrite_in_place(Graph& g, std::string& why) {
  std::vector<Node*> attentions;
  for (Node* n : g.nodes())
    if (n->domain() == "octet" && n->op_type() == "GroupedAttention") attentions.push_back(n);
  if (attentions.empty()) {
    why = "no attention with past was fused (no octet.GroupedAttention in the optimized graph)";
    return {};
  }
  // Every block must qualify before the graph is touched: on a refusal the caller may
  // still run the graph as it is (the portable runner).
  for (Node* att : attentions)
    for (int i = 0; i < 2; ++i) {
      const Node* concat = cache_concat(att, att->input(1 + i), why);
      if (!concat) return {};
      const DimVector& d = *concat->input(0)->type.dims;
      if (!d[1].constant() || !d[3].constant()) {
        why = "'" + concat->input(0)->name() + "' has a symbolic head count or head size";
        return {};
      }
    }
  Value* past_length = g.add_input(kPastLength, TensorType(DType::Int64, DimVector{Dim(1)}));
  const Dim capacity = Dim::symbol("octet_cache_capacity");
  std::vector<CacheSlot> slots;
  for (Node* att : attentions) {
    Node* concats[2];
    for (int i = 0; i < 2; ++i) concats[i] = att->input(1 + i)->producer();
    GraphPatch patch = make_patch(g);
    std::vector<Value*> inputs = {att->input(0), concats[0]->input(1), concats[1]->input(1)};
    for (Node* concat : concats) {
      Value *past = concat->input(0), *present = concat->output(0);
      CacheSlot slot;
      const DimVector& d = *past->type.dims;
      slot.groups = *d[1].constant();
      slot.head = *d[3].constant();
      slot.past_view = past->name();
      slot.cache = g.unique_name("octet_cache." + past->name());
      inputs.push_back(g.add_input(slot.cache, TensorType(DType::Float32, DimVector{d[0], d[1], capacity, d[3]})));
      // present.N.* becomes Identity(a view input): its Shape readers keep their input,
      // and the graph output the runner never reads costs nothing (Identity aliases).
      slot.present_view = g.unique_name("octet_view." + present->name());
      Value* view = g.add_input(slot.present_view, present->type);
      Node* alias = patch.add_node("Identity", {view}, 1, {}, "", present->name() + "_view");
      patch.replace_uses(present, alias->output(0));
      patch.remove_node(concat);
      slots.push_back(std::move(slot));
    }
    inputs.push_back(past_length);
    inputs.push_back(att->input(3));
    inputs.push_back(att->input(4));
    while (!inputs.back()) inputs.pop_back();
    Node* cached = patch.add_node("CachedAttention", inputs, 1, att->attributes(), "octet", att->name() + "_cached");
    patch.replace_uses(att->output(0), cached->output(0));
    patch.remove_node(att);
    patch.apply();
  }
  // Past inputs now read by nothing stay declared (callers of the plain graph give them);
  // the runner feeds every one a view.
  return slots;
}

class InPlaceKvRunner : public DecoderRunner {
 public:
  InPlaceKvRunner(std::shared_ptr<Graph> graph, std::vector<CacheSlot> slots, const SessionOptions& options)
      : slots_(std::move(slots)) {
    has_positions_ = graph->find_value("position_ids") && graph->find_value("position_ids")->is_graph_input();
    SessionOptions o = options;
    session_ = std::make_unique<Session>(std::move(graph), o);
  }

  Tensor step(const DecoderStep& step) override {
    const int64_t b = step.batch;
    if (b < 1 || step.tokens.empty() || static_cast<int64_t>(step.tokens.size()) % b != 0)
      fail("in-place runner: ", step.tokens.size(), " tokens do not split into ", b, " rows");
    const int64_t s = static_cast<int64_t>(step.tokens.size()) / b;
    if (cached_ > 0 && b != batch_)
      fail("in-place runner: a step of batch ", b, " on a cache of batch ", batch_, " (reorder_rows changes it)");
    ensure_capacity(b, cached_ + s);
    const int64_t total = cached_ + s;

    NamedTensors in;
    in.reserve(4 + 3 * slots_.size() + step.extra_inputs.size());
    Tensor ids(DType::Int64, {b, s});
    std::copy(step.tokens.begin(), step.tokens.end(), ids.mutable_data<int64_t>());
    in.emplace_back("input_ids", std::move(ids));
    Tensor mask(DType::Int64, {b, total});
    std::fill_n(mask.mutable_data<int64_t>(), b * total, int64_t{1});
    in.emplace_back("attention_mask", std::move(mask));
    if (has_positions_) {
      Tensor pos(DType::Int64, {b, s});
      for (int64_t r = 0; r < b; ++r)
        for (int64_t i = 0; i < s; ++i) pos.mutable_data<int64_t>()[r * s + i] = cached_ + i;
      in.emplace_back("position_ids", std::move(pos));
    }
    Tensor past(DType::Int64, {1});
    past.mutable_data<int64_t>()[0] = cached_;
    in.emplace_back(kPastLength, std::move(past));
    for (const CacheSlot& c : slots_) {
      in.emplace_back(c.cache, Tensor(DType::Float32, {b, c.groups, capacity_, c.head}, c.buffer));
      // Shape-only views: the first elements of the cache, never read as data.
      in.emplace_back(c.past_view, view(c, b, cached_));
      in.emplace_back(c.present_view, view(c, b, total));
    }
    for (const auto& e : step.extra_inputs) in.push_back(e);
    NamedTensors out = session_->run(in, profile_);
    cached_ = total;
    batch_ = b;
    return last_logits(out, b, s);
  }

  int64_t cached_tokens() const override { return cached_; }
  void set_profile(RunProfile* profile) { profile_ = profile; }
  void reserve(int64_t max_tokens) override { reserved_ = std::max(reserved_, max_tokens); }
  void reset() override { cached_ = 0; }

  void reorder_rows(const std::vector<int64_t>& rows) override {
    const int64_t nb = static_cast<int64_t>(rows.size());
    for (int64_t r : rows)
      if (r < 0 || r >= batch_) fail("in-place runner: reorder_rows: row ", r, " of a cache of batch ", batch_);
    for (CacheSlot& c : slots_) {
      const int64_t row = c.groups * capacity_ * c.head;
      auto next = Buffer::allocate_uninitialized(checked_tensor_bytes(DType::Float32, {nb, row}, "KV cache"));
      for (int64_t r = 0; r < nb; ++r)
        std::memcpy(next->mutable_data() + r * row * 4, c.buffer->data() + rows[r] * row * 4, row * 4);
      c.buffer = std::move(next);
    }
    batch_ = nb;
  }

 private:
  Tensor view(const CacheSlot& c, int64_t b, int64_t len) const {
    const size_t bytes = checked_tensor_bytes(DType::Float32, {b, c.groups, len, c.head}, "KV cache view");
    return Tensor(DType::Float32, {b, c.groups, len, c.head}, Buffer::borrow(c.buffer->data(), bytes, c.buffer));
  }

  // Caches of at least `tokens` rows for batch b, keeping the cached rows.
  void ensure_capacity(int64_t b, int64_t tokens) {
    if (b == batch_ && tokens <= capacity_ && slots_.front().buffer) return;
    const int64_t cap = std::max({tokens, reserved_, capacity_ * 2});
    for (CacheSlot& c : slots_) {
      auto next = Buffer::allocate(checked_tensor_bytes(DType::Float32, {b, c.groups, cap, c.head}, "KV cache"));
      if (c.buffer && cached_ > 0)
        for (int64_t r = 0; r < b * c.groups; ++r)
          std::memcpy(next->mutable_data() + r * cap * c.head * 4, c.buffer->data() + r * capacity_ * c.head * 4,
                      cached_ * c.head * 4);
      c.buffer = std::move(next);
    }
    capacity_ = cap;
    batch_ = b;
  }

  static Tensor last_logits(const NamedTensors& out, int64_t b, int64_t s) {
    const Tensor* logits = nullptr;
    for (const auto& [name, t] : out)
      if (name == "logits") logits = &t;
    if (!logits) logits = &out.front().second;
    if (logits->dtype() != DType::Float32 || logits->rank() != 3 || logits->shape()[0] != b || logits->shape()[1] != s)
      fail("in-place runner: logits ", logits->describe(), " are not float32 [", b, ", ", s, ", vocab]");
    const int64_t vocab = logits->shape()[2];
    Tensor last(DType::Float32, {b, vocab});
    for (int64_t r = 0; r < b; ++r)
      std::memcpy(last.mutable_data<float>() + r * vocab, logits->data<float>() + (r * s + s - 1) * vocab,
                  vocab * sizeof(float));
    return last;
  }

  std::vector<CacheSlot> slots_;
  std::unique_ptr<Session> session_;
  RunProfile* profile_ = nullptr;
  bool has_positions_ = false;
  int64_t cached_ = 0, batch_ = 0, capacity_ = 0, reserved_ = 0;
};

}  // namespace

std::unique_ptr<DecoderRunner> make_in_place_runner(std::shared_ptr<Graph> graph, const SessionOptions& options,
                                                    std::string* why) {
  std::string reason;
  bool fused = false;
  for (const Node* n : graph->nodes()) fused |= n->domain() == "octet" && n->op_type() == "GroupedAttention";
  if (!fused) optimize(*graph);
  std::vector<CacheSlot> slots = rewrite_in_place(*graph, reason);
  if (slots.empty()) {
    if (why) *why = reason;
    return nullptr;
  }
  return std::make_unique<InPlaceKvRunner>(std::move(graph), std::move(slots), options);
}

bool profile_in_place_runner(DecoderRunner& runner, RunProfile* profile) {
  auto* in_place = dynamic_cast<InPlaceKvRunner*>(&runner);
  if (in_place) in_place->set_profile(profile);
  return in_place != nullptr;
}

}  // namespace octet::generate
