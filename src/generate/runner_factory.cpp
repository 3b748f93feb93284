#include "generate/runner_factory.h"

#include "generate/in_place_kv_runner.h"
#include "generate/portable_runner.h"
#include "generate/seq2seq_in_place_runner.h"
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

std::unique_ptr<DecoderRunner> make_decoder_runner(const DecoderFiles& files, const RunnerOptions& options,
                                                   std::string* why) {
  // A decoder whose attention with past fuses runs in place: the cache lives in the
  // runner's buffers and a step writes only its new rows. A seq2seq decoder (a first-step
  // file beside the with-past one) also holds the cross-attention keys/values the first
  // step computed. An unoptimized run, a merged decoder (its attention inside an If) and
  // any model the fusion does not fit take the portable runner; `why` says which.
  std::string reason = "optimization level below 2: the attention is not fused";
  std::shared_ptr<const Session> first = files.first.empty() ? nullptr : load_session(files.first, options);
  if (options.optimization_level >= 2) {
    Model model = load_model(files.with_past);
    auto graph = std::shared_ptr<Graph>(std::move(model.graph));
    auto runner = first ? make_seq2seq_in_place_runner(std::move(graph), first, options.session, &reason)
                        : make_in_place_runner(std::move(graph), options.session, &reason);
    if (runner) return runner;
  }
  if (why) *why = reason;
  return std::make_unique<PortableRunner>(load_session(files.with_past, options), std::move(first));
}

}  // namespace octet::generate
