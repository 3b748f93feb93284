// External tensor data: where it may live, how it is mapped, how it is written.
//
// A model's weights may sit in side files named by a relative `location`. The location
// comes from an untrusted file, so it must never reach outside the model's folder (an
// absolute path, `..`, or a symlink that resolves elsewhere); otherwise loading a model
// could read any file the user can read.
#pragma once

#include "io/output_file.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "core/tensor.h"

namespace onnx {
class TensorProto;
}

namespace octet::onnx_io {

// A read-only mapping of a whole file, kept alive by every tensor that borrows from it.
class MappedFile {
 public:
  // Throws octet::Error (prefixed with `context`) when the file cannot be mapped.
  MappedFile(const std::filesystem::path& path, const std::string& context);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Resolves `location` against `base_dir` and checks that it stays inside it, following
// symlinks. Returns the canonical path of an existing regular file.
std::filesystem::path resolve_external_location(const std::filesystem::path& base_dir,
                                                const std::string& location,
                                                const std::string& context);

// Everything that reads tensors of one file shares one of these, so each side file is
// mapped once however many tensors point into it.
class TensorSource {
 public:
  explicit TensorSource(std::filesystem::path base_dir);
  const std::filesystem::path& base_dir() const { return base_dir_; }
  // The bytes of a tensor stored externally. `expected` is what dtype and shape need;
  // `desc` is "float32[64,64]" for messages. Borrowed from the mapping when suitably
  // aligned for the element type, copied otherwise.
  std::shared_ptr<Buffer> external_bytes(const onnx::TensorProto& proto, size_t expected,
                                         size_t element_align, const std::string& context,
                                         const std::string& desc);
  // True when any tensor borrowed memory from a mapping (for tests).
  size_t mapped_file_count() const { return files_.size(); }

 private:
  std::filesystem::path base_dir_;
  std::map<std::string, std::shared_ptr<const MappedFile>> files_;
};

// Appends tensors to one side file. Writes go through a ReplacingFile (a temporary file
// that commit() renames into place), so a model may be saved over the very file its
// weights are mapped from, and only a regular file is ever replaced.
class ExternalDataWriter {
 public:
  ExternalDataWriter(std::filesystem::path final_path, const std::string& context);
  ~ExternalDataWriter();  // removes the temporary file unless committed
  // Returns the offset the bytes were written at.
  uint64_t append(const uint8_t* data, size_t bytes);
  void commit();
  const std::filesystem::path& path() const { return final_path_; }
  bool empty() const { return offset_ == 0; }

 private:
  std::filesystem::path final_path_;
  std::string context_;
  ReplacingFile file_;
  uint64_t offset_ = 0;
};

}  // namespace octet::onnx_io
