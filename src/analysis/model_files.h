// The files a model consists of on disk: the .onnx file and the external data files its
// tensors point to. `octet bench` reports their total size (a model with its weights in
// side files is not 1 KB), and `octet optimize` refuses to write over any of them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace octet {

struct ModelFiles {
  std::filesystem::path model;
  std::vector<std::filesystem::path> external;  // canonical paths, each once
  uint64_t bytes = 0;                           // the model file plus every external file

  std::vector<std::filesystem::path> all() const;
};

// Reads the ModelProto of `path` (without mapping any external data) and collects the
// external data locations of the main graph's initializers, sparse initializers and
// Constant nodes. Throws octet::Error, naming the file, when it cannot be read or a
// location escapes the model's folder.
ModelFiles model_files(const std::filesystem::path& path);

}  // namespace octet
