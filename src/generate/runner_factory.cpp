#include "generate/runner_factory.h"

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
  // The in-place runner slots in here once the kvcache branch merges:
  //   if (auto runner = make_in_place_runner(...)) return runner;
  // (it returns nullptr when its fusion does not apply to the model).
  std::shared_ptr<const Session> first = files.first.empty() ? nullptr : load_session(files.first, options);
  return std::make_unique<PortableRunner>(load_session(files.with_past, options), std::move(first));
}

}  // namespace octet::generate
