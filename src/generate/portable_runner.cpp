#include "generate/portable_runner.h"

#include <algorithm>
#include <cstring>

#include "core/sizes.h"
#include "octet/error.h"

namespace octet::generate {

namespace {

const std::string kPast = "past_key_values.";
const std::string kPresent = "present.";

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// An integer tensor of `dtype` (int64 or int32, what exporters use for ids and masks).
Tensor integers(DType dtype, std::vector<int64_t> shape, const std::vector<int64_t>& values, const std::string& what) {
  if (dtype == DType::Int64 || dtype == DType::Undefined) return Tensor::from_vector<int64_t>(std::move(shape), values);
  if (dtype == DType::Int32) {
    std::vector<int32_t> narrow(values.begin(), values.end());
    return Tensor::from_vector<int32_t>(std::move(shape), narrow);
  }
  fail("input '", what, "' is ", dtype_name(dtype), "; generation fills it only as int64 or int32");
}

// Rows of `t` (its dim 0) in the order `rows` names.
Tensor gather_rows(const Tensor& t, const std::vector<int64_t>& rows, const std::string& what) {
  if (t.rank() < 1) fail("cache tensor '", what, "' is a scalar; cannot reorder its rows");
  const int64_t old_rows = t.shape()[0];
  const size_t row_bytes = old_rows ? t.bytes() / static_cast<size_t>(old_rows) : 0;
  std::vector<int64_t> shape = t.shape();
  shape[0] = static_cast<int64_t>(rows.size());
  Tensor out(t.dtype(), shape);
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r] < 0 || rows[r] >= old_rows) fail("reorder_rows: row ", rows[r], " of a cache of ", old_rows, " rows");
    std::memcpy(out.mutable_raw() + r * row_bytes, t.raw() + static_cast<size_t>(rows[r]) * row_bytes, row_bytes);
  }
  return out;
}

bool takes_input(const Session& s, const std::string& name) {
  for (const Value* v : s.required_inputs())
    if (v->name() == name) return true;
  return false;
}

}  // namespace

bool takes_past(const Graph& graph) {
  for (const Value* v : graph.inputs())
    if (starts_with(v->name(), kPast)) return true;
  return false;
}

PortableRunner::PortableRunner(std::shared_ptr<const Session> with_past, std::shared_ptr<const Session> first)
    : with_past_(std::move(with_past)), first_(std::move(first)) {
  if (!with_past_) fail("a decoder runner needs the model with past_key_values inputs");
  if (!takes_past(with_past_->graph()))
    fail("the decoder has no past_key_values.* inputs: export it with a KV cache in optimum's naming "
         "(past_key_values.N.key/value in, present.N.key/value out)");
  for (const Session* s : {with_past_.get(), first_.get()}) {
    if (!s) continue;
    const auto& outs = s->graph().outputs();
    if (std::none_of(outs.begin(), outs.end(), [](const Value* v) { return v->name() == "logits"; }))
      fail("the decoder has no 'logits' output");
    if (!takes_input(*s, "input_ids")) fail("the decoder has no 'input_ids' input");
  }
}

Tensor PortableRunner::empty_past(const Value& input, int64_t batch) const {
  // [batch, heads, past, head_dim]: heads and head_dim are fixed in every export we know.
  if (!input.type.dims || input.type.dims->size() != 4)
    fail("input '", input.name(), "' should be [batch, heads, past_sequence, head_dim]");
  std::vector<int64_t> shape;
  for (size_t i = 0; i < 4; ++i) {
    const Dim& d = (*input.type.dims)[i];
    if (i == 0) shape.push_back(batch);
    else if (i == 2) shape.push_back(0);
    else if (d.is_constant()) shape.push_back(d.value());
    else
      fail("input '", input.name(), "' has a symbolic dim ", i, " (", d.to_string(),
           "); an empty cache needs the heads and head size known");
  }
  return Tensor(input.type.dtype, shape);
}

NamedTensors PortableRunner::inputs_for(const Session& session, const DecoderStep& step) const {
  const int64_t batch = step.batch;
  const int64_t fresh = static_cast<int64_t>(step.tokens.size()) / batch;
  const int64_t total = cached_ + fresh;
  NamedTensors in;
  for (const Value* v : session.required_inputs()) {
    const std::string& name = v->name();
    if (name == "input_ids") {
      in.emplace_back(name, integers(v->type.dtype, {batch, fresh}, step.tokens, name));
    } else if (name == "attention_mask") {
      in.emplace_back(name, integers(v->type.dtype, {batch, total},
                                     std::vector<int64_t>(static_cast<size_t>(checked_numel({batch, total}, name)), 1), name));
    } else if (name == "position_ids") {
      std::vector<int64_t> pos;
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < fresh; ++i) pos.push_back(cached_ + i);
      in.emplace_back(name, integers(v->type.dtype, {batch, fresh}, pos, name));
    } else if (starts_with(name, kPast)) {
      const std::string key = name.substr(kPast.size());
      auto it = std::find_if(cache_.begin(), cache_.end(), [&](const auto& c) { return c.first == key; });
      if (it != cache_.end()) in.emplace_back(name, it->second);
      else if (cached_ == 0) in.emplace_back(name, empty_past(*v, batch));
      else fail("input '", name, "': no earlier step returned 'present.", key, "'");
    } else if (name == "use_cache_branch") {
      // optimum's merged decoder: an If takes the with-past branch once there is a cache.
      if (v->type.dtype != DType::Bool) fail("input 'use_cache_branch' is ", dtype_name(v->type.dtype), ", not bool");
      Tensor flag(DType::Bool, {1});
      flag.mutable_raw()[0] = cached_ > 0;
      in.emplace_back(name, std::move(flag));
    } else {
      auto it = std::find_if(step.extra_inputs.begin(), step.extra_inputs.end(),
                             [&](const auto& e) { return e.first == name; });
      if (it == step.extra_inputs.end())
        fail("the decoder's input '", name, "' is none that generation fills (input_ids, attention_mask, "
             "position_ids, past_key_values.*) and the caller did not give it");
      in.push_back(*it);
    }
  }
  return in;
}

Tensor PortableRunner::step(const DecoderStep& step) {
  if (step.batch < 1) fail("a decoder step needs batch >= 1, got ", step.batch);
  if (step.tokens.empty() || step.tokens.size() % static_cast<size_t>(step.batch) != 0)
    fail("a decoder step needs the same number (>= 1) of new tokens in each of its ", step.batch, " rows, got ",
         step.tokens.size(), " tokens");
  if (cached_ > 0 && step.batch != batch_)
    fail("a decoder step of batch ", step.batch, " after a cache of ", batch_, " rows (reorder_rows changes it)");
  const Session& session = (cached_ == 0 && first_) ? *first_ : *with_past_;
  const NamedTensors feeds = inputs_for(session, step);
  if (observer_) observer_(&session == first_.get(), feeds);
  NamedTensors out = session.run(feeds);
  Tensor logits;
  for (auto& [name, tensor] : out) {
    if (name == "logits") {
      logits = tensor;
    } else if (starts_with(name, kPresent)) {
      const std::string key = name.substr(kPresent.size());
      auto it = std::find_if(cache_.begin(), cache_.end(), [&](const auto& c) { return c.first == key; });
      // A merged seq2seq decoder's with-past branch returns empty cross-attention presents:
      // the keys/values of the encoder output the first step computed stay.
      if (it != cache_.end()) {
        if (tensor.numel() > 0) it->second = std::move(tensor);
      } else {
        cache_.emplace_back(key, std::move(tensor));
      }
    }
  }
  cached_ += static_cast<int64_t>(step.tokens.size()) / step.batch;
  batch_ = step.batch;
  // logits [batch, new, vocab] (some exports: [batch, vocab] for the last token only).
  if (logits.rank() == 2) return logits.dtype() == DType::Float32 ? logits : Tensor::from_vector<float>(logits.shape(), logits.to_float_vector());
  if (logits.rank() != 3 || logits.shape()[0] != step.batch)
    fail("the decoder's logits are ", logits.describe(), "; expected [", step.batch, ", tokens, vocab]");
  const int64_t rows = logits.shape()[1], vocab = logits.shape()[2];
  const std::vector<float> all = logits.to_float_vector();
  std::vector<float> last(static_cast<size_t>(checked_numel({step.batch, vocab}, "logits")));
  for (int64_t b = 0; b < step.batch; ++b)
    std::copy_n(all.begin() + (b * rows + rows - 1) * vocab, vocab, last.begin() + b * vocab);
  return Tensor::from_vector<float>({step.batch, vocab}, last);
}

void PortableRunner::reorder_rows(const std::vector<int64_t>& rows) {
  if (rows.empty()) fail("reorder_rows: no rows");
  for (auto& [key, tensor] : cache_) tensor = gather_rows(tensor, rows, kPresent + key);
  batch_ = static_cast<int64_t>(rows.size());
}

void PortableRunner::reset() {
  cache_.clear();
  cached_ = 0;
  batch_ = 0;
}

}  // namespace octet::generate
