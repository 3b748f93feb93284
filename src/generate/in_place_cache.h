// What the in-place runners share (in_place_kv_runner.h for decoder-only models,
// seq2seq_in_place_runner.h for encoder-decoders): the graph rewrite that turns each
// octet.GroupedAttention over Concat(past_key_values.X, new) -> present.X into
// octet.CachedAttention over a runner-owned cache, and those caches.
//
// The rewrite. Each such attention reads and writes a cache input [B, G, capacity, D]
// (one per key and value): the Concats go, a step writes only its new rows. Shape
// computations that read the past or present tensors (the past length a mask is built
// from, GPT-2's causal slice bounds, Whisper's position slice, T5's relative positions)
// keep reading tensors of the right shape: views over the cache memory, fed as inputs,
// whose data nothing reads (the rewrite checks that only Shape nodes read past and present;
// present.X stays an output, an Identity of its view, which the runners ignore).
//
// A seq2seq decoder's cross-attention reads its keys/values straight from graph inputs
// (past_key_values.N.encoder.*, no Concat: they never grow). With `read_only_inputs` those
// attentions stay GroupedAttention and the runner feeds the tensors it holds.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace octet::generate {

// The int64 [1] input every CachedAttention reads: the rows already in the caches.
extern const char* const kPastLength;

// One cached tensor (a layer's keys or values) and the graph inputs standing for it.
struct CacheSlot {
  std::string cache;         // the input CachedAttention reads and writes: [B, G, C, D]
  std::string past_view;     // past_key_values.X (Shape readers only, if any)
  std::string present_view;  // stands for present.X: shape only
  std::string present;       // present.X: what a first-step model returns for this slot
  int64_t groups = 0, head = 0;
  std::shared_ptr<Buffer> buffer;  // [batch, groups, capacity, head] float32
};

struct RewriteOptions {
  // Leave attentions whose keys and values are both graph inputs (cross-attention) as
  // they are, instead of refusing the graph.
  bool read_only_inputs = false;
};

// Rewrites the graph as above and returns the cache slots (two per rewritten attention), or
// an empty list with `why` set and the graph untouched (every attention is checked before
// anything changes, so the caller may still run the graph as it is).
std::vector<CacheSlot> rewrite_in_place(Graph& g, const RewriteOptions& options, std::string& why);

// The caches of the rewritten attentions: [batch, groups, capacity, head] float32 each,
// the first `cached` rows of each (batch, group) filled.
class SelfCaches {
 public:
  explicit SelfCaches(std::vector<CacheSlot> slots) : slots_(std::move(slots)) {}

  const std::vector<CacheSlot>& slots() const { return slots_; }
  int64_t batch() const { return batch_; }
  int64_t capacity() const { return capacity_; }

  void reserve(int64_t tokens) { reserved_ = std::max(reserved_, tokens); }
  // Caches of at least `tokens` rows for batch b; the first `cached` rows are kept (a new
  // batch keeps nothing: only reorder_rows changes the batch of a filled cache).
  void ensure_capacity(int64_t b, int64_t tokens, int64_t cached);
  // Adds past_length, every cache and its past/present views to `in`.
  void feed(NamedTensors& in, int64_t cached, int64_t total) const;
  // The same by input position (Session::run_positional): `positions` from
  // input_positions(session), looked up once.
  std::vector<int> input_positions(const Session& session) const;
  void feed(Session::PositionalTensors& in, const std::vector<int>& positions, int64_t cached, int64_t total) const;
  // Writes rows [at, at + n) of slot i from `rows` [batch, groups, n, head] float32.
  void write_rows(size_t i, const Tensor& rows, int64_t at);
  // Row r becomes the old row rows[r]; every index must be < batch().
  void reorder_rows(const std::vector<int64_t>& rows);

 private:
  Tensor view(const CacheSlot& c, int64_t len) const;

  std::vector<CacheSlot> slots_;
  int64_t batch_ = 0, capacity_ = 0, reserved_ = 0;
};

// The logits of each row's last token: float32 [b, vocab] from the model's `logits`
// output [b, s, vocab] (the first output when none is named so).
Tensor last_logits(const NamedTensors& out, int64_t b, int64_t s, const char* who);
Tensor last_logits(const Tensor& logits, int64_t b, int64_t s, const char* who);

}  // namespace octet::generate
