#include "io/output_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "octet/error.h"

namespace octet {

namespace fs = std::filesystem;

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

void check_replaceable(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    fail(path.string(), ": cannot check the output path: ", std::strerror(errno));
  }
  if (S_ISREG(st.st_mode)) return;
  fail(path.string(), ": is ", kind_of(st.st_mode), "; octet only writes to a new path or replaces a regular file, "
       "--force or not (give the path of a file to create)");
}

ReplacingFile::ReplacingFile(fs::path path) : path_(std::move(path)) {
  check_replaceable(path_);
  temp_ = path_;
  temp_ += ".tmp-octet." + std::to_string(::getpid());
  // A leftover of an interrupted run, or anything else planted there: never write through it.
  struct stat st {};
  if (::lstat(temp_.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
      fail(path_.string(), ": the temporary path ", temp_.string(), " is in the way (", kind_of(st.st_mode), ")");
    std::error_code ec;
    fs::remove(temp_, ec);
  }
  out_.open(temp_, std::ios::binary | std::ios::trunc);
  if (!out_) fail(path_.string(), ": cannot write '", temp_.string(), "': ", std::strerror(errno));
}

ReplacingFile::~ReplacingFile() {
  if (committed_) return;
  out_.close();
  std::error_code ec;
  fs::remove(temp_, ec);
}

void ReplacingFile::commit() {
  out_.flush();
  out_.close();
  if (!out_) fail(path_.string(), ": writing failed (disk full?)");
  // The target may have changed while we wrote (another program, a slow quantize).
  check_replaceable(path_);
  std::error_code ec;
  fs::rename(temp_, path_, ec);
  if (ec) fail(path_.string(), ": cannot replace the file: ", ec.message());
  committed_ = true;
}

void write_file_replacing(const fs::path& path, std::string_view bytes) {
  ReplacingFile file(path);
  file.stream().write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.commit();
}

}  // namespace octet
