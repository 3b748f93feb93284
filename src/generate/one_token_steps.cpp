#include "generate/one_token_steps.h"

#include <algorithm>
#include <string>

#include "octet/error.h"

namespace octet::generate {
namespace {

class OneTokenSteps : public DecoderRunner {
 public:
  OneTokenSteps(std::unique_ptr<DecoderRunner> inner, bool whole_first_step)
      : inner_(std::move(inner)), whole_first_step_(whole_first_step) {}

  Tensor step(const DecoderStep& step) override {
    const int64_t b = step.batch;
    if (b < 1 || step.tokens.empty() || static_cast<int64_t>(step.tokens.size()) % b != 0)
      fail("decoder runner: ", step.tokens.size(), " tokens do not split into ", b, " rows");
    const int64_t s = static_cast<int64_t>(step.tokens.size()) / b;
    if (s == 1 || (whole_first_step_ && inner_->cached_tokens() == 0)) return inner_->step(step);
    DecoderStep one;
    one.batch = b;
    one.extra_inputs = step.extra_inputs;  // the same on every step by contract
    one.tokens.resize(static_cast<size_t>(b));
    Tensor logits;
    for (int64_t i = 0; i < s; ++i) {
      for (int64_t r = 0; r < b; ++r) one.tokens[static_cast<size_t>(r)] = step.tokens[static_cast<size_t>(r * s + i)];
      logits = inner_->step(one);
    }
    return logits;
  }

  int64_t cached_tokens() const override { return inner_->cached_tokens(); }
  void reserve(int64_t max_tokens) override { inner_->reserve(max_tokens); }
  void reorder_rows(const std::vector<int64_t>& rows) override { inner_->reorder_rows(rows); }
  void reset() override { inner_->reset(); }

 private:
  std::unique_ptr<DecoderRunner> inner_;
  bool whole_first_step_;
};

}  // namespace

bool one_new_token_dims(const DimVector& m, const DimVector& p) {
  if (m.size() != 2 || p.size() != 4 || !p[2].is_symbol()) return false;
  if (m[1] == p[2] + Dim(1)) return true;
  // The importer keeps a dim_param as one symbol, so "past_sequence_length + 1" is a name.
  std::string name = m[1].symbol_name();
  name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
  return name == p[2].symbol_name() + "+1";
}

bool takes_one_new_token(const Graph& with_past) {
  const Value* mask = with_past.find_value("attention_mask");
  const Value* past = with_past.find_value("past_key_values.0.key");
  if (!mask || !past || !mask->is_graph_input() || !past->is_graph_input()) return false;
  return mask->type.dims && past->type.dims && one_new_token_dims(*mask->type.dims, *past->type.dims);
}

std::unique_ptr<DecoderRunner> one_token_steps(std::unique_ptr<DecoderRunner> inner, bool whole_first_step) {
  return std::make_unique<OneTokenSteps>(std::move(inner), whole_first_step);
}

}  // namespace octet::generate
