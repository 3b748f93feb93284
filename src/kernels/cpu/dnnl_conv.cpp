// The Conv kernel: which nodes it takes (session creation), the geometry of each run, and
// the run itself, or the reference kernel where oneDNN cannot take the tensors. See
// dnnl_conv.h.
#include "kernels/cpu/dnnl_conv.h"

#include <algorithm>

#include "kernels/cpu/dnnl_common.h"

namespace octet::dnnl_cpu {
namespace {

using dims = dnnl::memory::dims;

bool is_f32(const Value* v) { return v && v->type.dtype == DType::Float32; }
bool is_f32(const Tensor* t) { return t && t->dtype() == DType::Float32; }

// The reference kernel on the same inputs; W unpacked from the state when the state owns
// it (the graph's copy may have been released).
void run_reference(KernelContext& ctx, const ConvState& state) {
  state.count_reference_run();
  if (!state.owns_input(1)) return run_reference_kernel(ctx);
  const Tensor w = state.unpack_w();
  run_reference_kernel(ctx, 1, &w);
}

void conv_kernel(KernelContext& ctx) {
  const auto& state = ctx.state_as<ConvState>();
  const ConvSpec& spec = state.spec();
  const Tensor& x = ctx.input(0);
  const Tensor* b = ctx.optional_input(2);
  std::optional<ConvProblem> p;
  // The weights are the node's constant (held by the state when it owns them); the bias
  // must be what the spec expects.
  const bool w_f32 = state.owns_input(1) || is_f32(&ctx.input(1));
  if (is_f32(&x) && w_f32 && (b != nullptr) == spec.has_bias &&
      (!b || (is_f32(b) && b->rank() == 1 && b->shape()[0] == spec.filters)))
    p = conv_problem(spec, x.shape());
  std::shared_ptr<const ConvState::Entry> entry = p ? state.primitive_for(*p, ctx.threads()) : nullptr;
  if (!entry) return run_reference(ctx, state);
  Tensor& out = ctx.allocate_output_uninitialized(0, DType::Float32, p->out_shape);
  state.execute(ctx, *p, *entry, out);
}

// ---- session creation ----


bool prepare_conv(const Node& node, std::unique_ptr<KernelState>& state) {
  const Value* w = node.input(1);
  if (!is_f32(node.input(0)) || !is_f32(w) || (node.input(2) && !is_f32(node.input(2)))) return false;
  // Only constant weights: they are reordered once, here.
  if (!w->constant() || w->is_graph_input()) return false;
  const Tensor& wt = *w->constant();
  if (wt.rank() < 3 || wt.rank() > 5 || wt.numel() == 0) return false;
  const Value* x = node.input(0);
  if (x->type.has_rank() && x->type.rank() != wt.rank()) return false;

  ConvSpec spec;
  spec.spatial = wt.rank() - 2;
  spec.filters = wt.shape()[0];
  spec.group_channels = wt.shape()[1];
  spec.kernel.assign(wt.shape().begin() + 2, wt.shape().end());
  spec.group = node.attr_int("group", 1);
  if (spec.group < 1 || spec.filters % spec.group != 0) return false;
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != spec.kernel) return false;
  const size_t n = static_cast<size_t>(spec.spatial);
  auto strides = conv_attr_ints(node, "strides", n, 1, 1), dilations = conv_attr_ints(node, "dilations", n, 1, 1);
  auto pads = conv_attr_ints(node, "pads", 2 * n, 0, 0);
  if (!strides || !dilations || !pads) return false;
  spec.strides = *strides;
  spec.dilations = *dilations;
  spec.pads = *pads;
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") spec.auto_pad = AutoPad::NotSet;
  else if (auto_pad == "VALID") spec.auto_pad = AutoPad::Valid;
  else if (auto_pad == "SAME_UPPER") spec.auto_pad = AutoPad::SameUpper;
  else if (auto_pad == "SAME_LOWER") spec.auto_pad = AutoPad::SameLower;
  else return false;
  spec.has_bias = node.input(2) != nullptr;
  try {
    state = std::make_unique<ConvState>(node, std::move(spec));
    return true;
  } catch (const dnnl::error&) {
    return false;  // oneDNN could not even reorder W: leave the node to the reference kernel
  }
}

}  // namespace

std::optional<std::vector<int64_t>> conv_attr_ints(const Node& node, const char* name, size_t n, int64_t fallback, int64_t min) {
  std::vector<int64_t> v = node.attr_ints(name, std::vector<int64_t>(n, fallback));
  if (v.size() != n) return std::nullopt;
  for (int64_t e : v)
    if (e < min) return std::nullopt;
  return v;
}

dims conv_weight_dims(const ConvSpec& spec) {
  dims d = spec.group > 1 ? dims{spec.group, spec.filters / spec.group, spec.group_channels}
                          : dims{spec.filters, spec.group_channels};
  d.insert(d.end(), spec.kernel.begin(), spec.kernel.end());
  return d;
}

std::optional<ConvProblem> conv_problem(const ConvSpec& spec, const std::vector<int64_t>& x) {
  const int64_t n = spec.spatial;
  if (static_cast<int64_t>(x.size()) != n + 2 || x[0] < 1 || x[1] != spec.group_channels * spec.group)
    return std::nullopt;
  ConvProblem p;
  p.src = dims(x.begin(), x.end());
  p.wei = conv_weight_dims(spec);
  if (spec.has_bias) p.bias = {spec.filters};
  p.out_shape = {x[0], spec.filters};
  for (int64_t i = 0; i < n; ++i) {
    const int64_t in = x[2 + i], stride = spec.strides[i];
    if (in < 1) return std::nullopt;
    const int64_t extent = (spec.kernel[i] - 1) * spec.dilations[i] + 1;
    int64_t begin = spec.pads[i], end = spec.pads[n + i];
    if (spec.auto_pad == AutoPad::Valid) begin = end = 0;
    if (spec.auto_pad == AutoPad::SameUpper || spec.auto_pad == AutoPad::SameLower) {
      // Output ceil(in / stride); the odd element of the padding at the end (UPPER) or
      // the beginning (LOWER).
      const int64_t out = (in + stride - 1) / stride;
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride + extent - in);
      begin = spec.auto_pad == AutoPad::SameUpper ? total / 2 : total - total / 2;
      end = total - begin;
    }
    if (in + begin + end < extent) return std::nullopt;
    const int64_t out = (in + begin + end - extent) / stride + 1;
    p.out_shape.push_back(out);
    p.strides.push_back(stride);
    p.dilates.push_back(spec.dilations[i] - 1);
    p.pad_l.push_back(begin);
    // The end padding the last window actually reaches: ONNX lets pads run past it (the
    // floor above drops what a stride does not reach), and some of oneDNN's kernels only
    // take padding they read. Not negative, and still consistent with `out` for oneDNN.
    p.pad_r.push_back(std::max<int64_t>(0, (out - 1) * stride + extent - in - begin));
  }
  p.dst = dims(p.out_shape.begin(), p.out_shape.end());
  return p;
}

void register_conv(KernelRegistry& r) { r.add("", "Conv", KernelDef{conv_kernel, prepare_conv}); }

}  // namespace octet::dnnl_cpu
