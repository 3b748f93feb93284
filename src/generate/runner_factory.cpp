#include "generate/runner_factory.h"

#include <cstdlib>

#include "generate/in_place_kv_runner.h"
#include "generate/portable_runner.h"
#include "generate/seq2seq_in_place_runner.h"
#include "onnx/model_io.h"
#include "octet/error.h"
#include "onnx/subgraph.h"
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

namespace {

// optimum's merged decoder: one If on the bool input use_cache_branch, whose then_branch is
// the with-past decoder and else_branch the first-step one (no past). The If node, or null.
const Node* merged_if(const Graph& g) {
  if (g.node_count() != 1) return nullptr;
  const Node* n = g.nodes().front();
  if (!n->domain().empty() || n->op_type() != "If" || n->input(0)->name() != "use_cache_branch") return nullptr;
  return n;
}

// A seq2seq first step reads the encoder's output; a decoder-only one does not.
bool reads_encoder(const Graph& g) {
  for (const Value* v : g.inputs())
    if (v->name() == "encoder_hidden_states") return true;
  return false;
}

// OCTET_KV_CACHE: "" (unset) or "auto", "portable", "in-place".
std::string cache_choice() {
  const char* env = std::getenv("OCTET_KV_CACHE");
  const std::string c = env ? env : "";
  if (!c.empty() && c != "auto" && c != "portable" && c != "in-place")
    fail("OCTET_KV_CACHE is '", c, "'; it must be auto, portable or in-place");
  return c;
}

// The in-place runner for `with_past` (+ `first`), or null with `why`.
std::unique_ptr<DecoderRunner> in_place(std::shared_ptr<Graph> with_past, std::shared_ptr<const Session> first,
                                        const RunnerOptions& options, std::string& why) {
  if (first) return make_seq2seq_in_place_runner(std::move(with_past), std::move(first), options.session, &why);
  return make_in_place_runner(std::move(with_past), options.session, &why);
}

}  // namespace

std::unique_ptr<DecoderRunner> make_decoder_runner(const DecoderFiles& files, const RunnerOptions& options,
                                                   std::string* why) {
  // A decoder whose attention with past fuses runs in place: the cache lives in the
  // runner's buffers and a step writes only its new rows. A seq2seq decoder (a first-step
  // file beside the with-past one) also holds the cross-attention keys/values the first
  // step computed; optimum's merged decoder runs as its two branches. An unoptimized run
  // and any model the rewrite does not fit take the portable runner; `why` says which.
  std::string reason = "optimization level below 2: the attention is not fused";
  const std::string choice = cache_choice();
  if (choice == "portable") reason = "OCTET_KV_CACHE=portable";
  std::shared_ptr<const Session> first = files.first.empty() ? nullptr : load_session(files.first, options);
  if (options.optimization_level >= 2 && choice != "portable") {
    Model model = load_model(files.with_past);
    if (const Node* merged = merged_if(*model.graph)) {
      // Its branches run as the split files do: the attention inside an If is out of any
      // rewrite's reach, while each branch alone is what the split export holds.
      Model else_branch = load_subgraph(*merged, "else_branch");
      if (reads_encoder(*else_branch.graph)) {
        optimize(*else_branch.graph, OptimizeOptions{});
        auto no_past = std::make_shared<const Session>(std::shared_ptr<Graph>(std::move(else_branch.graph)),
                                                       options.session);
        Model then_branch = load_subgraph(*merged, "then_branch");
        if (auto runner = in_place(std::shared_ptr<Graph>(std::move(then_branch.graph)), no_past, options, reason))
          return runner;
        reason = "merged decoder: " + reason;
      } else {
        // A decoder-only merged file would run its with-past branch from an empty cache;
        // no fixture tests that yet, so it stays on the portable runner.
        reason = "a decoder-only merged decoder runs on the portable runner";
      }
    } else if (auto runner = in_place(std::shared_ptr<Graph>(std::move(model.graph)), first, options, reason)) {
      return runner;
    }
  }
  if (choice == "in-place") fail("OCTET_KV_CACHE=in-place, but the decoder cannot run in place: ", reason);
  if (why) *why = reason;
  return std::make_unique<PortableRunner>(load_session(files.with_past, options), std::move(first));
}

}  // namespace octet::generate
