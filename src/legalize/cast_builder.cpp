#include "legalize/cast_builder.h"

#include "octet/error.h"
#include "ops/infer.h"

namespace octet::legalize {

namespace {

bool is_plain_constant(const Value* v) { return v->is_initializer() && !v->is_graph_input() && v->constant(); }

// A float constant as float32 data (exact: every float16/bfloat16 value is a float32).
Tensor to_float32(const Tensor& t) {
  return Tensor::from_vector<float>(t.shape(), t.to_float_vector());
}

}  // namespace

bool reinfer(Node& node) {
  std::vector<TensorType> before;
  for (Value* o : node.outputs()) before.push_back(o ? o->type : TensorType());
  try {
    infer_node(node);
    return true;
  } catch (const Error&) {
    for (size_t i = 0; i < node.outputs().size(); ++i)
      if (Value* o = node.output(i)) o->type = before[i];
    return false;
  }
}

Value* CastBuilder::as_type(Value* v, DType to) {
  if (v->type.dtype == to) return v;
  auto key = std::make_pair(static_cast<const Value*>(v), to);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  GraphPatch patch = make_patch(graph_);
  Value* result = nullptr;
  if (to == DType::Float32 && is_plain_constant(v) && dtype_is_float(v->type.dtype) &&
      dtype_bits(v->type.dtype) <= 32) {
    result = patch.add_initializer(v->name() + "_fp32", to_float32(*v->constant()));
  } else {
    Node* cast = patch.add_node("Cast", {v}, 1, {Attribute::make_int("to", dtype_to_onnx(to))}, "",
                                v->name() + "_to_" + dtype_name(to));
    result = cast->output(0);
  }
  patch.apply();
  cache_[key] = result;
  return result;
}

void CastBuilder::set_input(Node* node, size_t slot, Value* value) {
  GraphPatch patch(graph_);
  patch.set_input(node, slot, value);
  patch.apply();
}

void CastBuilder::restore_output_type(Value* out, DType declared) {
  const TensorType computed = out->type;
  std::vector<Use> readers = out->uses();
  // replace_uses moves only between values of one type: present `out` as what its
  // readers will see (the declared type) while the patch is built and applied.
  out->type.dtype = declared;
  GraphPatch patch = make_patch(graph_);
  Node* cast = patch.add_node("Cast", {out}, 1, {Attribute::make_int("to", dtype_to_onnx(declared))}, "",
                              out->name() + "_as_declared");
  patch.replace_uses(out, cast->output(0));
  patch.set_input(cast, 0, out);  // replace_uses redirected the Cast's own input too
  for (const Use& u : readers)
    if (!u.implicit) patch.set_input(u.node, u.index, out);
  patch.apply();
  out->type = computed;
}

}  // namespace octet::legalize
