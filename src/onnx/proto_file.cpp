// Reading and writing whole protobuf files, with the checks that turn protobuf's silent
// failures and size limits into messages a user can act on.
#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/message.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>

#include "octet/error.h"
#include "onnx/proto_convert.h"

namespace octet::onnx_io {

namespace fs = std::filesystem;

namespace {
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

// People hand us the wrong file more often than a corrupt one; naming what it looks like
// saves them a guess.
std::string looks_like(int fd) {
  unsigned char head[8] = {};
  ssize_t n = ::pread(fd, head, sizeof head, 0);
  auto starts = [&](const char* magic, size_t len) {
    return n >= static_cast<ssize_t>(len) && std::memcmp(head, magic, len) == 0;
  };
  if (starts("\x89PNG", 4)) return "; the file looks like a PNG image";
  if (starts("\xff\xd8\xff", 3)) return "; the file looks like a JPEG image";
  if (starts("PK\x03\x04", 4)) return "; the file looks like a zip archive (a PyTorch checkpoint?)";
  if (starts("\x1f\x8b", 2)) return "; the file looks gzip-compressed";
  if (starts("\x89HDF", 4)) return "; the file looks like HDF5 (a Keras model?)";
  if (starts("ir_versi", 8) || starts("<\n  ir_v", 8)) return "; the file looks like ONNX text format";
  return "";
}
}  // namespace

std::string one_line(const std::string& message) {
  std::string out;
  out.reserve(message.size());
  for (unsigned char c : message) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      static const char hex[] = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void read_proto_file(const fs::path& path, google::protobuf::Message& message, const std::string& what) {
  const std::string file = path.string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(file, ": cannot open: ", std::strerror(errno));
  FdCloser closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(file, ": cannot stat: ", std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(file, ": is a directory, not an ", what, " file");
  if (!S_ISREG(st.st_mode)) fail(file, ": is not a regular file");
  if (st.st_size == 0) fail(file, ": file is empty (not an ", what, ")");
  if (static_cast<uint64_t>(st.st_size) > kMaxProtoBytes)
    fail(file, ": file is ", st.st_size, " bytes, over protobuf's 2 GiB limit; models this large must keep "
         "their weights in external data files");

  google::protobuf::io::FileInputStream raw(fd);
  google::protobuf::io::CodedInputStream coded(&raw);
  // The default limit is lower on some protobuf builds; the file size was checked above.
  coded.SetTotalBytesLimit(INT_MAX);
  if (!message.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    fail(file, ": not a valid ", what, " (protobuf parse failed: truncated or not ONNX", looks_like(fd), ")");
  if (raw.GetErrno() != 0) fail(file, ": read error: ", std::strerror(raw.GetErrno()));
}

void write_proto_file(const fs::path& path, const google::protobuf::Message& message,
                      const std::function<void()>& before_rename) {
  const std::string file = path.string();
  const size_t size = message.ByteSizeLong();
  if (size > kMaxProtoBytes)
    fail(file, ": the model would be ", size, " bytes, over protobuf's 2 GiB limit even with its "
         "initializers in external data");
  fs::path temp = temp_path_for(path);
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) fail(file, ": cannot write '", temp.string(), "': ", std::strerror(errno));
    bool ok = message.SerializeToOstream(&out);
    out.close();
    if (!ok || !out) {
      std::error_code ec;
      fs::remove(temp, ec);
      fail(file, ": writing the model failed (disk full?)");
    }
  }
  std::error_code ec;
  try {
    if (before_rename) before_rename();
  } catch (...) {
    fs::remove(temp, ec);
    throw;
  }
  fs::rename(temp, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(temp, ignored);
    fail(file, ": cannot replace the file: ", ec.message());
  }
}

}  // namespace octet::onnx_io
