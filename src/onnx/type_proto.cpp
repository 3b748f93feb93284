// TypeProto <-> TensorType.
//
// A dim the file leaves unknown (no value, no name, or a tool-made name like unk__3) is
// a fresh symbol per occurrence: two dims that the exporter happened to call unk__3 are
// not known to be equal, and treating them as equal would let shape inference "prove"
// things that are false.
#include <onnx/onnx_pb.h>

#include "onnx/proto_convert.h"

namespace octet::onnx_io {

std::optional<TensorType> type_from_proto(const onnx::TypeProto& proto, std::string* why) {
  switch (proto.value_case()) {
    case onnx::TypeProto::kTensorType: break;
    case onnx::TypeProto::kSequenceType: *why = "a sequence type"; return std::nullopt;
    case onnx::TypeProto::kMapType: *why = "a map type"; return std::nullopt;
    case onnx::TypeProto::kOptionalType: *why = "an optional type"; return std::nullopt;
    case onnx::TypeProto::kSparseTensorType: *why = "a sparse tensor type"; return std::nullopt;
    default: *why = "no type, or a type octet does not know"; return std::nullopt;
  }
  const auto& tt = proto.tensor_type();
  if (tt.elem_type() == 0) {
    *why = "no element type";
    return std::nullopt;
  }
  auto dtype = dtype_from_onnx(tt.elem_type());
  if (!dtype) {
    *why = "unknown elem_type " + std::to_string(tt.elem_type()) +
           " (octet does not implement ONNX's float6e2m3, float6e3m2 or newer types)";
    return std::nullopt;
  }
  if (!tt.has_shape()) return TensorType(*dtype, std::nullopt);
  DimVector dims;
  dims.reserve(tt.shape().dim_size());
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0)
      dims.push_back(Dim(d.dim_value()));  // some exporters write -1 for unknown: fresh below
    else if (d.has_dim_param() && !Dim::is_anonymous_name(d.dim_param()))
      dims.push_back(Dim::symbol(d.dim_param()));
    else
      dims.push_back(Dim::fresh());
  }
  return TensorType(*dtype, std::move(dims));
}

void type_to_proto(const TensorType& type, onnx::TypeProto* proto) {
  auto* tt = proto->mutable_tensor_type();
  tt->set_elem_type(dtype_to_onnx(type.dtype));
  if (!type.dims) return;  // rank unknown: no shape field at all
  auto* shape = tt->mutable_shape();
  for (const Dim& d : *type.dims) {
    auto* out = shape->add_dim();
    auto c = d.constant();
    if (c && *c >= 0) out->set_dim_value(*c);
    else out->set_dim_param(d.to_string());
  }
}

}  // namespace octet::onnx_io
