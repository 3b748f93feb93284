// The pass interface: a named rewrite of a Graph that says whether it changed anything.
//
// Passes edit the graph only through GraphPatch (ir/patch.h) and apply their patches with
// PassContext::apply, which records what each patch added and removed; a pass adds its
// own counts of what it matched ("octet.Gelu(tanh)": 2) with PassContext::count. The
// Pipeline (pipeline.h) runs an ordered list of passes to a fixed point and sums these
// per pass into an OptimizeReport.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/patch.h"

namespace octet {

struct OptimizeOptions;

// What one pass did over a whole optimize() call (every time the pipeline ran it).
struct PassStats {
  std::string name;
  int runs = 0;          // times the pipeline ran it
  int changed_runs = 0;  // runs that changed the graph
  int64_t rewrites = 0;  // patches applied (one per fused pattern, folded batch, ...)
  int64_t nodes_added = 0, nodes_removed = 0;
  int64_t initializers_added = 0, initializers_removed = 0;
  std::map<std::string, int64_t> details;  // what was matched, by kind
  double seconds = 0;
};

class PassContext {
 public:
  PassContext(const OptimizeOptions& options, PassStats& stats, std::vector<std::string>& warnings)
      : options_(options), stats_(stats), warnings_(warnings) {}

  const OptimizeOptions& options() const { return options_; }
  PassStats& stats() { return stats_; }

  // Applies `patch` and records its counts. A patch the graph rejects is a bug in the
  // pass: with options().verify it throws (tests), otherwise the graph is left as it was
  // and a warning names the pass, so one bad match never costs the user the model.
  bool apply(GraphPatch& patch);
  void count(const std::string& what, int64_t n = 1) { stats_.details[what] += n; }
  void warn(const std::string& message) { warnings_.push_back(stats_.name + ": " + message); }

 private:
  const OptimizeOptions& options_;
  PassStats& stats_;
  std::vector<std::string>& warnings_;
};

struct Pass {
  std::string name;
  // Returns true when it changed the graph.
  std::function<bool(Graph&, PassContext&)> run;
};

}  // namespace octet
