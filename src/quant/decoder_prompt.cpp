#include "quant/decoder_prompt.h"

#include <algorithm>

#include "octet/error.h"
#include "quant/calibration_data.h"

namespace octet::quant {
namespace {

constexpr const char* kPastPrefix = "past_key_values.";

const Tensor* find(const NamedTensors& given, const std::string& name) {
  for (const auto& kv : given)
    if (kv.first == name) return &kv.second;
  return nullptr;
}

// `values` (row-major int64) as a tensor of the model input's integer or float dtype.
Tensor typed(const InputSpec& in, std::vector<int64_t> shape, const std::vector<int64_t>& values,
             const std::string& what) {
  switch (in.dtype) {
    case DType::Int64: return Tensor::from_vector<int64_t>(std::move(shape), values);
    case DType::Int32: return Tensor::from_vector<int32_t>(std::move(shape), std::vector<int32_t>(values.begin(), values.end()));
    case DType::Float32: return Tensor::from_vector<float>(std::move(shape), std::vector<float>(values.begin(), values.end()));
    default: break;
  }
  fail(what, ": cannot fill an input of type ", dtype_name(in.dtype), " (int64, int32 or float32 expected)");
}

// The batch and sequence length of the window: input_ids [batch, seq], already bound.
std::pair<int64_t, int64_t> window_of(const NamedTensors& given, const std::string& what) {
  const Tensor* ids = find(given, "input_ids");
  if (!ids || ids->rank() != 2)
    fail(what, ": filling it needs input_ids [batch, sequence] in the sample (the prompt window)",
         ids ? ", which has rank " + std::to_string(ids->rank()) : std::string());
  return {ids->shape()[0], ids->shape()[1]};
}

// The past length a given cache has (optimum's [batch, kv heads, past, head dim]); 0 when the
// cache is filled here.
int64_t past_length(const NamedTensors& given) {
  for (const auto& [name, t] : given)
    if (is_past(name) && t.rank() == 4) return t.shape()[2];
  return 0;
}

void check_rank(const InputSpec& in, size_t rank, const std::string& what) {
  if (in.dims && in.dims->size() != rank)
    fail(what, ": the model declares it ", dims_to_string(*in.dims), "; a prompt step's fill has rank ", rank);
}

// An empty cache: every declared dim a constant or bound by the sample (the batch), except
// the one past-length dim, which is 0 (or already bound to 0 by the cache inputs before it).
Tensor empty_past(const InputSpec& in, const Bindings& bound, const std::string& what) {
  if (!in.dims)
    fail(what, ": the model does not declare its shape, so the empty cache's dims (batch, kv heads, 0, head dim) "
         "are unknown; give it in the samples");
  std::vector<int64_t> shape;
  int past_axes = 0;
  for (const Dim& d : *in.dims) {
    if (std::optional<int64_t> v = d.evaluate(bound)) {
      shape.push_back(*v);
    } else {
      shape.push_back(0);
      ++past_axes;
    }
  }
  if (past_axes > 1)
    fail(what, ": declared ", dims_to_string(*in.dims), ", of which ", past_axes,
         " dims are neither constant nor bound by the sample's other inputs; an empty cache needs exactly one (the "
         "past length, 0)");
  // Every dim bound: the past length came from another cache input (filled or given).
  if (past_axes == 0 && std::find(shape.begin(), shape.end(), 0) == shape.end())
    fail(what, ": the sample's other inputs make its shape ", shape_to_string(shape),
         ", a cache that is not empty; give every past_key_values.* input or none");
  return Tensor(in.dtype, shape);  // zero elements
}

}  // namespace

bool is_past(const std::string& name) { return name.rfind(kPastPrefix, 0) == 0; }

bool is_with_past_decoder(const std::vector<InputSpec>& inputs) {
  const auto has = [&](auto pred) { return std::any_of(inputs.begin(), inputs.end(), pred); };
  return has([](const InputSpec& in) { return in.name == "input_ids"; }) &&
         has([](const InputSpec& in) { return is_past(in.name); });
}

bool is_prompt_fillable(const std::string& name) {
  return name == "attention_mask" || name == "position_ids" || is_past(name);
}

std::string describe_prompt_fillable(const std::vector<InputSpec>& inputs) {
  std::string out;
  size_t past = 0;
  for (const InputSpec& in : inputs) {
    if (is_past(in.name)) ++past;
    else if (is_prompt_fillable(in.name)) out += (out.empty() ? "" : ", ") + in.name;
  }
  if (past) out += (out.empty() ? "" : ", ") + std::string(kPastPrefix) + "* (" + std::to_string(past) + ")";
  return out;
}

Tensor fill_prompt_input(const InputSpec& in, const NamedTensors& given, const Bindings& bound,
                         const std::string& where) {
  const std::string what = where + ": input '" + in.name + "'";
  if (is_past(in.name)) return empty_past(in, bound, what);
  const auto [batch, seq] = window_of(given, what);
  const int64_t past = past_length(given);
  if (in.name == "attention_mask") {
    check_rank(in, 2, what);
    // every token kept, over the past and the window
    return typed(in, {batch, past + seq}, std::vector<int64_t>(static_cast<size_t>(batch * (past + seq)), 1), what);
  }
  if (in.name == "position_ids") {
    check_rank(in, 2, what);
    // Hugging Face's rule: the running count of kept tokens minus one over the whole mask
    // (past and window), 1 on padded positions; the window's are the last `seq`.
    const Tensor* given_mask = find(given, "attention_mask");
    const bool usable = given_mask && given_mask->rank() == 2 && given_mask->shape()[0] == batch &&
                        given_mask->shape()[1] >= seq && given_mask->dtype() != DType::Float32;
    const int64_t total = usable ? given_mask->shape()[1] : past + seq;
    const std::vector<int64_t> mask =
        usable ? given_mask->to_int64_vector() : std::vector<int64_t>(static_cast<size_t>(batch * total), 1);
    std::vector<int64_t> pos(static_cast<size_t>(batch * seq));
    for (int64_t r = 0; r < batch; ++r) {
      int64_t kept = 0;
      for (int64_t t = 0; t < total; ++t) {
        const bool keep = mask[static_cast<size_t>(r * total + t)] != 0;
        kept += keep;
        if (t >= total - seq) pos[static_cast<size_t>(r * seq + t - (total - seq))] = keep ? kept - 1 : 1;
      }
    }
    return typed(in, {batch, seq}, pos, what);
  }
  fail(what, ": not a prompt-step input octet can fill");
}

}  // namespace octet::quant
