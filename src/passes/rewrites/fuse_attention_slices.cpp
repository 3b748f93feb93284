// octet.Attention / octet.QAttention reading Slices of the last axis -> the same op with
// channel_ranges.
//
// Models with one packed input projection (PyTorch's nn.MultiheadAttention: ViT, BART's
// self-attention in some exports) compute [S, B, 3E] once and Slice it into Q, K and V
// along the channels. Each Slice copies its third of the tensor on every run, only for
// the attention kernel to read it once. With channel_ranges the kernel reads the packed
// tensor in place (its row stride is the full 3E, the offset the slice's start), so the
// three copies disappear.
//
// The same for GPT-2's fused c_attn, which torch exports as one Split of the last axis
// into Q, K and V: a Split all of whose outputs this node alone reads.
//
// Matched, per input of Q, K, V independently: an ai.onnx Slice (opset >= 10) of a rank-3
// tensor with a known last dim, along that last axis only (axes = [-1] or [2]), with
// constant starts/ends, step 1 (or none) and a non-empty result, whose output only this
// Attention reads, once. The node must not already carry channel_ranges, and every one of
// Q, K, V must have a known channel count (the attribute spells out [begin, end) for all
// three).
#include <algorithm>
#include <array>
#include <optional>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/attention_packing.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

struct ChannelSlice {
  Node* slice = nullptr;  // the Slice or Split; nullptr: the input is read whole
  Value* source = nullptr;
  int64_t begin = 0, end = 0;
};

std::optional<int64_t> last_dim(const Value* v) {
  if (!v || !v->type.has_rank() || v->type.rank() != 3) return std::nullopt;
  return (*v->type.dims)[2].constant();
}

// One int64 of a one-element constant (Slice's starts/ends/axes/steps).
std::optional<int64_t> one_int(const Value* v) {
  const Tensor* t = constant_value(v);
  if (!t || t->numel() != 1 || (t->dtype() != DType::Int64 && t->dtype() != DType::Int32)) return std::nullopt;
  return t->to_int64_vector()[0];
}

// The channel range a Slice of the last axis keeps, when `v` is one this pass may absorb.
std::optional<ChannelSlice> channel_slice(Value* v, const Node* attention) {
  Node* s = producer(v, "Slice");
  if (!s || s->opset() < 10 || sole_consumer(v) != attention) return std::nullopt;
  Value* data = s->input(0);
  const std::optional<int64_t> channels = last_dim(data);
  if (!channels || *channels <= 0) return std::nullopt;
  const std::optional<int64_t> start = one_int(s->input(1)), end = one_int(s->input(2));
  const std::optional<int64_t> axis = s->input(3) ? one_int(s->input(3)) : std::nullopt;
  const std::optional<int64_t> step = s->input(4) ? one_int(s->input(4)) : std::optional<int64_t>(1);
  if (!start || !end || !axis || (*axis != 2 && *axis != -1) || step != 1) return std::nullopt;
  // ONNX's clamping: negative positions count from the end, then both clamp to [0, C].
  auto clamp = [&](int64_t x) { return std::clamp<int64_t>(x < 0 ? x + *channels : x, 0, *channels); };
  ChannelSlice r{s, data, clamp(*start), clamp(*end)};
  if (r.end <= r.begin) return std::nullopt;
  return r;
}

// The channel range of `v` when it is an output of a Split of the last axis whose every
// output only `attention` reads, once (GPT-2's c_attn split into Q, K and V). The ranges
// come from the outputs' inferred widths, whichever way the split sizes were given.
std::optional<ChannelSlice> channel_split(Value* v, const Node* attention) {
  Node* s = producer(v, "Split");
  if (!s) return std::nullopt;
  Value* data = s->input(0);
  const std::optional<int64_t> channels = last_dim(data);
  const int64_t axis = s->attr_int("axis", 0);
  if (!channels || (axis != 2 && axis != -1)) return std::nullopt;
  ChannelSlice r{s, data, 0, 0};
  int64_t begin = 0;
  for (Value* out : s->outputs()) {
    const std::optional<int64_t> width = last_dim(out);
    if (!width || *width <= 0 || sole_consumer(out) != attention) return std::nullopt;
    if (out == v) r = {s, data, begin, begin + *width};
    begin += *width;
  }
  if (begin != *channels || r.end == 0) return std::nullopt;
  return r;
}

bool run(Graph& g, PassContext& ctx) {
  bool changed = false;
  RemovedNodes removed;  // Slices this sweep absorbed: their memory is gone
  for (Node* n : g.nodes()) {
    if (removed.contains(n)) continue;
    if (n->domain() != "octet" || (n->op_type() != "Attention" && n->op_type() != "QAttention") ||
        n->has_attr("channel_ranges"))
      continue;
    std::array<ChannelSlice, 3> in;
    bool any = false, known = true;
    for (size_t i = 0; i < 3 && known; ++i) {
      std::optional<ChannelSlice> s = channel_slice(n->input(i), n);
      if (!s) s = channel_split(n->input(i), n);
      if (s) {
        in[i] = *s;
        any = true;
      } else if (std::optional<int64_t> c = last_dim(n->input(i))) {
        in[i] = {nullptr, n->input(i), 0, *c};
      } else {
        known = false;
      }
    }
    if (!any || !known) continue;

    GraphPatch patch = make_patch(g);
    read_qkv_through_ranges(patch, n, {in[0].source, in[1].source, in[2].source},
                            {in[0].begin, in[0].end, in[1].begin, in[1].end, in[2].begin, in[2].end});
    std::vector<Node*> gone = {n};
    int64_t slices = 0, splits = 0;
    for (const ChannelSlice& s : in) {
      // A Split feeds all three inputs: it is removed once.
      if (!s.slice || std::find(gone.begin(), gone.end(), s.slice) != gone.end()) continue;
      patch.remove_node(s.slice);
      gone.push_back(s.slice);
      ++(s.slice->op_type() == "Split" ? splits : slices);
    }
    if (ctx.apply(patch)) {
      removed.add(gone);
      if (slices) ctx.count("Slice read in place", slices);
      if (splits) ctx.count("Split read in place", splits);
      changed = true;
    }
  }
  return changed;
}

}  // namespace

Pass fuse_attention_slices() { return {"fuse_attention_slices", run}; }

}  // namespace octet::passes
