// Reading and writing ONNX files.
//
// The IR is the only thing passes see, so import turns the ModelProto into a Graph and
// export rebuilds a ModelProto from the Graph. What the IR has no place for (functions,
// training_info, fields newer than the onnx.proto we compile against) travels in
// Model::preserved_proto and is written back unchanged, so a load/save round trip loses
// nothing a runtime would notice.
//
// Every failure a file can cause throws octet::Error with one line that starts with the
// file's path and says what is wrong with it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "ir/graph.h"
#include "ops/infer.h"

namespace onnx {
class TensorProto;
}

namespace octet {

struct Model {
  std::unique_ptr<Graph> graph;
  int64_t ir_version = 8;
  std::string producer_name, producer_version, domain, doc_string;
  int64_t model_version = 0;
  std::vector<std::pair<std::string, std::string>> metadata;
  // Serialized ModelProto whose graph keeps only what the IR does not model (name aside:
  // quantization_annotation, unknown newer fields); its other top-level fields (functions,
  // training_info, unknown ones) are written back as they were.
  std::string preserved_proto;
  std::filesystem::path source_path;
  // Types the file stored (value_info, graph outputs), by value name. They are hints:
  // inference overrides them and reports disagreement as a warning.
  DeclaredTypes declared;
  std::vector<std::string> warnings;  // from import and inference
};

struct LoadOptions {
  bool infer_types = true;
};
Model load_model(const std::filesystem::path& path, const LoadOptions& options = {});
// The same from a serialized ModelProto in memory; `path` names it in messages, and its
// folder is where external data is looked up.
Model load_model_from_memory(std::string_view bytes, const std::filesystem::path& path,
                             const LoadOptions& options = {});

struct SaveOptions {
  bool external_data = false;        // write initializers >= threshold to one side file
  std::string external_file;         // plain file name; default "<model file name>.data"
  size_t external_threshold = 1024;  // bytes
  bool write_value_info = true;      // write intermediate types as value_info
  // Past this many bytes of initializers, external data is used even if not asked for:
  // protobuf cannot write a message of 2 GiB or more. Tests lower it.
  uint64_t max_inline_bytes = (uint64_t{2} << 30) - (uint64_t{64} << 20);
};
// Returns warnings (e.g. that a model too large for one protobuf went to external data).
std::vector<std::string> save_model(const Model& model, const std::filesystem::path& path,
                                    const SaveOptions& options = {});

// One serialized TensorProto (ONNX test-data input_0.pb files). Its external data, if
// any, is looked up next to the file. The result owns its memory.
Tensor load_tensor_pb(const std::filesystem::path& path);
// `base_dir` resolves external data locations; `context` starts every error message
// ("model.onnx: initializer 'w'"). The result owns its memory.
Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::filesystem::path& base_dir,
                         const std::string& context);
// Writes dtype, dims and data (raw_data, little endian; string_data for strings). The
// name is left to the caller.
void tensor_to_proto(const Tensor& t, onnx::TensorProto* proto);

}  // namespace octet
