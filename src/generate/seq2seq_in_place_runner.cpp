#include "generate/seq2seq_in_place_runner.h"

#include <algorithm>
#include <cstring>

#include "core/sizes.h"
#include "generate/in_place_cache.h"
#include "octet/error.h"
#include "passes/pipeline.h"

namespace octet::generate {
namespace {

const std::string kPast = "past_key_values.";
const std::string kPresent = "present.";
constexpr const char* kWho = "seq2seq in-place runner";

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// A model input the runner fills each step, by what it is.
struct Feed {
  enum Kind { Ids, Mask, Positions, Cross, Extra } kind;
  std::string name;
  size_t cross = 0;  // Cross: index into the held keys/values
};

bool has_output(const Session& s, const std::string& name) {
  for (const Value* v : s.graph().outputs())
    if (v->name() == name) return true;
  return false;
}

// How each of `session`'s inputs is filled; the cache inputs (`handled`) are left out.
// Cross-attention inputs (past_key_values.X not in `handled`) append X to `cross`.
std::vector<Feed> plan_feeds(const Session& session, const std::vector<std::string>& handled,
                             std::vector<std::string>* cross, std::string& why) {
  std::vector<Feed> feeds;
  for (const Value* v : session.required_inputs()) {
    const std::string& n = v->name();
    if (std::find(handled.begin(), handled.end(), n) != handled.end()) continue;
    if ((n == "input_ids" || n == "attention_mask") && v->type.dtype != DType::Int64) {
      why = "input '" + n + "' is " + dtype_name(v->type.dtype) + ", not int64";
      return {};
    }
    if (n == "input_ids") feeds.push_back({Feed::Ids, n});
    else if (n == "attention_mask") feeds.push_back({Feed::Mask, n});
    else if (n == "position_ids") feeds.push_back({Feed::Positions, n});
    else if (starts_with(n, kPast) && cross) {
      feeds.push_back({Feed::Cross, n, cross->size()});
      cross->push_back(n.substr(kPast.size()));
    } else if (starts_with(n, kPast) || n == "use_cache_branch") {
      why = "the first-step model reads '" + n + "'";
      return {};
    } else feeds.push_back({Feed::Extra, n});
  }
  return feeds;
}

class Seq2SeqInPlaceRunner : public DecoderRunner {
 public:
  Seq2SeqInPlaceRunner(std::unique_ptr<Session> with_past, std::shared_ptr<const Session> first,
                       std::vector<CacheSlot> slots, std::vector<Feed> later, std::vector<Feed> first_feeds,
                       std::vector<std::string> cross)
      : caches_(std::move(slots)), with_past_(std::move(with_past)), first_(std::move(first)),
        later_(std::move(later)), first_feeds_(std::move(first_feeds)), cross_names_(std::move(cross)) {}

  Tensor step(const DecoderStep& step) override {
    const int64_t b = step.batch;
    if (b < 1 || step.tokens.empty() || static_cast<int64_t>(step.tokens.size()) % b != 0)
      fail(kWho, ": ", step.tokens.size(), " tokens do not split into ", b, " rows");
    const int64_t s = static_cast<int64_t>(step.tokens.size()) / b;
    if (cached_ > 0 && b != caches_.batch())
      fail(kWho, ": a step of batch ", b, " on a cache of batch ", caches_.batch(), " (reorder_rows changes it)");
    const int64_t total = cached_ + s;
    caches_.ensure_capacity(b, total, cached_);
    const bool first = cached_ == 0;
    NamedTensors in;
    in.reserve(3 * caches_.slots().size() + cross_.size() + step.extra_inputs.size() + 3);
    if (!first) caches_.feed(in, cached_, total);
    for (const Feed& f : first ? first_feeds_ : later_) {
      switch (f.kind) {
        case Feed::Ids: {
          Tensor ids(DType::Int64, {b, s});
          std::copy(step.tokens.begin(), step.tokens.end(), ids.mutable_data<int64_t>());
          in.emplace_back(f.name, std::move(ids));
          break;
        }
        case Feed::Mask: {
          Tensor mask(DType::Int64, {b, total});
          std::fill_n(mask.mutable_data<int64_t>(), b * total, int64_t{1});
          in.emplace_back(f.name, std::move(mask));
          break;
        }
        case Feed::Positions: {  // all-ones mask: each row's positions continue from the cache
          Tensor pos(DType::Int64, {b, s});
          for (int64_t r = 0; r < b; ++r)
            for (int64_t i = 0; i < s; ++i) pos.mutable_data<int64_t>()[r * s + i] = cached_ + i;
          in.emplace_back(f.name, std::move(pos));
          break;
        }
        case Feed::Cross:
          in.emplace_back(f.name, cross_[f.cross]);  // shares the held buffer
          break;
        case Feed::Extra: {
          auto it = std::find_if(step.extra_inputs.begin(), step.extra_inputs.end(),
                                 [&](const auto& e) { return e.first == f.name; });
          if (it == step.extra_inputs.end())
            fail("the decoder's input '", f.name, "' is none that generation fills (input_ids, attention_mask, "
                 "the cache) and the caller did not give it");
          in.push_back(*it);
        }
      }
    }
    NamedTensors out = (first ? *first_ : *with_past_).run(in);
    if (first) keep_first_step(out);
    cached_ = total;
    return last_logits(out, b, s, kWho);
  }

  int64_t cached_tokens() const override { return cached_; }
  void reserve(int64_t max_tokens) override { caches_.reserve(max_tokens); }
  void reset() override {
    cached_ = 0;
    cross_.clear();
  }

  void reorder_rows(const std::vector<int64_t>& rows) override {
    if (cached_ == 0) fail(kWho, ": reorder_rows on an empty cache");
    const int64_t old = caches_.batch();
    caches_.reorder_rows(rows);  // checks the rows
    if (uniform_cross_ && static_cast<int64_t>(rows.size()) == old) return;
    for (Tensor& t : cross_) {
      std::vector<int64_t> shape = t.shape();
      shape[0] = static_cast<int64_t>(rows.size());
      const size_t row = t.bytes() / static_cast<size_t>(old);
      Tensor next(t.dtype(), shape);
      for (size_t r = 0; r < rows.size(); ++r)
        std::memcpy(next.mutable_raw() + r * row, t.raw() + (uniform_cross_ ? 0 : rows[r]) * row, row);
      t = std::move(next);
    }
  }

  std::vector<const void*> memory() const {
    std::vector<const void*> out;
    for (const CacheSlot& c : caches_.slots()) out.push_back(c.buffer ? c.buffer->data() : nullptr);
    for (const Tensor& t : cross_) out.push_back(t.raw());
    return out;
  }

 private:
  // The first step's presents: the self-attention rows go into the caches, the
  // cross-attention keys/values are held for the sequence.
  void keep_first_step(NamedTensors& out) {
    auto find = [&](const std::string& name) -> Tensor& {
      for (auto& [n, t] : out)
        if (n == name) return t;
      fail(kWho, ": the first-step model returned no '", name, "'");
    };
    for (size_t i = 0; i < caches_.slots().size(); ++i) caches_.write_rows(i, find(caches_.slots()[i].present), 0);
    cross_.clear();
    for (const std::string& x : cross_names_) cross_.push_back(find(kPresent + x));
    // One source repeated over the beams gives the same keys/values in every row.
    uniform_cross_ = true;
    for (const Tensor& t : cross_) {
      if (t.dtype() != DType::Float32 || t.rank() != 4 || t.shape()[0] != caches_.batch())
        fail(kWho, ": cross-attention keys/values ", t.describe(), " are not float32 [", caches_.batch(), ", ...]");
      const size_t row = t.bytes() / static_cast<size_t>(caches_.batch());
      for (int64_t r = 1; r < caches_.batch() && uniform_cross_; ++r)
        uniform_cross_ = std::memcmp(t.raw(), t.raw() + r * row, row) == 0;
    }
  }

  SelfCaches caches_;
  std::unique_ptr<Session> with_past_;
  std::shared_ptr<const Session> first_;
  std::vector<Feed> later_, first_feeds_;
  std::vector<std::string> cross_names_;  // X of each held past_key_values.X / present.X
  std::vector<Tensor> cross_;
  bool uniform_cross_ = false;
  int64_t cached_ = 0;
};

}  // namespace

std::unique_ptr<DecoderRunner> make_seq2seq_in_place_runner(std::shared_ptr<Graph> with_past,
                                                            std::shared_ptr<const Session> first,
                                                            const SessionOptions& options, std::string* why) {
  std::string reason;
  auto refuse = [&](const std::string& r) -> std::unique_ptr<DecoderRunner> {
    if (why) *why = r;
    return nullptr;
  };
  if (!first)
    return refuse("no first-step model (decoder_model.onnx): the with-past decoder reads the cross-attention "
                  "keys/values as inputs and does not compute them");
  bool fused = false;
  for (const Node* n : with_past->nodes()) fused |= n->domain() == "octet" && n->op_type() == "GroupedAttention";
  if (!fused) optimize(*with_past);
  RewriteOptions ro;
  ro.read_only_inputs = true;
  std::vector<CacheSlot> slots = rewrite_in_place(*with_past, ro, reason);
  if (slots.empty()) return refuse(reason);
  std::vector<std::string> handled = {kPastLength};
  for (const CacheSlot& c : slots) handled.insert(handled.end(), {c.cache, c.past_view, c.present_view});
  auto session = std::make_unique<Session>(std::move(with_past), options);
  std::vector<std::string> cross;
  std::vector<Feed> later = plan_feeds(*session, handled, &cross, reason);
  if (later.empty()) return refuse(reason.empty() ? "the with-past decoder takes no inputs" : reason);
  std::vector<Feed> first_feeds = plan_feeds(*first, {}, nullptr, reason);
  if (first_feeds.empty()) return refuse(reason.empty() ? "the first-step decoder takes no inputs" : reason);
  for (const CacheSlot& c : slots)
    if (!has_output(*first, c.present)) return refuse("the first-step decoder returns no '" + c.present + "'");
  for (const std::string& x : cross)
    if (!has_output(*first, kPresent + x))
      return refuse("the with-past decoder reads '" + kPast + x + "', which the first-step decoder does not return");
  return std::make_unique<Seq2SeqInPlaceRunner>(std::move(session), std::move(first), std::move(slots),
                                                std::move(later), std::move(first_feeds), std::move(cross));
}

std::vector<const void*> seq2seq_cache_memory(const DecoderRunner& runner) {
  auto* r = dynamic_cast<const Seq2SeqInPlaceRunner*>(&runner);
  return r ? r->memory() : std::vector<const void*>{};
}

}  // namespace octet::generate
