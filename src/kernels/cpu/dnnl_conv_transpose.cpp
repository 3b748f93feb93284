// float32 ai.onnx ConvTranspose (1-D, 2-D, 3-D) through oneDNN's deconvolution primitive.
//
// Session creation takes a node when X, W (and B) are float32, W is a constant (not an
// overridable graph input) of rank 3 to 5 and the attributes are well formed; anything
// else stays with the reference kernel (kernels/ref/ref_linalg_conv_transpose.cpp), which
// also reports the errors. W is reordered once into the layout oneDNN prefers; the
// graph's copy is kept (owns_input stays false) because shapes oneDNN does not take run
// the reference kernel on it.
//
// Geometry per run (the reference kernel's rules, shared through conv_transpose_pads):
// output size and begin padding per spatial dim from pads / output_padding /
// output_shape / auto_pad; oneDNN wants
//   dst = (src - 1) * stride + (k - 1) * dilation + 1 - pad_l - pad_r
// so output_padding and output_shape become a smaller (possibly negative) pad_r. A shape
// oneDNN rejects (negative padding its kernels do not take, an empty tensor) or for which
// it offers only its own reference loop runs the reference kernel.
//
// Layouts: src and dst stay plain NCHW (oneDNN's gemm-based deconvolution reads them as
// they are); primitives are created per input shape and thread count and cached.
#include <algorithm>

#include "kernels/cpu/dnnl_common.h"
#include "kernels/cpu/dnnl_conv.h"

namespace octet::dnnl_cpu {

namespace {

using dims = dnnl::memory::dims;

struct DeconvSpec {
  int64_t spatial = 0, group = 1, channels = 0, group_filters = 0;  // W is [C, M/group, k...]
  std::vector<int64_t> kernel, strides, dilations, pads, output_padding, output_shape;
  std::string auto_pad;
  bool has_bias = false;
};

struct DeconvProblem {
  dims src, dst, bias, strides, dilates, pad_l, pad_r;
};

struct Entry {
  dnnl::deconvolution_forward primitive;
  dnnl::memory::desc scratchpad;
  bool uses_packed = false;
  bool usable = false;
  std::string impl;
};

int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

// oneDNN's view of W: [M, C, k...], or [G, M/G, C/G, k...]; ONNX stores [C, M/G, k...],
// i.e. per group [C/G, M/G, k...], so the strides swap the two channel axes.
dnnl::memory::desc plain_weights(const DeconvSpec& s) {
  const int64_t cg = s.channels / s.group, mg = s.group_filters;
  int64_t taps = 1;
  for (int64_t k : s.kernel) taps *= k;
  dims d, strides;
  if (s.group > 1) {
    d = {s.group, mg, cg};
    strides = {cg * mg * taps, taps, mg * taps};
  } else {
    d = {mg, cg};
    strides = {taps, mg * taps};
  }
  int64_t inner = taps;
  for (int64_t k : s.kernel) {
    d.push_back(k);
    inner /= k;
    strides.push_back(inner);
  }
  return f32_desc(d, strides);
}

dnnl::memory::desc any_weights(const DeconvSpec& s) {
  dims d = s.group > 1 ? dims{s.group, s.group_filters, s.channels / s.group} : dims{s.group_filters, s.channels};
  d.insert(d.end(), s.kernel.begin(), s.kernel.end());
  return dnnl::memory::desc(d, dnnl::memory::data_type::f32, dnnl::memory::format_tag::any);
}

std::optional<DeconvProblem> problem(const DeconvSpec& s, const std::vector<int64_t>& x) {
  const int64_t n = s.spatial;
  if (static_cast<int64_t>(x.size()) != n + 2 || x[0] < 1 || x[1] != s.channels) return std::nullopt;
  DeconvProblem p;
  p.src = dims(x.begin(), x.end());
  p.dst = {x[0], s.group_filters * s.group};
  if (s.has_bias) p.bias = {s.group_filters * s.group};
  const bool same = s.auto_pad == "SAME_UPPER" || s.auto_pad == "SAME_LOWER";
  for (int64_t i = 0; i < n; ++i) {
    if (x[2 + i] < 1) return std::nullopt;
    const int64_t extent = (s.kernel[i] - 1) * s.dilations[i] + 1;
    const int64_t natural = s.strides[i] * (x[2 + i] - 1) + s.output_padding[i] + extent;
    int64_t out = 0, begin = 0;
    if (!s.output_shape.empty() || same) {
      out = !s.output_shape.empty() ? s.output_shape[s.output_shape.size() - n + i] : x[2 + i] * s.strides[i];
      const int64_t total = natural - out;
      begin = s.auto_pad == "SAME_UPPER" ? floor_half(total) : total - floor_half(total);
    } else if (s.auto_pad == "VALID") {
      out = natural;
    } else {
      begin = s.pads[i];
      out = natural - s.pads[i] - s.pads[n + i];
    }
    if (out < 1) return std::nullopt;
    p.dst.push_back(out);
    p.strides.push_back(s.strides[i]);
    p.dilates.push_back(s.dilations[i] - 1);
    p.pad_l.push_back(begin);
    p.pad_r.push_back(natural - s.output_padding[i] - out - begin);  // from oneDNN's size rule above
  }
  return p;
}

dnnl::deconvolution_forward::desc deconv_desc(const DeconvProblem& p, const dnnl::memory::desc& wei) {
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto algo = dnnl::algorithm::deconvolution_direct;
  if (p.bias.empty())
    return {prop, algo, f32_desc(p.src), wei, f32_desc(p.dst), p.strides, p.dilates, p.pad_l, p.pad_r};
  return {prop, algo, f32_desc(p.src), wei, f32_desc(p.bias), f32_desc(p.dst), p.strides, p.dilates, p.pad_l, p.pad_r};
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

class DeconvState : public KernelState {
 public:
  DeconvState(const Node& node, DeconvSpec spec) : spec_(std::move(spec)), plain_(plain_weights(spec_)) {
    // Pack W for the node's static input shape, or a 32-wide stand-in: oneDNN's float32
    // weight layouts depend on the channel counts, not the image size.
    std::vector<int64_t> x = {1, spec_.channels};
    const Value* in = node.input(0);
    for (int64_t i = 0; i < spec_.spatial; ++i) {
      const Dim* d = in->type.rank() == spec_.spatial + 2 ? &(*in->type.dims)[2 + i] : nullptr;
      x.push_back(d && d->is_constant() && d->value() > 0 ? d->value() : 32);
    }
    const std::optional<DeconvProblem> p = problem(spec_, x);
    if (!p) return;
    dnnl::deconvolution_forward::primitive_desc pd(deconv_desc(*p, any_weights(spec_)), user_scratchpad(), engine(),
                                                   /*allow_empty=*/true);
    if (!pd || is_reference_impl(pd) || pd.weights_desc() == plain_) return;
    dnnl::memory packed(pd.weights_desc(), engine());
    dnnl::memory source = wrap(plain_, node.input(1)->constant()->raw());
    dnnl::stream stream(engine());
    dnnl::reorder(source, packed).execute(stream, source, packed);
    stream.wait();
    packed_ = std::move(packed);
  }

  const DeconvSpec& spec() const { return spec_; }
  int64_t reference_runs() const { return reference_runs_.load(); }
  void count_reference_run() const { ++reference_runs_; }
  std::vector<std::string> implementations() const {
    std::vector<std::string> out;
    cache_.for_each([&](const Entry& e) { out.push_back(e.usable ? e.impl : "octet reference"); });
    return out;
  }

  std::shared_ptr<const Entry> primitive_for(const DeconvProblem& p, int threads) const {
    std::vector<int64_t> key{threads};
    key.insert(key.end(), p.src.begin(), p.src.end());
    auto entry = cache_.get(std::move(key), [&] {
      auto e = std::make_shared<Entry>();
      std::vector<std::pair<dnnl::memory::desc, bool>> weights;
      if (packed_) weights.emplace_back(packed_->get_desc(), true);
      weights.emplace_back(plain_, false);
      for (const auto& [wei, is_packed] : weights) {
        try {
          dnnl::deconvolution_forward::primitive_desc pd(deconv_desc(p, wei), user_scratchpad(), engine(),
                                                         /*allow_empty=*/true);
          if (!pd || is_reference_impl(pd)) continue;
          e->primitive = dnnl::deconvolution_forward(pd);
          e->scratchpad = pd.scratchpad_desc();
          e->uses_packed = is_packed;
          e->impl = impl_name(pd);
          e->usable = true;
          break;
        } catch (const dnnl::error&) {
          // Geometry oneDNN rejects (negative padding some kernels refuse): next, then reference.
        }
      }
      return std::shared_ptr<const Entry>(e);
    });
    return entry->usable ? entry : nullptr;
  }

  void execute(const KernelContext& ctx, const DeconvProblem& p, const Entry& e, Tensor& out) const {
    std::unordered_map<int, dnnl::memory> args;
    args[DNNL_ARG_SRC] = wrap(f32_desc(p.src), ctx.input(0).raw());
    args[DNNL_ARG_WEIGHTS] = e.uses_packed ? wrap(packed_->get_desc(), packed_->get_data_handle())
                                    : wrap(plain_, ctx.input(1).raw());
    if (!p.bias.empty()) args[DNNL_ARG_BIAS] = wrap(f32_desc(p.bias), ctx.input(2).raw());
    args[DNNL_ARG_DST] = wrap(f32_desc(p.dst), out.mutable_raw());
    try {
      run_primitive(e.primitive, e.scratchpad, args);
    } catch (const dnnl::error& err) {
      ctx.fail("oneDNN deconvolution failed: ", err.what());
    }
  }

 private:
  DeconvSpec spec_;
  dnnl::memory::desc plain_;
  std::optional<dnnl::memory> packed_;
  PrimitiveCache<Entry> cache_;
  mutable std::atomic<int64_t> reference_runs_{0};
};

void conv_transpose_kernel(KernelContext& ctx) {
  const auto& state = ctx.state_as<DeconvState>();
  const DeconvSpec& s = state.spec();
  const Tensor& x = ctx.input(0);
  const Tensor* b = ctx.optional_input(2);
  std::optional<DeconvProblem> p;
  if (x.dtype() == DType::Float32 && ctx.input(1).dtype() == DType::Float32 && (b != nullptr) == s.has_bias &&
      (!b || (b->dtype() == DType::Float32 && b->rank() == 1 && b->shape()[0] == s.group_filters * s.group)))
    p = problem(s, x.shape());
  std::shared_ptr<const Entry> entry = p ? state.primitive_for(*p, ctx.threads()) : nullptr;
  if (!entry) {
    state.count_reference_run();
    return run_reference_kernel(ctx);
  }
  Tensor& out = ctx.allocate_output_uninitialized(0, DType::Float32, std::vector<int64_t>(p->dst.begin(), p->dst.end()));
  state.execute(ctx, *p, *entry, out);
}

bool prepare_conv_transpose(const Node& node, std::unique_ptr<KernelState>& state) {
  const Value* x = node.input(0);
  const Value* w = node.input(1);
  const Value* b = node.input(2);
  auto f32 = [](const Value* v) { return v && v->type.dtype == DType::Float32; };
  if (!f32(x) || !f32(w) || (b && !f32(b))) return false;
  if (!w->constant() || w->is_graph_input()) return false;
  const Tensor& wt = *w->constant();
  if (wt.rank() < 3 || wt.rank() > 5 || wt.numel() == 0) return false;
  if (x->type.has_rank() && x->type.rank() != wt.rank()) return false;
  DeconvSpec s;
  s.spatial = wt.rank() - 2;
  s.group = node.attr_int("group", 1);
  s.channels = wt.shape()[0];
  s.group_filters = wt.shape()[1];
  if (s.group < 1 || s.channels % s.group != 0) return false;
  s.kernel.assign(wt.shape().begin() + 2, wt.shape().end());
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != s.kernel) return false;
  const size_t n = static_cast<size_t>(s.spatial);
  auto strides = conv_attr_ints(node, "strides", n, 1, 1), dilations = conv_attr_ints(node, "dilations", n, 1, 1);
  auto pads = conv_attr_ints(node, "pads", 2 * n, 0, 0), output_padding = conv_attr_ints(node, "output_padding", n, 0, 0);
  if (!strides || !dilations || !pads || !output_padding) return false;
  for (size_t i = 0; i < n; ++i)
    if ((*output_padding)[i] >= std::max((*strides)[i], (*dilations)[i])) return false;
  s.strides = *strides;
  s.dilations = *dilations;
  s.pads = *pads;
  s.output_padding = *output_padding;
  s.output_shape = node.attr_ints("output_shape");
  if (!s.output_shape.empty() && s.output_shape.size() < n) return false;
  s.auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (s.auto_pad != "NOTSET" && s.auto_pad != "VALID" && s.auto_pad != "SAME_UPPER" && s.auto_pad != "SAME_LOWER")
    return false;
  s.has_bias = b != nullptr;
  try {
    state = std::make_unique<DeconvState>(node, std::move(s));
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

}  // namespace

int64_t conv_transpose_reference_runs(const KernelState& state) {
  return static_cast<const DeconvState&>(state).reference_runs();
}
std::vector<std::string> conv_transpose_implementations(const KernelState& state) {
  return static_cast<const DeconvState&>(state).implementations();
}

void register_conv_transpose(KernelRegistry& r) {
  r.add("", "ConvTranspose", KernelDef{conv_transpose_kernel, prepare_conv_transpose});
}

}  // namespace octet::dnnl_cpu
