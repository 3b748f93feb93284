// octet._octet.Generator / Seq2SeqGenerator: the public C++ generation API (octet/generate.h).
// Generation runs without the GIL; the per-token callback takes it. A Python exception in
// the callback stops generation and is raised again when generate() returns.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "numpy_tensors.h"
#include "octet/octet.h"

namespace nb = nanobind;

namespace octet::python {

namespace {

GenerationOptions options(int64_t max_new_tokens, bool do_sample, float temperature, int64_t top_k, float top_p,
                          float repetition_penalty, uint64_t seed, std::vector<int64_t> stop_token_ids,
                          bool use_model_stop_tokens, int64_t num_beams, float length_penalty,
                          const std::string& early_stopping) {
  GenerationOptions o;
  o.max_new_tokens = max_new_tokens;
  o.do_sample = do_sample;
  o.temperature = temperature;
  o.top_k = top_k;
  o.top_p = top_p;
  o.repetition_penalty = repetition_penalty;
  o.seed = seed;
  o.stop_token_ids = std::move(stop_token_ids);
  o.use_model_stop_tokens = use_model_stop_tokens;
  o.num_beams = num_beams;
  o.length_penalty = length_penalty;
  o.early_stopping = early_stopping;
  return o;
}

nb::dict to_dict(const GenerationResult& r) {
  nb::dict d;
  d["tokens"] = r.tokens;
  d["stop_reason"] = r.stop_reason;
  d["prompt_tokens"] = r.timings.prompt_tokens;
  d["new_tokens"] = r.timings.new_tokens;
  d["time_to_first_token_ms"] = r.timings.time_to_first_token_ms;
  d["decode_tokens_per_second"] = r.timings.decode_tokens_per_second;
  d["total_ms"] = r.timings.total_ms;
  return d;
}

// Runs gen.generate without the GIL, calling `on_token` (a callable or None) with it.
// `source`: token ids, or the encoder's inputs (seq2seq).
template <typename G, typename Source>
nb::dict run(G& gen, const Source& source, const GenerationOptions& o, nb::object on_token) {
  std::optional<nb::python_error> raised;
  TokenCallback callback;
  if (!on_token.is_none())
    callback = [callable = nb::handle(on_token), &raised](int64_t token) {
      nb::gil_scoped_acquire gil;
      try {
        nb::object keep_going = callable(token);
        return keep_going.is_none() || nb::cast<bool>(keep_going);
      } catch (nb::python_error& e) {
        raised.emplace(std::move(e));
        return false;
      }
    };
  GenerationResult r;
  {
    nb::gil_scoped_release release;
    r = gen.generate(source, o, callback);
  }
  if (raised) throw std::move(*raised);
  return to_dict(r);
}

#define OCTET_GENERATE_ARGS                                                                                      \
  nb::arg("ids"), nb::arg("max_new_tokens") = 32, nb::arg("do_sample") = false, nb::arg("temperature") = 1.0f,   \
      nb::arg("top_k") = 0, nb::arg("top_p") = 1.0f, nb::arg("repetition_penalty") = 1.0f, nb::arg("seed") = 0,  \
      nb::arg("stop_token_ids") = std::vector<int64_t>{}, nb::arg("use_model_stop_tokens") = true,               \
      nb::arg("num_beams") = 1, nb::arg("length_penalty") = 1.0f, nb::arg("early_stopping") = "false",           \
      nb::arg("on_token") = nb::none()

template <typename G, typename Source>
nb::dict generate(G& gen, const Source& ids, int64_t max_new_tokens, bool do_sample, float temperature,
                  int64_t top_k, float top_p, float repetition_penalty, uint64_t seed,
                  std::vector<int64_t> stop_token_ids, bool use_model_stop_tokens, int64_t num_beams,
                  float length_penalty, const std::string& early_stopping, nb::object on_token) {
  return run(gen, ids,
             options(max_new_tokens, do_sample, temperature, top_k, top_p, repetition_penalty, seed,
                     std::move(stop_token_ids), use_model_stop_tokens, num_beams, length_penalty, early_stopping),
             on_token);
}

// Seq2seq from the encoder's inputs [(name, C-contiguous array)], viewed while generating.
nb::dict generate_from_inputs(Seq2SeqGenerator& gen, const std::vector<std::pair<std::string, Array>>& feed,
                              int64_t max_new_tokens, bool do_sample, float temperature, int64_t top_k, float top_p,
                              float repetition_penalty, uint64_t seed, std::vector<int64_t> stop_token_ids,
                              bool use_model_stop_tokens, int64_t num_beams, float length_penalty,
                              const std::string& early_stopping, nb::object on_token) {
  NamedTensors inputs;
  for (const auto& [name, array] : feed) inputs.emplace_back(name, tensor_view(array, name));
  return generate(gen, inputs, max_new_tokens, do_sample, temperature, top_k, top_p, repetition_penalty, seed,
                  std::move(stop_token_ids), use_model_stop_tokens, num_beams, length_penalty, early_stopping,
                  on_token);
}

}  // namespace

void bind_generate(nb::module_& m) {
  nb::class_<Generator>(m, "Generator", "octet::Generator (include/octet/generate.h): decoder-only generation.")
      .def("__init__",
           [](Generator* self, const std::string& model, int threads, int level) {
             new (self) Generator(model, SessionOptions{threads, level});
           },
           nb::arg("model"), nb::arg("threads") = 0, nb::arg("optimization_level") = 2,
           nb::call_guard<nb::gil_scoped_release>())
      .def("generate", &generate<Generator, std::vector<int64_t>>, OCTET_GENERATE_ARGS,
           "Generate after `ids`; returns a dict (tokens, stop_reason, timings). on_token(id) -> False stops.")
      .def_prop_ro("eos_token_ids", &Generator::eos_token_ids);
  nb::class_<Seq2SeqGenerator>(m, "Seq2SeqGenerator", "octet::Seq2SeqGenerator: encoder-decoder generation.")
      .def("__init__",
           [](Seq2SeqGenerator* self, const std::string& folder, int threads, int level) {
             new (self) Seq2SeqGenerator(folder, SessionOptions{threads, level});
           },
           nb::arg("folder"), nb::arg("threads") = 0, nb::arg("optimization_level") = 2,
           nb::call_guard<nb::gil_scoped_release>())
      .def("generate", &generate<Seq2SeqGenerator, std::vector<int64_t>>, OCTET_GENERATE_ARGS,
           "Generate from the source `ids`; returns a dict (tokens, stop_reason, timings).")
      .def("generate_from_inputs", &generate_from_inputs, OCTET_GENERATE_ARGS,
           "Generate from the encoder's inputs [(name, array)] (Whisper: input_features).")
      .def_prop_ro("eos_token_ids", &Seq2SeqGenerator::eos_token_ids)
      .def_prop_rw("decoder_start_ids", &Seq2SeqGenerator::decoder_start_ids, &Seq2SeqGenerator::set_decoder_start_ids);
}

}  // namespace octet::python
