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
  // Large constants (weights) are shared with the outer graph, not copied: declared as
  // inputs here and made initializers holding the outer tensors after loading. Small ones
  // (shapes, axes) go in as initializers, so loading infers shapes from their values.
  constexpr size_t kShareBytes = 64 << 10;
  std::vector<std::pair<std::string, std::shared_ptr<const Tensor>>> shared;
  for (const std::string& name : free_names(*g)) {
    const Value* v = outer->find_value(name);
    if (!v) fail(where, ": reads '", name, "', which the enclosing graph does not define");
    if (v->is_initializer() && !v->is_graph_input() && v->constant() && v->constant()->bytes() >= kShareBytes) {
      shared.emplace_back(name, v->constant());
      onnx::ValueInfoProto* in = g->add_input();
      in->set_name(name);
      onnx_io::type_to_proto(TensorType(v->constant()->dtype(), DimVector(v->constant()->shape().begin(),
                                                                          v->constant()->shape().end())),
                             in->mutable_type());
      continue;
    }
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
  Model m = load_model_from_memory(bytes, where);
  for (auto& [name, data] : shared) m.graph->make_initializer(m.graph->value(name), std::move(data));
  return m;
}

}  // namespace octet
