// If: runs the chosen branch through a Session of its own.
//
// Each branch is loaded (onnx/subgraph.h) and its Session built the first time it is
// chosen, then kept in the node's state: a merged decoder runs its no-cache branch once
// per sequence and its cache branch every later step, so neither is rebuilt per step. The
// branch sessions run octet's optimized kernels (state is built before the kernel knows
// the outer session's KernelChoice) on the branch graph after octet's default optimization
// pipeline (a Session runs what it is given, and the CLI optimized only the outer graph);
// they use the outer session's thread count.
#include <memory>
#include <mutex>

#include "kernels/kernel.h"
#include "onnx/subgraph.h"
#include "passes/pipeline.h"
#include "runtime/session.h"

namespace octet {
namespace {

class IfState : public KernelState {
 public:
  // The branch's session, built on first use.
  const Session& branch(const Node& node, bool then_branch, int threads) const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::unique_ptr<Session>& s = then_branch ? then_ : else_;
    if (!s) {
      Model m = load_subgraph(node, then_branch ? "then_branch" : "else_branch");
      optimize(*m.graph);
      SessionOptions o;
      o.threads = threads;
      s = std::make_unique<Session>(std::shared_ptr<Graph>(std::move(m.graph)), o);
    }
    return *s;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::unique_ptr<Session> then_, else_;
};

bool prepare_if(const Node&, std::unique_ptr<KernelState>& state) {
  state = std::make_unique<IfState>();
  return true;
}

void if_kernel(KernelContext& ctx) {
  const Tensor& cond = ctx.input(0);
  if (cond.dtype() != DType::Bool || cond.numel() != 1)
    ctx.fail("cond is ", cond.describe(), "; it must be a bool tensor of one element");
  const bool take_then = cond.data<bool>()[0];
  const Node& node = ctx.node();
  const Session& s = ctx.state_as<IfState>().branch(node, take_then, ctx.threads());

  // The session passes the outer values the branches read after the node's own inputs.
  const auto& outer = node.implicit_inputs();
  const size_t first = node.inputs().size();
  NamedTensors feeds;
  for (const Value* v : s.required_inputs()) {
    size_t i = 0;
    while (i < outer.size() && outer[i]->name() != v->name()) ++i;
    if (i == outer.size() || !ctx.has_input(first + i))
      ctx.fail(take_then ? "then_branch" : "else_branch", " reads '", v->name(), "', which was not computed");
    feeds.emplace_back(v->name(), ctx.input(first + i));
  }
  NamedTensors out = s.run(feeds);
  if (out.size() != ctx.num_outputs())
    ctx.fail(take_then ? "then_branch" : "else_branch", " gave ", out.size(), " outputs for ", ctx.num_outputs());
  for (size_t i = 0; i < out.size(); ++i)
    if (ctx.output_wanted(i)) ctx.set_output(i, std::move(out[i].second));
}

}  // namespace

void register_ref_control_flow(KernelRegistry& r) { r.add("", "If", KernelDef{if_kernel, prepare_if, false}); }

}  // namespace octet
