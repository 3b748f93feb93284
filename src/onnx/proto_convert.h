// Internal pieces shared by import and export: protobuf file I/O and conversions between
// onnx protos and IR objects. Errors carry `context` ("initializer 'w'"); import adds the
// file name in front.
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "ir/graph.h"
#include "ir/types.h"
#include "onnx/external_data.h"

namespace google::protobuf {
class Message;
}
namespace onnx {
class AttributeProto;
class SparseTensorProto;
class TensorProto;
class TypeProto;
}  // namespace onnx

namespace octet::onnx_io {

// protobuf refuses messages of 2 GiB and more; anything bigger needs external data.
constexpr uint64_t kMaxProtoBytes = 2147483647ull;

// Names in messages come from the file and may hold newlines or escape sequences; every
// message octet shows must stay one printable line.
std::string one_line(const std::string& message);

// Parses a whole file into `message`. `what` names the expected content in errors
// ("ONNX model"). Errors start with the path.
void read_proto_file(const std::filesystem::path& path, google::protobuf::Message& message,
                     const std::string& what);
// Serializes to a temporary file and renames it over `path`; `before_rename` runs once
// the file is written (to commit side files only when the model itself was written).
void write_proto_file(const std::filesystem::path& path, const google::protobuf::Message& message,
                      const std::function<void()>& before_rename = {});

// `steal` lets the tensor take over the proto's raw_data string instead of copying it
// (the result then borrows read-only memory), which halves peak memory on import.
Tensor tensor_from_proto(onnx::TensorProto& proto, TensorSource& source, const std::string& context,
                         bool steal);
Tensor tensor_from_proto(const onnx::TensorProto& proto, TensorSource& source, const std::string& context);
// Dense tensor from a SparseTensorProto (indices either [nnz] linear or [nnz, rank]).
Tensor sparse_to_dense(const onnx::SparseTensorProto& proto, TensorSource& source, const std::string& context);

// A TensorType from a TypeProto. nullopt with `*why` set for what the IR cannot hold
// (sequence, map, optional, sparse types; unknown element types). Unknown and anonymous
// dims become fresh symbols, one per occurrence.
std::optional<TensorType> type_from_proto(const onnx::TypeProto& proto, std::string* why);
void type_to_proto(const TensorType& type, onnx::TypeProto* proto);

Attribute attribute_from_proto(const onnx::AttributeProto& proto, TensorSource& source,
                               const std::string& context);
void attribute_to_proto(const Attribute& attr, onnx::AttributeProto* proto);

}  // namespace octet::onnx_io
