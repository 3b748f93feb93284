#include "generate/beam_search.h"

#include <algorithm>
#include <cmath>

#include "octet/error.h"

namespace octet::generate {

BeamHypotheses::BeamHypotheses(int64_t num_beams, float length_penalty, EarlyStopping early_stopping,
                               int64_t max_length)
    : num_beams_(num_beams), length_penalty_(length_penalty), early_stopping_(early_stopping),
      max_length_(max_length) {}

void BeamHypotheses::add(std::vector<int64_t> tokens, double sum_logprobs, int64_t generated_len) {
  const double score = sum_logprobs / std::pow(static_cast<double>(generated_len), length_penalty_);
  if (static_cast<int64_t>(beams_.size()) < num_beams_ || score > worst_score_) {
    beams_.push_back({score, std::move(tokens)});
    if (static_cast<int64_t>(beams_.size()) > num_beams_) {
      // Python's sorted() of (score, index): the lowest score, lowest index first.
      std::vector<size_t> order(beams_.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return beams_[a].score < beams_[b].score; });
      worst_score_ = beams_[order[1]].score;
      beams_.erase(beams_.begin() + static_cast<std::ptrdiff_t>(order[0]));
    } else {
      worst_score_ = std::min(score, worst_score_);
    }
  }
}

bool BeamHypotheses::is_done(double best_sum_logprobs, int64_t cur_len, int64_t prompt_len) const {
  if (static_cast<int64_t>(beams_.size()) < num_beams_) return false;
  if (early_stopping_ == EarlyStopping::Always) return true;
  int64_t length = cur_len - prompt_len;
  if (early_stopping_ == EarlyStopping::Never && length_penalty_ > 0) {
    if (max_length_ <= prompt_len) fail("max_length is not larger than the decoder prompt length");
    length = max_length_ - prompt_len;
  }
  const double highest_attainable = best_sum_logprobs / std::pow(static_cast<double>(length), length_penalty_);
  return worst_score_ >= highest_attainable;
}

const std::vector<int64_t>& BeamHypotheses::best() const {
  if (beams_.empty()) fail("beam search finished no hypothesis");
  size_t best = 0;
  for (size_t i = 1; i < beams_.size(); ++i)
    if (beams_[i].score >= beams_[best].score) best = i;
  return beams_[best].tokens;
}

}  // namespace octet::generate
