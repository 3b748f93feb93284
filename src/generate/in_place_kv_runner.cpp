#include "generate/in_place_kv_runner.h"

#include <algorithm>

#include "generate/in_place_cache.h"
#include "passes/pipeline.h"

namespace octet::generate {
namespace {

class InPlaceKvRunner : public DecoderRunner {
 public:
  InPlaceKvRunner(std::shared_ptr<Graph> graph, std::vector<CacheSlot> slots, const SessionOptions& options)
      : caches_(std::move(slots)) {
    has_positions_ = graph->find_value("position_ids") && graph->find_value("position_ids")->is_graph_input();
    session_ = std::make_unique<Session>(std::move(graph), options);
    // Positions looked up once: a step then does no name lookups (Session::run_positional).
    ids_at_ = session_->input_position("input_ids");
    mask_at_ = session_->input_position("attention_mask");
    positions_at_ = has_positions_ ? session_->input_position("position_ids") : -1;
    if (ids_at_ < 0 || mask_at_ < 0) fail("in-place runner: the model takes no input_ids or attention_mask");
    cache_at_ = caches_.input_positions(*session_);
    // The logits as last_logits finds them: the output named so, else the first.
    const int logits = session_->output_position("logits");
    logits_at_ = {logits >= 0 ? logits : 0};
  }

  Tensor step(const DecoderStep& step) override {
    const int64_t b = step.batch;
    if (b < 1 || step.tokens.empty() || static_cast<int64_t>(step.tokens.size()) % b != 0)
      fail("in-place runner: ", step.tokens.size(), " tokens do not split into ", b, " rows");
    const int64_t s = static_cast<int64_t>(step.tokens.size()) / b;
    if (cached_ > 0 && b != caches_.batch())
      fail("in-place runner: a step of batch ", b, " on a cache of batch ", caches_.batch(),
           " (reorder_rows changes it)");
    caches_.ensure_capacity(b, cached_ + s, cached_);
    const int64_t total = cached_ + s;

    Session::PositionalTensors in;
    in.reserve(4 + 3 * caches_.slots().size() + step.extra_inputs.size());
    Tensor ids(DType::Int64, {b, s});
    std::copy(step.tokens.begin(), step.tokens.end(), ids.mutable_data<int64_t>());
    in.emplace_back(ids_at_, std::move(ids));
    Tensor mask(DType::Int64, {b, total});
    std::fill_n(mask.mutable_data<int64_t>(), b * total, int64_t{1});
    in.emplace_back(mask_at_, std::move(mask));
    if (has_positions_) {
      Tensor pos(DType::Int64, {b, s});
      for (int64_t r = 0; r < b; ++r)
        for (int64_t i = 0; i < s; ++i) pos.mutable_data<int64_t>()[r * s + i] = cached_ + i;
      in.emplace_back(positions_at_, std::move(pos));
    }
    caches_.feed(in, cache_at_, cached_, total);
    for (const auto& [name, t] : step.extra_inputs) {
      const int at = session_->input_position(name);
      if (at < 0) fail("in-place runner: the model has no input '", name, "'");
      in.emplace_back(at, t);
    }
    std::vector<Tensor> out = session_->run_positional(in, logits_at_, profile_);
    cached_ = total;
    return last_logits(out.front(), b, s, "in-place runner");
  }

  int64_t cached_tokens() const override { return cached_; }
  void set_profile(RunProfile* profile) { profile_ = profile; }
  void reserve(int64_t max_tokens) override { caches_.reserve(max_tokens); }
  void reset() override { cached_ = 0; }
  void reorder_rows(const std::vector<int64_t>& rows) override { caches_.reorder_rows(rows); }

 private:
  SelfCaches caches_;
  std::unique_ptr<Session> session_;
  RunProfile* profile_ = nullptr;
  bool has_positions_ = false;
  int ids_at_ = -1, mask_at_ = -1, positions_at_ = -1;
  std::vector<int> cache_at_, logits_at_;
  int64_t cached_ = 0;
};

}  // namespace

std::unique_ptr<DecoderRunner> make_in_place_runner(std::shared_ptr<Graph> graph, const SessionOptions& options,
                                                    std::string* why) {
  std::string reason;
  bool fused = false;
  for (const Node* n : graph->nodes()) fused |= n->domain() == "octet" && n->op_type() == "GroupedAttention";
  if (!fused) optimize(*graph);
  std::vector<CacheSlot> slots = rewrite_in_place(*graph, {}, reason);
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
