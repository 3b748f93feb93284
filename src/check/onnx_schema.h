// ONNX's own type constraints for a node, read from the schema registry of the ONNX
// library octet links (Debian libonnx-dev 1.12, libonnx.so).
//
// Why the library and not a hand-written table: the registry is ONNX's reference
// definition of every op's inputs, outputs and type variables for every opset it knows,
// so the checker cannot drift from the spec and needs no table to maintain. Its limit is
// its age: it knows ai.onnx opsets up to 17. For a node of a newer opset the newest schema
// it has stands in (a `schema_note` says so in every report), and element types ONNX
// added after 1.12 (float8, int4/uint4, float4, 2-bit) are then accepted unchecked
// rather than reported as errors the newer spec does not make. Ops of other domains
// (com.microsoft, octet) have no schema there; their rules live in target_kernels.cpp.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "ir/graph.h"

namespace octet::check {

// One formal input or output: a type variable ("T") or a fixed type ("tensor(int64)").
struct FormalParam {
  std::string name;
  std::string type_str;
  bool optional = false;
  bool variadic = false;
  bool homogeneous = true;  // a variadic parameter whose every value shares the type
};

struct NodeSchema {
  std::string op_type;
  int since_version = 0;           // the schema version that applies to the node
  int64_t node_opset = 0;          // the opset the model imports for the node's domain
  bool newer_than_registry = false;  // node_opset > what the registry knows
  std::vector<FormalParam> inputs, outputs;
  // Allowed element types per type variable (only tensor types octet has a DType for).
  std::map<std::string, std::vector<DType>> allowed;
  std::vector<std::string> attributes;  // every attribute the op defines, sorted
  int max_inputs = 0, max_outputs = 0;  // how many slots a node may fill (variadic: large)

  // The formal parameter a node's input/output slot binds to (variadic last parameter
  // repeats), or nullptr past the end.
  const FormalParam* input_param(size_t slot) const;
  const FormalParam* output_param(size_t slot) const;
  // "Add-14"
  std::string label() const { return op_type + "-" + std::to_string(since_version); }
};

// The schema that applies to `node`, or nullopt when the registry has none for its
// domain/op (custom domains, ops newer than the registry).
std::optional<NodeSchema> find_onnx_schema(const Node& node);

// True when some ai.onnx opset up to the registry's newest defines `op_type`.
bool is_onnx_op(const std::string& op_type);

// The newest ai.onnx opset the linked ONNX library knows (17 for 1.12).
int64_t newest_registry_opset();

// A fixed type string "tensor(float16)" -> DType; nullopt for non-tensor or unknown types.
std::optional<DType> dtype_from_type_str(const std::string& type_str);
// True for element types ONNX added after the linked library's release.
bool dtype_newer_than_registry(DType t);

}  // namespace octet::check
