#include "kernels/kernel.h"
#include "kernels/ref/ref_families.h"

namespace octet {

const Tensor& KernelContext::input(size_t i) const {
  if (!has_input(i)) fail("required input ", i, " is missing");
  return *inputs_[i];
}

Tensor& KernelContext::allocate_output(size_t i, DType dtype, std::vector<int64_t> shape) {
  OCTET_ASSERT(i < outputs_.size(), "output index out of range for ", node_.describe());
  outputs_[i] = Tensor(dtype, std::move(shape));
  return outputs_[i];
}

void KernelContext::set_output(size_t i, Tensor tensor) {
  OCTET_ASSERT(i < outputs_.size(), "output index out of range for ", node_.describe());
  outputs_[i] = std::move(tensor);
}

void KernelRegistry::add(const std::string& domain, const std::string& op_type, KernelFn fn) {
  // Two families claiming one op would make the winner depend on registration order.
  OCTET_ASSERT(!kernels_.count({domain, op_type}), "kernel ", domain, "::", op_type, " registered twice");
  kernels_[{domain, op_type}] = fn;
}

KernelFn KernelRegistry::find(const std::string& domain, const std::string& op_type) const {
  auto it = kernels_.find({domain == "ai.onnx" ? "" : domain, op_type});
  return it == kernels_.end() ? nullptr : it->second;
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
    register_ref_octet(r);
    return r;
  }();
  return registry;
}

}  // namespace octet
