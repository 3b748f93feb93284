#include "kernels/cpu/dnnl_common.h"

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "core/tensor.h"
#include "kernels/cpu/thread_scratch.h"

namespace octet::dnnl_cpu {
namespace {

// OCTET_ISA without any ScopedIsaLevel: oneDNN's choice is for the whole process, so it
// must not depend on which test happened to hold a scoped level when it was first used.
IsaLevel process_isa() {
  IsaLevel level = detected_isa();
  if (const char* env = std::getenv("OCTET_ISA"))
    if (auto asked = parse_isa(env)) level = std::min(level, *asked);
  return level;
}

dnnl::cpu_isa dnnl_cap(IsaLevel level) {
  switch (level) {
    case IsaLevel::Generic: return dnnl::cpu_isa::sse41;
    case IsaLevel::Avx2: return dnnl::cpu_isa::avx2;
    case IsaLevel::Avx512: return dnnl::cpu_isa::all;
  }
  return dnnl::cpu_isa::all;
}

}  // namespace

IsaLevel engine_isa() {
  static const IsaLevel level = process_isa();
  return level;
}

const dnnl::engine& engine() {
  static const dnnl::engine eng = [] {
    // Refused (status, not an exception) when something already ran a oneDNN kernel in
    // this process; the engine then runs at whatever oneDNN had chosen.
    dnnl::set_max_cpu_isa(dnnl_cap(engine_isa()));
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return eng;
}

void run_primitive(const dnnl::primitive& p, const dnnl::memory::desc& scratchpad_md,
                   std::unordered_map<int, dnnl::memory>& args) {
  const size_t bytes = scratchpad_md.get_size();
  if (bytes > 0) {
    // This thread's buffer, kept between calls: concurrent runs never share it.
    args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(scratchpad_md, engine(), cpu::thread_scratch(cpu::Scratch::DnnlScratchpad, bytes));
  }
  dnnl::stream stream(engine());
  p.execute(stream, args);
  stream.wait();
}

dnnl::memory wrap(const dnnl::memory::desc& md, const void* data) {
  return dnnl::memory(md, engine(), const_cast<void*>(data));
}

dnnl::memory::desc f32_desc(const dnnl::memory::dims& dims, const dnnl::memory::dims& strides) {
  if (!strides.empty()) return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
  dnnl::memory::dims row_major(dims.size());
  dnnl::memory::dim step = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    row_major[i] = step;
    step *= std::max<dnnl::memory::dim>(dims[i], 1);
  }
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, row_major);
}

std::string impl_name(const dnnl::primitive_desc_base& pd) { return pd.impl_info_str(); }

bool is_reference_impl(const dnnl::primitive_desc_base& pd) { return impl_name(pd).rfind("ref", 0) == 0; }

MatMulPrimitive first_usable_matmul(const std::vector<std::pair<dnnl::memory::desc, bool>>& weights,
                                    const std::function<dnnl::matmul::desc(const dnnl::memory::desc&)>& make_desc,
                                    const dnnl::primitive_attr& attr) {
  MatMulPrimitive out;
  for (const auto& [wei, is_packed] : weights) {
    try {
      dnnl::matmul::primitive_desc pd(make_desc(wei), attr, engine(), /*allow_empty=*/true);
      if (!pd || is_reference_impl(pd)) continue;
      out.primitive = dnnl::matmul(pd);
      out.scratchpad = pd.scratchpad_desc();
      out.uses_packed = is_packed;
      out.usable = true;
      out.impl = impl_name(pd);
      break;
    } catch (const dnnl::error&) {
      // A shape, layout or attribute combination oneDNN rejects: try the next layout.
    }
  }
  return out;
}

void run_reference_kernel(KernelContext& ctx, size_t input, const Tensor* replacement) {
  KernelFn fn = KernelRegistry::reference().find(ctx.node().domain(), ctx.node().op_type());
  OCTET_ASSERT(fn, "no reference kernel for ", ctx.node().describe());
  if (!replacement) return fn(ctx);
  const Tensor* given = ctx.optional_input(input);
  ctx.set_input(input, replacement);
  try {
    fn(ctx);
  } catch (...) {
    ctx.set_input(input, given);
    throw;
  }
  ctx.set_input(input, given);
}

}  // namespace octet::dnnl_cpu
