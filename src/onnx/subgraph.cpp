#include "onnx/subgraph.h"

#include <onnx/onnx_pb.h>

#include "onnx/proto_convert.h"

namespace octet {

Model load_subgraph(const Node& node, const std::string& attr) {
  const std::string where = node.describe() + " attribute '" + attr + "'";
  const Attribute* a = node.find_attr(attr);
  if (!a) fail(node.describe(), ": has no attribute '", attr, "'");
  onnx::AttributeProto proto;
  if (a->kind != Attribute::Kind::Graph || !proto.ParseFromString(a->opaque_proto) || !proto.has_g())
    fail(where, ": not a graph");

  onnx::ModelProto model;
  model.set_ir_version(8);
  const Graph* outer = node.graph();
  for (const auto& [domain, version] : outer->opset_imports) {
    auto* op = model.add_opset_import();
    op->set_domain(domain);
    op->set_version(version);
  }
  onnx::GraphProto* g = model.mutable_graph();
  *g = proto.g();
  if (g->name().empty()) g->set_name(attr);
  for (const std::string& name : free_names(*g)) {
    const Value* v = outer->find_value(name);
    if (!v) fail(where, ": reads '", name, "', which the enclosing graph does not define");
    if (v->is_initializer() && !v->is_graph_input() && v->constant()) {
      onnx::TensorProto* t = g->add_initializer();
      tensor_to_proto(*v->constant(), t);
      t->set_name(name);
      continue;
    }
    if (!v->type.known()) fail(where, ": reads '", name, "', whose type octet does not know");
    onnx::ValueInfoProto* in = g->add_input();
    in->set_name(name);
    onnx_io::type_to_proto(v->type, in->mutable_type());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) fail(where, ": cannot serialize the subgraph (over 2 GiB?)");
  return load_model_from_memory(bytes, where);
}

}  // namespace octet
