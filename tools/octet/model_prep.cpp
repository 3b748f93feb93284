#include "model_prep.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "cli_common.h"
#include "passes/specialize.h"

namespace octet::cli {

namespace {
double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

void check_level(int level) {
  if (level < 0 || level > 2)
    fail("--level ", level, ": expected 0 (nothing), 1 (cleanup and folding) or 2 (1 + fusions)");
}

PreparedModel prepare_model(const std::string& path, const PrepareOptions& options) {
  check_level(options.level);
  Bindings requested = parse_dim_bindings(options.dims);
  PreparedModel out;
  auto start = std::chrono::steady_clock::now();
  out.model = load_model(path);
  out.load_ms = ms_since(start);
  // Split against the graph as loaded: after specializing, the symbols are gone from the
  // inputs, and a later check would call `seq` unknown.
  if (options.skip_unknown_dims) {
    std::set<std::string> symbols;
    for (const Value* v : out.model.graph->inputs())
      if (!v->is_initializer() && v->type.dims)
        for (const Dim& d : *v->type.dims)
          for (const std::string& s : d.symbols()) symbols.insert(s);
    std::erase_if(requested, [&](const auto& kv) { return !symbols.count(kv.first); });
  }
  out.dims = split_dim_requests(*out.model.graph, requested);

  start = std::chrono::steady_clock::now();
  if (options.specialize && !out.dims.symbols.empty()) {
    try {
      bind_symbols(*out.model.graph, out.dims.symbols);
    } catch (const Error& e) {
      fail(path, ": binding --dim: ", e.what());
    }
    out.specialized = out.dims.symbols;
  }
  OptimizeOptions optimize_options;
  optimize_options.level = options.level;
  try {
    out.report = optimize(*out.model.graph, optimize_options);
  } catch (const Error& e) {
    fail(path, ": optimizing at level ", options.level, ": ", e.what());
  }
  out.optimize_ms = ms_since(start);
  return out;
}

std::unique_ptr<Session> make_session(std::shared_ptr<Graph> graph, const SessionOptions& options,
                                      const std::string& model_path) {
  try {
    return std::make_unique<Session>(std::move(graph), options);
  } catch (const Error& e) {
    // The list of unsupported ops comes one per line; the CLI reports one line.
    std::string msg = e.what();
    for (size_t at; (at = msg.find("\n  ")) != std::string::npos;)
      msg.replace(at, 3, at > 0 && msg[at - 1] == ':' ? " " : "; ");
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    fail(model_path, ": ", msg);
  }
}

}  // namespace octet::cli
