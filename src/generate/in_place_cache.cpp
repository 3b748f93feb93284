#include "generate/in_place_cache.h"

#include <algorithm>
#include <cstring>

#include "core/sizes.h"
#include "octet/error.h"
#include "ops/infer.h"
#include "passes/pattern.h"

namespace octet::generate {

const char* const kPastLength = "octet_past_length";

namespace {

bool is_attention(const Node* n) { return n->domain() == "octet" && n->op_type() == "GroupedAttention"; }
bool is_shape(const Node* n) { return n->domain().empty() && n->op_type() == "Shape"; }

// Every reader of `v` but `except` is a Shape node (they read no data).
bool only_shape_readers(const Value* v, const Node* except) {
  for (const Use& u : v->uses())
    if (u.node != except && !is_shape(u.node)) return false;
  return !passes::read_by_subgraph(v);
}

// The Concat(past, new) on the sequence axis behind a GroupedAttention's K or V, with past
// a graph input and the result a graph output (present.X) read otherwise only by Shape.
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
  const DimVector& d = *past->type.dims;
  if (!d[1].constant() || !d[3].constant()) {
    why = "'" + past->name() + "' has a symbolic head count or head size";
    return nullptr;
  }
  return concat;
}

// A cross-attention: keys and values are graph inputs, read in place every step.
bool reads_inputs(const Node* att) {
  return att->input(1)->is_graph_input() && att->input(2)->is_graph_input() && !att->input(1)->is_initializer() &&
         !att->input(2)->is_initializer();
}

}  // namespace

std::vector<CacheSlot> rewrite_in_place(Graph& g, const RewriteOptions& options, std::string& why) {
  std::vector<Node*> attentions;
  bool any = false;
  for (Node* n : g.nodes()) {
    if (!is_attention(n)) continue;
    any = true;
    if (!(options.read_only_inputs && reads_inputs(n))) attentions.push_back(n);
  }
  if (attentions.empty()) {
    why = any ? "every fused attention reads its keys/values from inputs; none appends to a cache"
              : "no attention with past was fused (no octet.GroupedAttention in the optimized graph)";
    return {};
  }
  // Every block must qualify before the graph is touched: on a refusal the caller may
  // still run the graph as it is (the portable runner).
  for (Node* att : attentions)
    for (int i = 0; i < 2; ++i)
      if (!cache_concat(att, att->input(1 + i), why)) return {};
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
      slot.present = present->name();
      slot.cache = g.unique_name("octet_cache." + past->name());
      inputs.push_back(g.add_input(slot.cache, TensorType(DType::Float32, DimVector{d[0], d[1], capacity, d[3]})));
      // present.X becomes Identity(a view input): its Shape readers keep their input,
      // and the graph output the runner never reads costs nothing (Identity aliases).
      slot.present_view = g.unique_name("octet_view." + present->name());
      Value* view = g.add_input(slot.present_view, present->type);
      Node* alias = patch.add_node("Identity", {view}, 1, {}, "", present->name() + "_view");
      patch.replace_uses(present, alias->output(0));
      patch.remove_node(concat);
      slots.push_back(std::move(slot));
    }
    inputs.push_back(past_length);
    // mask, keep and the static int8 fake quantization, as they are
    for (size_t i = 3; i < att->inputs().size(); ++i) inputs.push_back(att->input(i));
    while (!inputs.back()) inputs.pop_back();
    Node* cached = patch.add_node("CachedAttention", inputs, 1, att->attributes(), "octet", att->name() + "_cached");
    patch.replace_uses(att->output(0), cached->output(0));
    patch.remove_node(att);
    patch.apply();
  }
  // Past inputs now read by nothing stay declared (callers of the plain graph give them);
  // the runners feed every one a view.
  return slots;
}

void SelfCaches::ensure_capacity(int64_t b, int64_t tokens, int64_t cached) {
  if (b == batch_ && tokens <= capacity_ && slots_.front().buffer) return;
  const int64_t cap = std::max({tokens, reserved_, capacity_ * 2});
  const bool keep = b == batch_ && cached > 0;
  for (CacheSlot& c : slots_) {
    auto next = Buffer::allocate(checked_tensor_bytes(DType::Float32, {b, c.groups, cap, c.head}, "KV cache"));
    if (c.buffer && keep)
      for (int64_t r = 0; r < b * c.groups; ++r)
        std::memcpy(next->mutable_data() + r * cap * c.head * 4, c.buffer->data() + r * capacity_ * c.head * 4,
                    cached * c.head * 4);
    c.buffer = std::move(next);
  }
  capacity_ = cap;
  batch_ = b;
}

Tensor SelfCaches::view(const CacheSlot& c, int64_t len) const {
  const size_t bytes = checked_tensor_bytes(DType::Float32, {batch_, c.groups, len, c.head}, "KV cache view");
  return Tensor(DType::Float32, {batch_, c.groups, len, c.head}, Buffer::borrow(c.buffer->data(), bytes, c.buffer));
}

void SelfCaches::feed(NamedTensors& in, int64_t cached, int64_t total) const {
  Tensor past(DType::Int64, {1});
  past.mutable_data<int64_t>()[0] = cached;
  in.emplace_back(kPastLength, std::move(past));
  for (const CacheSlot& c : slots_) {
    in.emplace_back(c.cache, Tensor(DType::Float32, {batch_, c.groups, capacity_, c.head}, c.buffer));
    // Shape-only views: the first elements of the cache, never read as data.
    in.emplace_back(c.past_view, view(c, cached));
    in.emplace_back(c.present_view, view(c, total));
  }
}

std::vector<int> SelfCaches::input_positions(const Session& session) const {
  std::vector<int> out;
  auto find = [&](const std::string& name) {
    const int p = session.input_position(name);
    if (p < 0) fail("in-place runner: the rewritten model has no input '", name, "'");
    out.push_back(p);
  };
  find(kPastLength);
  for (const CacheSlot& c : slots_) {
    find(c.cache);
    find(c.past_view);
    find(c.present_view);
  }
  return out;
}

void SelfCaches::feed(Session::PositionalTensors& in, const std::vector<int>& positions, int64_t cached,
                      int64_t total) const {
  OCTET_ASSERT(positions.size() == 1 + 3 * slots_.size(), "in-place cache: positions of another model");
  Tensor past(DType::Int64, {1});
  past.mutable_data<int64_t>()[0] = cached;
  in.emplace_back(positions[0], std::move(past));
  size_t p = 1;
  for (const CacheSlot& c : slots_) {
    in.emplace_back(positions[p++], Tensor(DType::Float32, {batch_, c.groups, capacity_, c.head}, c.buffer));
    in.emplace_back(positions[p++], view(c, cached));
    in.emplace_back(positions[p++], view(c, total));
  }
}

void SelfCaches::write_rows(size_t i, const Tensor& rows, int64_t at) {
  const CacheSlot& c = slots_.at(i);
  const auto& s = rows.shape();
  if (rows.dtype() != DType::Float32 || rows.rank() != 4 || s[0] != batch_ || s[1] != c.groups || s[3] != c.head ||
      at + s[2] > capacity_)
    fail("in-place cache '", c.present, "': ", rows.describe(), " does not fit [", batch_, ", ", c.groups, ", ",
         capacity_ - at, ", ", c.head, "]");
  const int64_t n = s[2];
  for (int64_t r = 0; r < batch_ * c.groups; ++r)
    std::memcpy(c.buffer->mutable_data() + (r * capacity_ + at) * c.head * 4, rows.raw() + r * n * c.head * 4,
                n * c.head * 4);
}

void SelfCaches::reorder_rows(const std::vector<int64_t>& rows) {
  const int64_t nb = static_cast<int64_t>(rows.size());
  if (nb == 0) fail("in-place runner: reorder_rows: no rows");
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

Tensor last_logits(const NamedTensors& out, int64_t b, int64_t s, const char* who) {
  const Tensor* logits = nullptr;
  for (const auto& [name, t] : out)
    if (name == "logits") logits = &t;
  if (!logits) logits = &out.front().second;
  return last_logits(*logits, b, s, who);
}

Tensor last_logits(const Tensor& logits_tensor, int64_t b, int64_t s, const char* who) {
  const Tensor* logits = &logits_tensor;
  if (logits->dtype() != DType::Float32 || logits->rank() != 3 || logits->shape()[0] != b || logits->shape()[1] != s)
    fail(who, ": logits ", logits->describe(), " are not float32 [", b, ", ", s, ", vocab]");
  const int64_t vocab = logits->shape()[2];
  Tensor last(DType::Float32, {b, vocab});
  for (int64_t r = 0; r < b; ++r)
    std::memcpy(last.mutable_data<float>() + r * vocab, logits->data<float>() + (r * s + s - 1) * vocab,
                vocab * sizeof(float));
  return last;
}

}  // namespace octet::generate
