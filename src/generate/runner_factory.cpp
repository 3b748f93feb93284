#include "generate/runner_factory.h"

#include "generate/in_place_kv_runner.h"
#include "generate/portable_runner.h"
#include "onnx/model_io.h"
#include "passes/pipeline.h"

namespace octet::generate {

std::shared_ptr<const Session> load_session(const std::string& path, const RunnerOptions& options) {
  Model model = load_model(path);
  if (options.optimization_level > 0) {
    OptimizeOptions o;
    o.level = options.optimization_level;
    optimize(*model.graph, o);
  }
  return std::make_shared<const Session>(std::shared_ptr<Graph>(std::move(model.graph)), options.session);
}

std::unique_ptr<DecoderRunner> make_decoder_runner(const DecoderFiles& files, const RunnerOptions& options) {
  // A decoder-only export whose attention with past fuses runs in place: the cache lives
  // in the runner's buffers and a step writes only its new rows. A seq2seq decoder (its
  // first step is another file, its cross-attention cache is read, never appended) and an
  // unoptimized run take the portable runner, as does any model the fusion does not fit.
  if (files.first.empty() && options.optimization_level >= 2) {
    Model model = load_model(files.with_past);
    if (auto runner = make_in_place_runner(std::shared_ptr<Graph>(std::move(model.graph)), options.session))
      return runner;
  }
  std::shared_ptr<const Session> first = files.first.empty() ? nullptr : load_session(files.first, options);
  return std::make_unique<PortableRunner>(load_session(files.with_past, options), std::move(first));
}

}  // namespace octet::generate
