// libFuzzer target: a model file's bytes through everything a user's command does with
// it: load (import + inference), `check`, the optimizer, a session, and one run on
// generated inputs with every symbolic dim bound to 2. Any octet::Error is a correct
// answer to a bad file; a crash, a sanitizer report, a hang or another exception type
// (std::length_error's "max_size()" text once leaked this way) is a bug.
//
// Built by scripts/fuzz.sh (clang, -fsanitize=fuzzer,address,undefined).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <string>

#include "analysis/macs.h"
#include "check/type_check.h"
#include "core/sizes.h"
#include "octet/error.h"
#include "onnx/model_io.h"
#include "passes/pipeline.h"
#include "runtime/random_inputs.h"
#include "runtime/session.h"

namespace {

// What one run may allocate for its tensors: the fuzzer's RSS limit is the real cap; this
// keeps legitimately large (not malformed) models from tripping it.
constexpr size_t kMaxRunBytes = size_t{256} << 20;
// And what it may compute: 10^8 multiply-accumulates is well under a second on the
// instrumented kernels, so the -timeout of scripts/fuzz.sh is left for real hangs (a loop
// that never ends), not for a model that is merely big.
constexpr int64_t kMaxRunMacs = 100'000'000;

// How far inputs got (OCTET_FUZZ_STATS=1 prints it at exit): what tells a run that only
// bounced off the loader from one that reached inference. scripts/fuzz.sh replays the
// final corpus with it.
struct StageCounts {
  long inputs = 0, loaded = 0, checked = 0, optimized = 0, session = 0, skipped_large = 0, ran = 0;
  ~StageCounts() {
    if (!std::getenv("OCTET_FUZZ_STATS")) return;
    std::fprintf(stderr,
                 "fuzz_model stages: inputs=%ld checked=%ld loaded=%ld optimized=%ld session=%ld "
                 "skipped_as_large=%ld ran=%ld\n",
                 inputs, checked, loaded, optimized, session, skipped_large, ran);
  }
};
StageCounts stages;

// Sum of the graph's multiply-accumulates under `bindings`; nullopt when a count is past
// int64 (such a run is skipped as large, too).
std::optional<int64_t> total_macs(const octet::Graph& graph, const octet::Bindings& bindings) {
  int64_t sum = 0;
  for (const octet::Node* n : graph.nodes()) {
    const std::optional<octet::Dim> macs = octet::node_macs(*n);
    if (!macs) continue;
    const std::optional<int64_t> value = octet::evaluate_macs(*macs, bindings);
    if (!value || __builtin_add_overflow(sum, *value, &sum)) return std::nullopt;
  }
  return sum;
}

std::string scratch_path() {
  // load_model reads a path; one file per process, in memory where /dev/shm exists.
  const char* dir = std::filesystem::exists("/dev/shm") ? "/dev/shm" : "/tmp";
  return std::string(dir) + "/octet_fuzz_model_" + std::to_string(::getpid()) + ".onnx";
}

void exercise(const std::string& path) {
  using namespace octet;
  {
    LoadOptions tolerant;
    tolerant.infer_types = false;
    Model m = load_model(path, tolerant);
    check::check_model_types(*m.graph, m.declared, check::Target::Octet);
    ++stages.checked;
  }
  Model m = load_model(path);
  ++stages.loaded;
  OptimizeOptions options;
  optimize(*m.graph, options);
  ++stages.optimized;
  Bindings bindings;
  for (const Value* v : m.graph->inputs())
    if (v->type.dims)
      for (const Dim& d : *v->type.dims)
        for (const std::string& s : d.symbols()) bindings.emplace(s, 2);
  SessionOptions so;
  so.threads = 1;
  Session session(std::shared_ptr<const Graph>(std::move(m.graph)), so);
  ++stages.session;
  const std::optional<int64_t> macs = total_macs(session.graph(), bindings);
  if (!macs || *macs > kMaxRunMacs || session.memory_stats(bindings).arena_bytes > kMaxRunBytes) {
    ++stages.skipped_large;
    return;
  }
  std::mt19937_64 rng(0);
  NamedTensors feeds;
  for (const Value* v : session.required_inputs()) {
    const std::vector<int64_t> shape = concrete_input_shape(*v, bindings);
    if (checked_tensor_bytes(v->type.dtype, shape, v->name()) > kMaxRunBytes) {
      ++stages.skipped_large;
      return;
    }
    feeds.emplace_back(v->name(), make_input(v->type.dtype, shape, choose_input_fill(*v, bindings), rng));
  }
  session.run(feeds);
  ++stages.ran;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = scratch_path();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  ++stages.inputs;
  try {
    exercise(path);
  } catch (const octet::Error&) {
    // the expected answer to a malformed model
  }
  return 0;
}
