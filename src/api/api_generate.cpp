// The public Generator / Seq2SeqGenerator (octet/generate.h) over src/generate: finding
// the files of an export, reading its config for eos / decoder start ids, and converting
// the options.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "api/api_internal.h"
#include "octet/generate.h"
#include "generate/runner_factory.h"
#include "generate/seq2seq_loop.h"

namespace octet::v1 {

namespace fs = std::filesystem;

namespace {

// config.json, then generation_config.json over it (what transformers' generate reads).
nlohmann::json model_config(const fs::path& folder) {
  nlohmann::json merged = nlohmann::json::object();
  for (const char* name : {"config.json", "generation_config.json"}) {
    const fs::path p = folder / name;
    if (!fs::is_regular_file(p)) continue;
    std::ifstream in(p);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) fail(p.string(), ": not a JSON object");
    for (auto& [k, v] : j.items()) merged[k] = v;
  }
  return merged;
}

// An id or a list of ids under `key`; empty when absent or null.
std::vector<int64_t> config_ids(const nlohmann::json& config, const char* key) {
  std::vector<int64_t> out;
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return out;
  if (it->is_number_integer()) out.push_back(it->get<int64_t>());
  else if (it->is_array())
    for (const auto& v : *it)
      if (v.is_number_integer()) out.push_back(v.get<int64_t>());
  return out;
}

generate::DecoderFiles decoder_files(const std::string& model) {
  const fs::path p(model);
  if (fs::is_regular_file(p)) {
    // optimum's with-past decoder named alone: its first-step file beside it takes the
    // prompt whole (the with-past one may take one new token per step only).
    const fs::path first = p.parent_path() / "decoder_model.onnx";
    if (p.filename() == "decoder_with_past_model.onnx" && fs::is_regular_file(first)) return {model, first.string()};
    return {model, ""};
  }
  if (!fs::is_directory(p)) fail("no such file or folder");
  if (fs::is_regular_file(p / "decoder_with_past_model.onnx")) {
    const fs::path first = p / "decoder_model.onnx";
    return {(p / "decoder_with_past_model.onnx").string(), fs::is_regular_file(first) ? first.string() : ""};
  }
  if (fs::is_regular_file(p / "decoder_model_merged.onnx")) return {(p / "decoder_model_merged.onnx").string(), ""};
  if (fs::is_regular_file(p / "model.onnx")) return {(p / "model.onnx").string(), ""};
  std::vector<fs::path> onnx;
  for (const auto& e : fs::directory_iterator(p))
    if (e.is_regular_file() && e.path().extension() == ".onnx") onnx.push_back(e.path());
  if (onnx.size() != 1)
    fail("the folder holds ", onnx.size(), " .onnx files and none of decoder_with_past_model.onnx or model.onnx: "
         "name the decoder file");
  return {onnx.front().string(), ""};
}

generate::RunnerOptions runner_options(const SessionOptions& options) {
  if (options.threads < 0) fail("threads must be >= 0 (0: one per core), got ", options.threads);
  if (options.optimization_level < 0 || options.optimization_level > 2)
    fail("optimization level must be 0, 1 or 2, got ", options.optimization_level);
  generate::RunnerOptions r;
  r.session.threads = options.threads;
  r.session.adapt_threads = options.adapt_threads;
  r.optimization_level = options.optimization_level;
  return r;
}

generate::GenerationConfig generation_config(const GenerationOptions& o, const std::vector<int64_t>& model_eos) {
  generate::GenerationConfig c;
  c.sampling.do_sample = o.do_sample;
  c.sampling.temperature = o.temperature;
  c.sampling.top_k = o.top_k;
  c.sampling.top_p = o.top_p;
  c.sampling.repetition_penalty = o.repetition_penalty;
  c.sampling.seed = o.seed;
  c.max_new_tokens = o.max_new_tokens;
  c.stop_token_ids = o.stop_token_ids;
  if (c.stop_token_ids.empty() && o.use_model_stop_tokens) c.stop_token_ids = model_eos;
  return c;
}

GenerationResult to_public(const generate::GenerationOutput& out) {
  GenerationResult r;
  r.tokens = out.tokens;
  r.timings.prompt_tokens = out.timings.prompt_tokens;
  r.timings.new_tokens = out.timings.new_tokens;
  r.timings.time_to_first_token_ms = out.timings.time_to_first_token_ms;
  r.timings.decode_tokens_per_second = out.timings.decode_tokens_per_second;
  r.timings.total_ms = out.timings.total_ms;
  r.stop_reason = generate::stop_reason_name(out.stop_reason);
  return r;
}

generate::TokenCallback internal_callback(const TokenCallback& cb) {
  if (!cb) return {};
  return [&cb](int64_t t) { return cb(t); };
}

fs::path folder_of(const std::string& model) {
  const fs::path p(model);
  return fs::is_directory(p) ? p : p.parent_path();
}

}  // namespace

struct Generator::Impl {
  std::string name;
  std::unique_ptr<generate::DecoderRunner> runner;
  std::vector<int64_t> eos;
};

Generator::Generator(const std::string& model, const SessionOptions& options) {
  impl_ = api::guarded(model, [&] {
    auto impl = std::make_shared<Impl>();
    impl->name = model;
    impl->runner = generate::make_decoder_runner(decoder_files(model), runner_options(options));
    impl->eos = config_ids(model_config(folder_of(model)), "eos_token_id");
    return impl;
  });
}

GenerationResult Generator::generate(const std::vector<int64_t>& prompt, const GenerationOptions& options,
                                     const TokenCallback& on_token) {
  return api::guarded(impl_->name, [&] {
    if (options.num_beams != 1) fail("beam search (num_beams > 1) is for encoder-decoder models (Seq2SeqGenerator)");
    return to_public(generate::generate_decoder_only(*impl_->runner, prompt, generation_config(options, impl_->eos),
                                                     internal_callback(on_token)));
  });
}

std::vector<int64_t> Generator::eos_token_ids() const { return impl_->eos; }
const std::string& Generator::model_name() const { return impl_->name; }

struct Seq2SeqGenerator::Impl {
  std::string name;
  std::shared_ptr<const ::octet::Session> encoder;
  std::unique_ptr<generate::DecoderRunner> decoder;
  std::vector<int64_t> eos, start;
};

Seq2SeqGenerator::Seq2SeqGenerator(const std::string& folder, const SessionOptions& options) {
  impl_ = api::guarded(folder, [&] {
    const fs::path p(folder);
    if (!fs::is_directory(p)) fail("not a folder: a seq2seq model is optimum's set of files in one folder");
    if (!fs::is_regular_file(p / "encoder_model.onnx"))
      fail("the folder has no encoder_model.onnx (optimum's encoder-decoder export)");
    if (!fs::is_regular_file(p / "decoder_with_past_model.onnx") && !fs::is_regular_file(p / "decoder_model_merged.onnx"))
      fail("the folder has neither decoder_with_past_model.onnx nor decoder_model_merged.onnx (optimum's "
           "encoder-decoder export)");
    const generate::RunnerOptions r = runner_options(options);
    auto impl = std::make_shared<Impl>();
    impl->name = folder;
    impl->encoder = generate::load_session((p / "encoder_model.onnx").string(), r);
    impl->decoder = generate::make_decoder_runner(decoder_files(folder), r);
    const nlohmann::json config = model_config(p);
    impl->eos = config_ids(config, "eos_token_id");
    impl->start = config_ids(config, "decoder_start_token_id");
    return impl;
  });
}

namespace {

generate::Seq2SeqConfig seq2seq_config(const GenerationOptions& options, const std::vector<int64_t>& eos,
                                       const std::vector<int64_t>& start) {
  generate::Seq2SeqConfig c;
  c.generation = generation_config(options, eos);
  c.decoder_start_ids = start;
  if (c.decoder_start_ids.empty())
    fail("no decoder start token: the folder's config.json has no decoder_start_token_id (set_decoder_start_ids)");
  c.num_beams = options.num_beams;
  c.length_penalty = options.length_penalty;
  if (options.early_stopping == "false") c.early_stopping = generate::EarlyStopping::Heuristic;
  else if (options.early_stopping == "true") c.early_stopping = generate::EarlyStopping::Always;
  else if (options.early_stopping == "never") c.early_stopping = generate::EarlyStopping::Never;
  else fail("early_stopping must be \"false\", \"true\" or \"never\", got \"", options.early_stopping, "\"");
  return c;
}

}  // namespace

GenerationResult Seq2SeqGenerator::generate(const std::vector<int64_t>& source, const GenerationOptions& options,
                                            const TokenCallback& on_token) {
  return api::guarded(impl_->name, [&] {
    return to_public(generate::generate_seq2seq(*impl_->encoder, *impl_->decoder, source,
                                                seq2seq_config(options, impl_->eos, impl_->start),
                                                internal_callback(on_token)));
  });
}

GenerationResult Seq2SeqGenerator::generate(const NamedTensors& encoder_inputs, const GenerationOptions& options,
                                            const TokenCallback& on_token) {
  return api::guarded(impl_->name, [&] {
    ::octet::NamedTensors in;
    for (const auto& [name, tensor] : encoder_inputs) in.emplace_back(name, api::unwrap(tensor, name));
    return to_public(generate::generate_seq2seq(*impl_->encoder, *impl_->decoder, in,
                                                seq2seq_config(options, impl_->eos, impl_->start),
                                                internal_callback(on_token)));
  });
}

std::vector<int64_t> Seq2SeqGenerator::eos_token_ids() const { return impl_->eos; }
std::vector<int64_t> Seq2SeqGenerator::decoder_start_ids() const { return impl_->start; }
void Seq2SeqGenerator::set_decoder_start_ids(std::vector<int64_t> ids) { impl_->start = std::move(ids); }

}  // namespace octet::v1
