// The in-place DecoderRunner (decoder_runner.h): runs a decoder exported with past in
// optimum's naming whose attention blocks fuse_grouped_attention turned into
// octet.GroupedAttention over Concat(past_key_values.N.*, new) -> present.N.*.
//
// The graph is rewritten once so each attention becomes octet.CachedAttention reading and
// writing runner-owned caches [batch, kv_heads, capacity, head_size]: the Concats go, a step
// writes only its new rows, and nothing copies the cache. Shape computations that read the
// past or present tensors (the past length the mask is built from, GPT-2's causal slice
// bounds) keep reading tensors of the right shape: views over the cache memory, fed as
// inputs, whose data nothing reads (the rewrite checks that only Shape nodes read past and
// present; present.N.* stays an output, an Identity of its view, which the runner ignores).
#pragma once

#include <memory>
#include <string>

#include "generate/decoder_runner.h"

namespace octet::generate {

// The runner, or nullptr when the graph's attention with past cannot run in place; then
// `why` (when not null) says what stopped it (no fused attention, a past read by more than
// the Concat and Shape nodes, ...). The graph is taken: optimized in place when it holds
// no octet.GroupedAttention yet, then rewritten as above.
std::unique_ptr<DecoderRunner> make_in_place_runner(std::shared_ptr<Graph> graph, const SessionOptions& options,
                                                    std::string* why = nullptr);

// Adds the per-node times of the in-place runner's later steps to `profile` (octet
// bench-decode --profile); nullptr stops. False when `runner` is not an in-place runner.
bool profile_in_place_runner(DecoderRunner& runner, RunProfile* profile);

}  // namespace octet::generate
