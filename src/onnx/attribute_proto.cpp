// AttributeProto <-> Attribute.
//
// Scalars, lists and tensors become IR attributes that op rules can read. Subgraphs,
// sparse tensors, type protos and attribute references are kept as the serialized
// AttributeProto and written back byte for byte: octet does not rewrite inside them, and
// re-encoding them would risk losing fields newer than our onnx.proto.
#include <onnx/onnx_pb.h>

#include "onnx/model_io.h"
#include "onnx/proto_convert.h"

namespace octet::onnx_io {

namespace {
using Kind = Attribute::Kind;

// Old files (IR < 3) leave `type` unset; the field that is present tells the kind.
Kind kind_of(const onnx::AttributeProto& a) {
  switch (a.type()) {
    case onnx::AttributeProto::FLOAT: return Kind::Float;
    case onnx::AttributeProto::INT: return Kind::Int;
    case onnx::AttributeProto::STRING: return Kind::String;
    case onnx::AttributeProto::TENSOR: return Kind::Tensor;
    case onnx::AttributeProto::GRAPH: return Kind::Graph;
    case onnx::AttributeProto::SPARSE_TENSOR: return Kind::SparseTensor;
    case onnx::AttributeProto::TYPE_PROTO: return Kind::TypeProto;
    case onnx::AttributeProto::FLOATS: return Kind::Floats;
    case onnx::AttributeProto::INTS: return Kind::Ints;
    case onnx::AttributeProto::STRINGS: return Kind::Strings;
    case onnx::AttributeProto::TENSORS: return Kind::Tensors;
    case onnx::AttributeProto::GRAPHS: return Kind::Graphs;
    case onnx::AttributeProto::SPARSE_TENSORS: return Kind::SparseTensors;
    case onnx::AttributeProto::TYPE_PROTOS: return Kind::TypeProtos;
    default: break;
  }
  if (a.has_f()) return Kind::Float;
  if (a.has_i()) return Kind::Int;
  if (a.has_s()) return Kind::String;
  if (a.has_t()) return Kind::Tensor;
  if (a.has_g()) return Kind::Graph;
  if (a.floats_size()) return Kind::Floats;
  if (a.ints_size()) return Kind::Ints;
  if (a.strings_size()) return Kind::Strings;
  if (a.tensors_size()) return Kind::Tensors;
  if (a.graphs_size()) return Kind::Graphs;
  return Kind::Undefined;
}

onnx::AttributeProto::AttributeType proto_type(Kind k) {
  switch (k) {
    case Kind::Float: return onnx::AttributeProto::FLOAT;
    case Kind::Int: return onnx::AttributeProto::INT;
    case Kind::String: return onnx::AttributeProto::STRING;
    case Kind::Tensor: return onnx::AttributeProto::TENSOR;
    case Kind::Floats: return onnx::AttributeProto::FLOATS;
    case Kind::Ints: return onnx::AttributeProto::INTS;
    case Kind::Strings: return onnx::AttributeProto::STRINGS;
    case Kind::Tensors: return onnx::AttributeProto::TENSORS;
    default: return onnx::AttributeProto::UNDEFINED;
  }
}
}  // namespace

Attribute attribute_from_proto(const onnx::AttributeProto& a, TensorSource& source, const std::string& context) {
  Attribute out;
  out.name = a.name();
  out.kind = kind_of(a);
  if (!a.ref_attr_name().empty()) {  // inside functions: the value is the caller's
    a.SerializeToString(&out.opaque_proto);
    return out;
  }
  switch (out.kind) {
    case Kind::Float: out.f = a.f(); break;
    case Kind::Int: out.i = a.i(); break;
    case Kind::String: out.s = a.s(); break;
    case Kind::Floats: out.floats.assign(a.floats().begin(), a.floats().end()); break;
    case Kind::Ints: out.ints.assign(a.ints().begin(), a.ints().end()); break;
    case Kind::Strings: out.strings.assign(a.strings().begin(), a.strings().end()); break;
    case Kind::Tensor:
      out.t = std::make_shared<const Tensor>(tensor_from_proto(a.t(), source, context));
      break;
    case Kind::Tensors:
      for (int i = 0; i < a.tensors_size(); ++i)
        out.tensors.push_back(std::make_shared<const Tensor>(
            tensor_from_proto(a.tensors(i), source, context + " tensor " + std::to_string(i))));
      break;
    default:  // graphs, sparse tensors, type protos, kinds newer than our proto
      a.SerializeToString(&out.opaque_proto);
      break;
  }
  return out;
}

void attribute_to_proto(const Attribute& attr, onnx::AttributeProto* proto) {
  if (!attr.opaque_proto.empty()) {
    OCTET_ASSERT(proto->ParseFromString(attr.opaque_proto), "attribute '", attr.name, "' holds a broken proto");
    return;
  }
  proto->set_name(attr.name);
  proto->set_type(proto_type(attr.kind));
  switch (attr.kind) {
    case Kind::Float: proto->set_f(attr.f); break;
    case Kind::Int: proto->set_i(attr.i); break;
    case Kind::String: proto->set_s(attr.s); break;
    case Kind::Floats: for (float v : attr.floats) proto->add_floats(v); break;
    case Kind::Ints: for (int64_t v : attr.ints) proto->add_ints(v); break;
    case Kind::Strings: for (const auto& v : attr.strings) proto->add_strings(v); break;
    case Kind::Tensor:
      OCTET_ASSERT(attr.t, "tensor attribute '", attr.name, "' has no tensor");
      tensor_to_proto(*attr.t, proto->mutable_t());
      break;
    case Kind::Tensors:
      for (const auto& t : attr.tensors) tensor_to_proto(*t, proto->add_tensors());
      break;
    default:
      OCTET_ASSERT(false, "attribute '", attr.name, "' of kind ", attribute_kind_name(attr.kind),
                   " has no serialized form");
  }
}

}  // namespace octet::onnx_io
