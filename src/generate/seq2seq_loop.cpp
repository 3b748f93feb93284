#include "generate/seq2seq_loop.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <numeric>

#include "generate/beam_search.h"
#include "octet/error.h"

namespace octet::generate {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

Tensor ones_like_ids(int64_t rows, int64_t n) {
  return Tensor::from_vector<int64_t>({rows, n}, std::vector<int64_t>(static_cast<size_t>(rows * n), 1));
}

// `t` [1, ...] repeated to [rows, ...].
Tensor repeat_rows(const Tensor& t, int64_t rows) {
  if (rows == 1) return t;
  std::vector<int64_t> shape = t.shape();
  if (shape.empty() || shape[0] != 1) fail("expected a tensor of batch 1, got ", t.describe());
  shape[0] = rows;
  Tensor out(t.dtype(), shape);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(out.mutable_raw() + r * t.bytes(), t.raw(), t.bytes());
  return out;
}

// The encoder's inputs for source ids: input_ids and, when it takes one, attention_mask.
NamedTensors ids_inputs(const Session& encoder, const std::vector<int64_t>& source) {
  if (source.empty()) fail("the source is empty: the encoder needs at least one token");
  const int64_t n = static_cast<int64_t>(source.size());
  NamedTensors in;
  for (const Value* v : encoder.required_inputs()) {
    if (v->name() == "input_ids") in.emplace_back(v->name(), Tensor::from_vector<int64_t>({1, n}, source));
    else if (v->name() == "attention_mask") in.emplace_back(v->name(), ones_like_ids(1, n));
    else
      fail("the encoder's input '", v->name(), "' is none that generation from token ids fills (input_ids, "
           "attention_mask): give the encoder's inputs themselves");
  }
  return in;
}

// The encoder once; what every decoder step reads from it, for `rows` decoder rows.
NamedTensors run_encoder(const Session& encoder, const NamedTensors& in, int64_t rows) {
  NamedTensors out = encoder.run(in);
  if (out.empty()) fail("the encoder has no output");
  const Tensor& hidden = out.front().second;
  if (hidden.rank() != 3 || hidden.shape()[0] != 1)
    fail("the encoder's output '", out.front().first, "' is ", hidden.describe(), "; expected [1, length, hidden]");
  return {{"encoder_hidden_states", repeat_rows(hidden, rows)},
          {"encoder_attention_mask", ones_like_ids(rows, hidden.shape()[1])}};
}

GenerationOutput beam_search(DecoderRunner& decoder, NamedTensors encoder_states, const Seq2SeqConfig& config) {
  const Clock::time_point start = Clock::now();
  const int64_t beams = config.num_beams;
  const std::vector<int64_t>& eos = config.generation.stop_token_ids;
  const int64_t prompt_len = static_cast<int64_t>(config.decoder_start_ids.size());
  const int64_t max_length = prompt_len + config.generation.max_new_tokens;
  BeamHypotheses finished(beams, config.length_penalty, config.early_stopping, max_length);
  std::vector<std::vector<int64_t>> sequences(static_cast<size_t>(beams), config.decoder_start_ids);
  // Only the first beam is live at the start, as transformers sets beam_scores[1:] = -1e9.
  std::vector<double> beam_scores(static_cast<size_t>(beams), -1e9);
  beam_scores[0] = 0;
  decoder.reset();
  decoder.reserve(max_length);
  DecoderStep step;
  step.batch = beams;
  step.extra_inputs = std::move(encoder_states);
  for (const auto& s : sequences) step.tokens.insert(step.tokens.end(), s.begin(), s.end());
  GenerationOutput out;
  out.timings.prompt_tokens = prompt_len;
  int64_t cur_len = prompt_len;
  bool done = false;
  const size_t keep = static_cast<size_t>(std::max<int64_t>(2, 1 + static_cast<int64_t>(eos.size())) * beams);
  while (!done) {
    const Tensor logits = decoder.step(step);
    const int64_t vocab = logits.shape()[1];
    // Scores of every (beam, token), flattened as transformers' view(batch, beams * vocab).
    std::vector<float> scores(static_cast<size_t>(beams * vocab));
    for (int64_t b = 0; b < beams; ++b) {
      std::vector<float> row(logits.data<float>() + b * vocab, logits.data<float>() + (b + 1) * vocab);
      row = log_softmax(row);
      apply_repetition_penalty(row, sequences[static_cast<size_t>(b)], config.generation.sampling.repetition_penalty);
      for (int64_t v = 0; v < vocab; ++v)
        scores[static_cast<size_t>(b * vocab + v)] = static_cast<float>(row[static_cast<size_t>(v)] + beam_scores[static_cast<size_t>(b)]);
    }
    std::vector<int64_t> order(scores.size());
    std::iota(order.begin(), order.end(), int64_t{0});
    const size_t top = std::min(keep, order.size());
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(), [&](int64_t a, int64_t b) {
      return scores[static_cast<size_t>(a)] > scores[static_cast<size_t>(b)] ||
             (scores[static_cast<size_t>(a)] == scores[static_cast<size_t>(b)] && a < b);
    });
    // BeamSearchScorer.process for the one sequence.
    const int64_t next_len = cur_len + 1;
    std::vector<int64_t> next_tokens, next_rows;
    std::vector<double> next_scores;
    for (size_t rank = 0; rank < top && static_cast<int64_t>(next_tokens.size()) < beams; ++rank) {
      const int64_t flat = order[rank], row = flat / vocab, token = flat % vocab;
      const double score = scores[static_cast<size_t>(flat)];
      if (std::find(eos.begin(), eos.end(), token) != eos.end()) {
        if (static_cast<int64_t>(rank) >= beams) continue;
        finished.add(sequences[static_cast<size_t>(row)], score, next_len - prompt_len);
      } else {
        next_tokens.push_back(token);
        next_rows.push_back(row);
        next_scores.push_back(score);
      }
    }
    if (static_cast<int64_t>(next_tokens.size()) < beams) fail("beam search: too many of the best tokens are eos");
    done = finished.is_done(scores[static_cast<size_t>(order[0])], next_len, prompt_len);
    std::vector<std::vector<int64_t>> next_sequences;
    for (int64_t b = 0; b < beams; ++b) {
      next_sequences.push_back(sequences[static_cast<size_t>(next_rows[static_cast<size_t>(b)])]);
      next_sequences.back().push_back(next_tokens[static_cast<size_t>(b)]);
    }
    sequences = std::move(next_sequences);
    beam_scores = next_scores;
    cur_len = next_len;
    if (out.timings.time_to_first_token_ms == 0) out.timings.time_to_first_token_ms = ms_since(start);
    if (done || cur_len >= max_length) break;
    decoder.reorder_rows(next_rows);
    step.tokens = next_tokens;
  }
  // finalize: the running beams join the finished ones unless the search was done.
  if (!done)
    for (int64_t b = 0; b < beams; ++b)
      finished.add(sequences[static_cast<size_t>(b)], beam_scores[static_cast<size_t>(b)],
                   static_cast<int64_t>(sequences[static_cast<size_t>(b)].size()) - prompt_len);
  std::vector<int64_t> best = finished.best();
  if (static_cast<int64_t>(best.size()) < max_length && !eos.empty()) best.push_back(eos.front());
  out.tokens.assign(best.begin() + prompt_len, best.end());
  out.stop_reason = !out.tokens.empty() && std::find(eos.begin(), eos.end(), out.tokens.back()) != eos.end()
                        ? StopReason::StopToken
                        : StopReason::MaxNewTokens;
  GenerationTimings& t = out.timings;
  t.new_tokens = static_cast<int64_t>(out.tokens.size());
  t.total_ms = ms_since(start);
  t.decode_ms = t.total_ms - t.time_to_first_token_ms;
  if (cur_len - prompt_len > 1 && t.decode_ms > 0)
    t.decode_tokens_per_second = static_cast<double>(cur_len - prompt_len - 1) / (t.decode_ms / 1000.0);
  return out;
}

}  // namespace

GenerationOutput generate_seq2seq(const Session& encoder, DecoderRunner& decoder, const std::vector<int64_t>& source,
                                  const Seq2SeqConfig& config, const TokenCallback& on_token) {
  return generate_seq2seq(encoder, decoder, ids_inputs(encoder, source), config, on_token);
}

GenerationOutput generate_seq2seq(const Session& encoder, DecoderRunner& decoder, const NamedTensors& encoder_inputs,
                                  const Seq2SeqConfig& config, const TokenCallback& on_token) {
  check_generation_config(config.generation);
  if (config.decoder_start_ids.empty()) fail("seq2seq generation needs the decoder start token id(s)");
  if (config.num_beams < 1) fail("num_beams must be >= 1, got ", config.num_beams);
  if (config.num_beams > 1 && config.generation.sampling.do_sample)
    fail("beam search with sampling is not supported: use num_beams=1 to sample");
  const Clock::time_point start = Clock::now();
  NamedTensors states = run_encoder(encoder, encoder_inputs, config.num_beams);
  const double encoder_ms = ms_since(start);
  GenerationOutput out;
  if (config.num_beams > 1) {
    out = beam_search(decoder, std::move(states), config);
  } else {
    DecoderStep step;
    step.tokens = config.decoder_start_ids;
    step.extra_inputs = std::move(states);
    out = generate_from(decoder, std::move(step), config.decoder_start_ids, config.generation, on_token);
  }
  // The encoder's time is part of the wait for the first token.
  out.timings.time_to_first_token_ms += encoder_ms;
  out.timings.total_ms += encoder_ms;
  return out;
}

}  // namespace octet::generate
