// Picks the DecoderRunner for a decoder export: the in-place runner (cached attention,
// in_place_kv_runner.h) where its fusion applies, else the portable one. Loading and
// optimizing the files happens here too, so callers (the public API, tests, the CLI) only
// name files.
#pragma once

#include <memory>
#include <string>

#include "generate/decoder_runner.h"
#include "runtime/session.h"

namespace octet::generate {

struct DecoderFiles {
  std::string with_past;  // the decoder reading past_key_values.* (required)
  std::string first;      // optional: optimum's decoder_model.onnx (no past) for the first step
};

struct RunnerOptions {
  SessionOptions session;
  int optimization_level = 2;  // as octet::optimize's level
};

// Loads `path`, optimizes it at `options.optimization_level` and makes a Session that
// solely owns the graph (so packed weights live once).
std::shared_ptr<const Session> load_session(const std::string& path, const RunnerOptions& options);

// The in-place runner (decoder-only: in_place_kv_runner.h; with a first-step file:
// seq2seq_in_place_runner.h) where its rewrite applies, else the portable one; then `why`
// (when not null) says what stopped the in-place one. Left as it is for an in-place runner.
// optimum's merged decoder (one If on use_cache_branch; seq2seq or decoder-only) runs in
// place as its two branches: then_branch the with-past decoder, else_branch the first step.
// A decoder-only with-past file that takes one new token per step (one_token_steps.h) is
// given longer steps one token at a time.
// The environment variable OCTET_KV_CACHE picks for A/B runs and tests: portable (always
// the portable runner), in-place (the in-place one or an error saying why not), auto (the
// default, as above).
std::unique_ptr<DecoderRunner> make_decoder_runner(const DecoderFiles& files, const RunnerOptions& options,
                                                   std::string* why = nullptr);

}  // namespace octet::generate
