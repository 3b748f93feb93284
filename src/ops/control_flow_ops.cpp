// Control flow: If.
//
// The branches are kept verbatim on import (Attribute::opaque_proto); the outputs are typed
// from what the branches declare: the element type both declare, and the rank where both
// agree, with fresh dims, since which branch runs (and so each dim) is only known at run
// time. optimum's merged decoders are the case: one If on use_cache_branch whose two
// branches give present.* of different lengths.
#include <onnx/onnx_pb.h>

#include "onnx/proto_convert.h"
#include "ops/op_registry.h"
#include "ops/shape_helpers.h"

namespace octet {
namespace {

const onnx::GraphProto& branch(InferContext& ctx, const char* name, onnx::AttributeProto& holder) {
  const Attribute* a = ctx.node().find_attr(name);
  if (!a) ctx.fail("has no '", name, "' attribute");
  if (a->kind != Attribute::Kind::Graph || !holder.ParseFromString(a->opaque_proto) || !holder.has_g())
    ctx.fail("attribute '", name, "' is not a graph");
  return holder.g();
}

void infer_if(InferContext& ctx) {
  const TensorType& cond = ctx.input_type(0);
  if (cond.known() && cond.dtype != DType::Bool) ctx.fail("cond is ", cond.to_string(), "; it must be bool");
  onnx::AttributeProto then_holder, else_holder;
  const onnx::GraphProto& then_g = branch(ctx, "then_branch", then_holder);
  const onnx::GraphProto& else_g = branch(ctx, "else_branch", else_holder);
  const size_t n = ctx.num_outputs();
  if (static_cast<size_t>(then_g.output_size()) != n || static_cast<size_t>(else_g.output_size()) != n)
    ctx.fail("has ", n, " outputs but then_branch gives ", then_g.output_size(), " and else_branch ",
             else_g.output_size());
  for (size_t i = 0; i < n; ++i) {
    std::string why;
    auto t = onnx_io::type_from_proto(then_g.output(static_cast<int>(i)).type(), &why);
    auto e = onnx_io::type_from_proto(else_g.output(static_cast<int>(i)).type(), &why);
    DType dtype = t ? t->dtype : DType::Undefined;
    if (t && e && t->known() && e->known() && t->dtype != e->dtype)
      ctx.fail("output ", i, ": then_branch gives ", t->to_string(), " but else_branch ", e->to_string());
    if (dtype == DType::Undefined && e) dtype = e->dtype;
    std::optional<DimVector> dims;
    if (t && e && t->dims && e->dims && t->dims->size() == e->dims->size()) {
      dims = shape_rules::fresh_dims(t->dims->size(), "if");
      for (size_t d = 0; d < dims->size(); ++d)  // a size both branches fix stays known
        if ((*t->dims)[d].constant() && (*t->dims)[d] == (*e->dims)[d]) (*dims)[d] = (*t->dims)[d];
    }
    if (dtype != DType::Undefined) ctx.set_output(i, dtype, std::move(dims));
  }
}

}  // namespace

void register_control_flow_ops(OpRegistry& r) { r.add(OpDef{"", "If", infer_if}); }

}  // namespace octet
