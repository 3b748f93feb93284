#include "generate/runner_factory.h"

#include <cstdlib>

#include "generate/in_place_kv_runner.h"
#include "generate/one_token_steps.h"
#include "generate/portable_runner.h"
#include "generate/seq2seq_in_place_runner.h"
#include "onnx/model_io.h"
#include "octet/error.h"
#include "onnx/subgraph.h"
#include "passes/pipeline.h"

namespace octet::generate {

namespace {

// Optimizes `model` at `options.optimization_level` into a Session that solely owns it.
std::shared_ptr<const Session> session_of(Model model, const RunnerOptions& options) {
  if (options.optimization_level > 0) {
    OptimizeOptions o;
    o.level = options.optimization_level;
    optimize(*model.graph, o);
  }
  return std::make_shared<const Session>(std::shared_ptr<Graph>(std::move(model.graph)), options.session);
}

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

std::shared_ptr<const Session> load_session(const std::string& path, const RunnerOptions& options) {
  return session_of(load_model(path), options);
}

std::unique_ptr<DecoderRunner> make_decoder_runner(const DecoderFiles& files, const RunnerOptions& options,
                                                   std::string* why) {
  // A decoder whose attention with past fuses runs in place: the cache lives in the
  // runner's buffers and a step writes only its new rows. A seq2seq decoder (a first-step
  // file beside the with-past one) also holds the cross-attention keys/values the first
  // step computed; optimum's merged decoder runs as its two branches. An unoptimized run
  // and any model the rewrite does not fit take the portable runner; `why` says which.
  // A with-past decoder traced for one new token per step (one_token_steps.h) gets its
  // longer steps one token at a time, whichever runner runs it.
  std::string reason = "optimization level below 2: the attention is not fused";
  const std::string choice = cache_choice();
  if (choice == "portable") reason = "OCTET_KV_CACHE=portable";
  std::shared_ptr<const Session> first = files.first.empty() ? nullptr : load_session(files.first, options);
  Model model = load_model(files.with_past);
  const Node* merged = merged_if(*model.graph);  // points into model.graph
  bool decoder_only_merged = false, one_token = false;
  if (merged) {
    Model else_branch = load_subgraph(*merged, "else_branch");
    decoder_only_merged = !reads_encoder(*else_branch.graph);
    // optimum writes the merged file from its legacy with-past decoder, whose later steps
    // take one token (the branch's own inputs are the outer graph's, so it cannot say so).
    one_token = decoder_only_merged;
    if (options.optimization_level >= 2 && choice != "portable") {
      // Its branches run as the split files do: the attention inside an If is out of any
      // rewrite's reach, while each branch alone is what the split export holds. The
      // first step (no cache) runs the else branch, every later one the then branch.
      optimize(*else_branch.graph, OptimizeOptions{});
      auto no_past = std::make_shared<const Session>(std::shared_ptr<Graph>(std::move(else_branch.graph)),
                                                     options.session);
      Model then_branch = load_subgraph(*merged, "then_branch");
      // The branches share the merged graph's weight tensors (load_subgraph); dropping the
      // merged graph leaves them to the branches, whose sessions release what they pack
      // (the portable fallback reads the file again).
      merged = nullptr;
      model.graph.reset();
      if (auto runner = in_place(std::shared_ptr<Graph>(std::move(then_branch.graph)), no_past, options, reason))
        return one_token ? one_token_steps(std::move(runner), true) : std::move(runner);
      reason = "merged decoder: " + reason;
    }
  } else {
    one_token = takes_one_new_token(*model.graph);
    if (options.optimization_level >= 2 && choice != "portable")
      if (auto runner = in_place(std::shared_ptr<Graph>(std::move(model.graph)), first, options, reason))
        return one_token ? one_token_steps(std::move(runner), first != nullptr) : std::move(runner);
  }
  if (choice == "in-place") fail("OCTET_KV_CACHE=in-place, but the decoder cannot run in place: ", reason);
  if (why) *why = reason;
  // The file once more where an in-place attempt took (and rewrote) its graph.
  auto portable = std::make_unique<PortableRunner>(
      model.graph ? session_of(std::move(model), options) : load_session(files.with_past, options), first);
  // The portable runner takes a merged file's first step through its no-past branch.
  if (one_token) return one_token_steps(std::move(portable), first != nullptr || decoder_only_merged);
  return portable;
}

}  // namespace octet::generate
