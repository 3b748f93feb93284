#include "kernels/kernel.h"
#include "core/sizes.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/ref/ref_families.h"

namespace octet {

namespace {
thread_local bool packing_enabled = true;
}  // namespace

bool weight_packing_enabled() { return packing_enabled; }
WeightPackingScope::WeightPackingScope(bool enabled) : previous_(packing_enabled) { packing_enabled = enabled; }
WeightPackingScope::~WeightPackingScope() { packing_enabled = previous_; }

// If (ref/ref_control_flow.cpp). Declared here rather than in ref_families.h so that adding
// it did not rebuild every reference family on the shared 2-core machine; move it there freely.
void register_ref_control_flow(KernelRegistry& r);

const Tensor& KernelContext::input(size_t i) const {
  if (!has_input(i)) fail("required input ", i, " is missing");
  return *inputs_[i];
}

Tensor& KernelContext::allocate(size_t i, DType dtype, std::vector<int64_t> shape, bool zero_fill) {
  OCTET_ASSERT(i < outputs_.size(), "output index out of range for ", node_.describe());
  if (!allocator_ || dtype == DType::String) {
    outputs_[i] = zero_fill ? Tensor(dtype, std::move(shape)) : Tensor::uninitialized(dtype, std::move(shape));
    return outputs_[i];
  }
  // The label names the node: built only when the size is refused (this runs for every
  // output of every step).
  auto fast = try_tensor_bytes(dtype, shape);
  const size_t bytes = fast ? static_cast<size_t>(*fast)
                            : checked_tensor_bytes(dtype, shape, node_.describe() + " output " + std::to_string(i));
  outputs_[i] = Tensor(dtype, std::move(shape), allocator_->allocate(i, bytes, zero_fill));
  return outputs_[i];
}

Tensor& KernelContext::allocate_output(size_t i, DType dtype, std::vector<int64_t> shape) {
  return allocate(i, dtype, std::move(shape), true);
}

Tensor& KernelContext::allocate_output_uninitialized(size_t i, DType dtype, std::vector<int64_t> shape) {
  return allocate(i, dtype, std::move(shape), false);
}

void KernelContext::set_output(size_t i, Tensor tensor) {
  OCTET_ASSERT(i < outputs_.size(), "output index out of range for ", node_.describe());
  outputs_[i] = std::move(tensor);
}

void KernelRegistry::add(const std::string& domain, const std::string& op_type, KernelFn fn) {
  add(domain, op_type, KernelDef{fn});
}

void KernelRegistry::add(const std::string& domain, const std::string& op_type, KernelDef def) {
  // Two families claiming one op would make the winner depend on registration order.
  OCTET_ASSERT(!kernels_.count({domain, op_type}), "kernel ", domain, "::", op_type, " registered twice");
  OCTET_ASSERT(def.run, "kernel ", domain, "::", op_type, " registered without a run function");
  kernels_[{domain, op_type}] = def;
}

const KernelDef* KernelRegistry::find_def(const std::string& domain, const std::string& op_type) const {
  auto it = kernels_.find({domain == "ai.onnx" ? "" : domain, op_type});
  return it == kernels_.end() ? nullptr : &it->second;
}

KernelFn KernelRegistry::find(const std::string& domain, const std::string& op_type) const {
  const KernelDef* def = find_def(domain, op_type);
  return def ? def->run : nullptr;
}

std::vector<std::pair<std::string, std::string>> KernelRegistry::ops() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [key, fn] : kernels_) out.push_back(key);
  return out;
}

const KernelRegistry& KernelRegistry::reference() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_ref_elementwise(r);
    register_ref_reduce_norm(r);
    register_ref_shape(r);
    register_ref_linalg(r);
    register_ref_quant(r);
    register_ref_vision(r);
    register_ref_octet(r);
    register_ref_control_flow(r);
    // The reference view ops return their input's memory under a new shape.
    for (const char* op : {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze"})
      r.kernels_.at({"", op}).may_alias_inputs = true;
    return r;
  }();
  return registry;
}

const KernelRegistry& KernelRegistry::optimized() {
  static const KernelRegistry registry = [] {
    KernelRegistry r;
    register_cpu_kernels(r);
    return r;
  }();
  return registry;
}

}  // namespace octet
