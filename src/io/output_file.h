// The one way octet writes a file: every model, external data file, .npy/.npz output and
// report a command creates or replaces goes through ReplacingFile.
//
// Two rules live here so that no writer can forget them:
// - Only a regular file, or a path where nothing exists, is ever replaced. A device node
//   (`-o /dev/null` as root once turned /dev/null into a regular file), a FIFO, a
//   symbolic link (which rename would replace rather than follow) or a folder given as
//   an output is refused with a message saying what it is, --force or not.
// - The bytes go to a temporary file next to the target, renamed over it only once
//   complete: a failed or interrupted write leaves the old file (or nothing) behind, and
//   a model can be saved over the file its weights are memory-mapped from.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace octet {

// Fails with "<path>: is a FIFO, not a regular file; ..." unless nothing exists at `path`
// or it is a regular file. Symbolic links are judged as links, not followed.
void check_replaceable(const std::filesystem::path& path);

// A file being written: stream() fills a temporary file, commit() checks the target again
// and renames the temporary over it. Destroyed uncommitted, it removes the temporary.
class ReplacingFile {
 public:
  explicit ReplacingFile(std::filesystem::path path);
  ~ReplacingFile();
  ReplacingFile(const ReplacingFile&) = delete;
  ReplacingFile& operator=(const ReplacingFile&) = delete;

  std::ofstream& stream() { return out_; }
  const std::filesystem::path& path() const { return path_; }
  const std::filesystem::path& temp_path() const { return temp_; }
  // Flushes, checks the stream and the target, renames. Errors name the path.
  void commit();

 private:
  std::filesystem::path path_, temp_;
  std::ofstream out_;
  bool committed_ = false;
};

// `bytes` into `path` through a ReplacingFile.
void write_file_replacing(const std::filesystem::path& path, std::string_view bytes);

}  // namespace octet
