// transformers' BeamHypotheses (the finished beams kept for one sequence), with its
// scoring and its done test, so beam search ends where and as transformers' does.
#pragma once

#include <cstdint>
#include <vector>

#include "generate/seq2seq_loop.h"

namespace octet::generate {

class BeamHypotheses {
 public:
  BeamHypotheses(int64_t num_beams, float length_penalty, EarlyStopping early_stopping, int64_t max_length);

  // A finished beam: its tokens, summed log-probabilities and generated length.
  void add(std::vector<int64_t> tokens, double sum_logprobs, int64_t generated_len);
  // True when no running beam (best summed log-prob `best_sum_logprobs`) can beat them.
  bool is_done(double best_sum_logprobs, int64_t cur_len, int64_t prompt_len) const;

  size_t size() const { return beams_.size(); }
  // The best hypothesis (the last of equal scores added, as transformers' sorted().pop()).
  const std::vector<int64_t>& best() const;

 private:
  struct Hypothesis {
    double score;
    std::vector<int64_t> tokens;
  };
  int64_t num_beams_;
  float length_penalty_;
  EarlyStopping early_stopping_;
  int64_t max_length_;
  std::vector<Hypothesis> beams_;
  double worst_score_ = 1e9;
};

}  // namespace octet::generate
