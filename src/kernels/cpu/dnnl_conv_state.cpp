// ConvState: W reordered at session creation, primitives created per input shape and
// cached. See dnnl_conv.h for the layout choice.
#include <algorithm>

#include "kernels/cpu/dnnl_common.h"
#include "kernels/cpu/dnnl_conv.h"
#include "kernels/cpu/thread_scratch.h"

namespace octet::dnnl_cpu {
namespace {

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;

// The spatial size W's layout is chosen for when the graph does not know the input's.
// oneDNN's float32 weight layouts depend on the channel counts, not the image size.
constexpr int64_t kPackingExtent = 32;

dnnl::memory::desc any_desc(const dims& d) { return dnnl::memory::desc(d, dnnl::memory::data_type::f32, tag::any); }

// The input shape W is packed for: X's static dims where the graph has them, batch 1 and
// kPackingExtent (at least the kernel's extent) elsewhere.
std::vector<int64_t> packing_shape(const Node& node, const ConvSpec& spec, int64_t channels) {
  std::vector<int64_t> shape = {1, channels};
  for (int64_t i = 0; i < spec.spatial; ++i)
    shape.push_back(std::max(kPackingExtent, (spec.kernel[i] - 1) * spec.dilations[i] + 1));
  const Value* x = node.input(0);
  if (x && x->type.rank() == spec.spatial + 2)
    for (size_t i = 0; i < shape.size(); ++i) {
      const Dim& d = (*x->type.dims)[i];
      if (i != 1 && d.is_constant() && d.value() > 0) shape[i] = d.value();
    }
  return shape;
}

dnnl::convolution_forward::desc conv_desc(const ConvProblem& p, const dnnl::memory::desc& src,
                                          const dnnl::memory::desc& wei, const dnnl::memory::desc& dst) {
  const auto prop = dnnl::prop_kind::forward_inference;
  const auto algo = dnnl::algorithm::convolution_direct;
  if (p.bias.empty()) return {prop, algo, src, wei, dst, p.strides, p.dilates, p.pad_l, p.pad_r};
  return {prop, algo, src, wei, f32_desc(p.bias), dst, p.strides, p.dilates, p.pad_l, p.pad_r};
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// A reorder between two layouts of one tensor, and its scratchpad.
std::pair<dnnl::reorder, dnnl::memory::desc> make_reorder(const dnnl::memory::desc& from,
                                                         const dnnl::memory::desc& to) {
  dnnl::reorder::primitive_desc pd(engine(), from, engine(), to, user_scratchpad());
  return {dnnl::reorder(pd), pd.scratchpad_desc()};
}

}  // namespace

ConvState::ConvState(const Node& node, ConvSpec spec) : spec_(std::move(spec)), wei_dims_(conv_weight_dims(spec_)) {
  const Tensor& w = *node.input(1)->constant();
  const std::optional<ConvProblem> p =
      conv_problem(spec_, packing_shape(node, spec_, spec_.group_channels * spec_.group));
  if (!p) return;
  dnnl::convolution_forward::primitive_desc pd(conv_desc(*p, any_desc(p->src), any_desc(p->wei), any_desc(p->dst)),
                                               user_scratchpad(), engine(), /*allow_empty=*/true);
  if (!pd || is_reference_impl(pd)) return;
  const dnnl::memory::desc plain = f32_desc(wei_dims_);
  const dnnl::memory::desc preferred = pd.weights_desc();
  if (preferred == plain) return;  // the graph's copy is already what oneDNN reads
  dnnl::memory packed(preferred, engine());
  dnnl::memory source = wrap(plain, w.raw());
  dnnl::stream stream(engine());
  dnnl::reorder(source, packed).execute(stream, source, packed);
  stream.wait();
  packed_ = std::move(packed);
}

Tensor ConvState::unpack_w() const {
  OCTET_ASSERT(packed_, "unpack_w without a prepacked W");
  std::vector<int64_t> shape = {spec_.filters, spec_.group_channels};
  shape.insert(shape.end(), spec_.kernel.begin(), spec_.kernel.end());
  Tensor plain = Tensor::uninitialized(DType::Float32, std::move(shape));
  try {
    dnnl::memory to = wrap(f32_desc(wei_dims_), plain.mutable_raw());
    dnnl::memory from = *packed_;
    dnnl::stream stream(engine());
    dnnl::reorder(from, to).execute(stream, from, to);
    stream.wait();
  } catch (const dnnl::error& e) {
    fail("oneDNN could not unpack a prepacked Conv weight: ", e.what());
  }
  return plain;
}

std::shared_ptr<const ConvState::Entry> ConvState::create(const ConvProblem& p) const {
  auto entry = std::make_shared<Entry>();
  const dnnl::memory::desc plain_src = f32_desc(p.src), plain_dst = f32_desc(p.dst);
  std::vector<std::pair<dnnl::memory::desc, bool>> weights;
  if (packed_) weights.emplace_back(packed_->get_desc(), true);
  weights.emplace_back(f32_desc(wei_dims_), false);
  // oneDNN's own src/dst layouts first (its direct kernels, plus two reorders); plain
  // layouts when those have no fast implementation for the shape.
  for (bool own_layouts : {true, false})
    for (const auto& [wei, is_packed] : weights) {
      try {
        const auto src = own_layouts ? any_desc(p.src) : plain_src;
        const auto dst = own_layouts ? any_desc(p.dst) : plain_dst;
        dnnl::convolution_forward::primitive_desc pd(conv_desc(p, src, wei, dst), user_scratchpad(), engine(),
                                                     /*allow_empty=*/true);
        if (!pd || is_reference_impl(pd)) continue;
        entry->primitive = dnnl::convolution_forward(pd);
        entry->scratchpad = pd.scratchpad_desc();
        entry->src = pd.src_desc();
        entry->dst = pd.dst_desc();
        if (entry->src != plain_src) std::tie(entry->src_in, entry->src_in_scratchpad) = make_reorder(plain_src, entry->src);
        if (entry->dst != plain_dst) std::tie(entry->dst_out, entry->dst_out_scratchpad) = make_reorder(entry->dst, plain_dst);
        entry->uses_packed = is_packed;
        entry->impl = impl_name(pd);
        entry->usable = true;
        return entry;
      } catch (const dnnl::error&) {
        // Geometry or layout oneDNN rejects: try the next combination, then give the
        // shape to the reference kernel.
      }
    }
  return entry;
}

std::shared_ptr<const ConvState::Entry> ConvState::primitive_for(const ConvProblem& p, int threads) const {
  // Everything but the input shape is fixed per node, so it and the thread count are the key.
  std::vector<int64_t> key{threads};
  key.insert(key.end(), p.src.begin(), p.src.end());
  auto entry = cache_.get(std::move(key), [&] { return create(p); });
  return entry->usable ? entry : nullptr;
}

std::vector<std::string> ConvState::implementations() const {
  std::vector<std::string> out;
  cache_.for_each([&](const Entry& e) {
    if (!e.usable) out.push_back("octet reference");
    else out.push_back(e.impl + (e.src_in || e.dst_out ? " (src/dst reordered)" : " (plain src/dst)"));
  });
  return out;
}

void ConvState::execute(const KernelContext& ctx, const ConvProblem& p, const Entry& entry, Tensor& out) const {
  const Tensor& x = ctx.input(0);
  // A primitive on plain W reads the graph's copy, or one unpacked for this run when the
  // state owns W (the graph's copy may be gone).
  Tensor unpacked;
  if (!entry.uses_packed && owns_input(1)) unpacked = unpack_w();
  try {
    std::unordered_map<int, dnnl::memory> args;
    dnnl::memory src = wrap(f32_desc(p.src), x.raw());
    if (entry.src_in) {
      // This thread's staging buffers, kept between runs (thread_scratch.h).
      void* staging = cpu::thread_scratch(cpu::Scratch::ConvSrc, entry.src.get_size());
      dnnl::memory staged(entry.src, engine(), staging);
      std::unordered_map<int, dnnl::memory> in{{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, staged}};
      run_primitive(*entry.src_in, entry.src_in_scratchpad, in);
      src = staged;
    }
    dnnl::memory dst = wrap(f32_desc(p.dst), out.mutable_raw());
    dnnl::memory result =
        entry.dst_out ? dnnl::memory(entry.dst, engine(), cpu::thread_scratch(cpu::Scratch::ConvDst, entry.dst.get_size()))
                      : dst;
    args[DNNL_ARG_SRC] = src;
    args[DNNL_ARG_WEIGHTS] = entry.uses_packed ? wrap(packed_->get_desc(), packed_->get_data_handle())
                                                : wrap(f32_desc(wei_dims_), owns_input(1) ? unpacked.raw()
                                                                                          : ctx.input(1).raw());
    args[DNNL_ARG_DST] = result;
    if (!p.bias.empty()) args[DNNL_ARG_BIAS] = wrap(f32_desc(p.bias), ctx.input(2).raw());
    run_primitive(entry.primitive, entry.scratchpad, args);
    if (entry.dst_out) {
      std::unordered_map<int, dnnl::memory> back{{DNNL_ARG_FROM, result}, {DNNL_ARG_TO, dst}};
      run_primitive(*entry.dst_out, entry.dst_out_scratchpad, back);
    }
  } catch (const dnnl::error& e) {
    ctx.fail("oneDNN convolution failed: ", e.what());
  }
}

}  // namespace octet::dnnl_cpu
