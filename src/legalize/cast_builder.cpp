#include "legalize/cast_builder.h"

#include "octet/error.h"
#include "ops/infer.h"

namespace octet::legalize {

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
  // A constant gets a Cast node too, not a converted copy: the file keeps the compact
  // 16-bit weights, and runtimes fold a Cast of a constant once at load (octet's
  // fold_constants, onnxruntime's constant folding).
  GraphPatch patch = make_patch(graph_);
  Node* cast = patch.add_node("Cast", {v}, 1, {Attribute::make_int("to", dtype_to_onnx(to))}, "",
                              v->name() + "_to_" + dtype_name(to));
  Value* result = cast->output(0);
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
