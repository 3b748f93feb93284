#include "passes/pass.h"

#include "passes/pipeline.h"

namespace octet {

bool PassContext::apply(GraphPatch& patch) {
  const GraphPatch::Counts c = patch.counts();
  try {
    patch.apply();
  } catch (const Error& e) {
    if (options_.verify) fail("internal error: pass ", stats_.name, " built an invalid patch: ", e.what());
    warn(std::string("skipped a rewrite the graph rejected: ") + e.what());
    return false;
  }
  ++stats_.rewrites;
  stats_.nodes_added += static_cast<int64_t>(c.nodes_added);
  stats_.nodes_removed += static_cast<int64_t>(c.nodes_removed);
  stats_.initializers_added += static_cast<int64_t>(c.initializers_added);
  stats_.initializers_removed += static_cast<int64_t>(c.initializers_removed);
  return true;
}

}  // namespace octet
