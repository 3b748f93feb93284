#include "ops/op_registry.h"

#include "ops/op_families.h"

namespace octet {

// If (control_flow_ops.cpp). Declared here rather than in op_families.h so that adding it
// did not rebuild every op family on the shared 2-core machine; move it there freely.
void register_control_flow_ops(OpRegistry& r);

namespace {
// Small integer tensors whose contents are worth tracking symbolically (shape math).
constexpr int64_t kMaxTrackedElements = 64;
}  // namespace

const TensorType& InferContext::input_type(size_t i) const {
  const Value* v = node_.input(i);
  if (!v) fail("required input ", i, " is missing");
  return v->type;
}

const Tensor* InferContext::input_constant(size_t i) const {
  const Value* v = node_.input(i);
  return v && v->constant() ? v->constant().get() : nullptr;
}

std::optional<DimVector> InferContext::input_values(size_t i) const {
  const Value* v = node_.input(i);
  if (!v) return std::nullopt;
  if (v->known_values) return v->known_values;
  const Tensor* t = v->constant().get();
  if (!t || t->rank() > 1 || t->numel() > kMaxTrackedElements) return std::nullopt;
  if (!dtype_is_integer(t->dtype()) && t->dtype() != DType::Bool) return std::nullopt;
  if (dtype_bits(t->dtype()) < 8) return std::nullopt;
  auto ints = t->to_int64_vector();
  return DimVector(ints.begin(), ints.end());
}

std::optional<std::vector<int64_t>> InferContext::input_ints(size_t i) const {
  auto values = input_values(i);
  if (!values) return std::nullopt;
  std::vector<int64_t> out;
  for (const Dim& d : *values) {
    auto c = d.constant();
    if (!c) return std::nullopt;
    out.push_back(*c);
  }
  return out;
}

void InferContext::set_output(size_t i, TensorType type) {
  Value* v = node_.output(i);
  if (v) v->type = std::move(type);
}

void InferContext::set_output_values(size_t i, DimVector values) {
  Value* v = node_.output(i);
  if (v && static_cast<int64_t>(values.size()) <= kMaxTrackedElements)
    v->known_values = std::move(values);
}

void InferContext::warn(const std::string& message) const {
  if (warnings_) warnings_->push_back(node_.describe() + ": " + message);
}

int64_t onnx_opset(const InferContext& ctx) {
  int64_t v = ctx.opset();
  return v > 0 ? v : kNewestOnnxOpset;
}

int64_t normalize_axis(const InferContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) ctx.fail("axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const InferContext& ctx, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    int64_t n = normalize_axis(ctx, a, rank);
    for (int64_t prev : out)
      if (prev == n) {
        std::string list;
        for (int64_t x : axes) list.append(list.empty() ? "" : ",").append(std::to_string(x));
        ctx.fail("axis ", a, " is repeated in [", list, "]");
      }
    out.push_back(n);
  }
  return out;
}

void OpRegistry::add(OpDef def) {
  auto key = std::make_pair(def.domain, def.op_type);
  // Two families claiming one op would make the winner depend on registration order.
  OCTET_ASSERT(!ops_.count(key), "op ", def.domain, "::", def.op_type, " registered twice");
  ops_[key] = std::move(def);
}

const OpDef* OpRegistry::find(const std::string& domain, const std::string& op_type) const {
  const std::string d = domain == "ai.onnx" ? "" : domain;
  auto it = ops_.find({d, op_type});
  return it == ops_.end() ? nullptr : &it->second;
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& [key, def] : ops_) out.push_back(&def);
  return out;
}

const OpRegistry& OpRegistry::global() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_elementwise_ops(r);
    register_reduce_norm_ops(r);
    register_shape_ops(r);
    register_linalg_ops(r);
    register_quant_ops(r);
    register_vision_ops(r);
    register_octet_ops(r);
    register_control_flow_ops(r);
    return r;
  }();
  return registry;
}

}  // namespace octet
