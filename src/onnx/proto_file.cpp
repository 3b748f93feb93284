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
#include <memory>

#include "io/output_file.h"
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
// protobuf's default recursion limit, kept: deeper ONNX files do not occur in practice.
constexpr int kProtobufDepthLimit = 100;
// Only to tell "too deep" from "corrupt"; low enough for the parser's stack use.
constexpr int kProbeDepthLimit = 2000;

bool parse_from_fd(int fd, google::protobuf::Message& message, int depth_limit, int* read_errno) {
  if (::lseek(fd, 0, SEEK_SET) != 0) {
    *read_errno = errno;
    return false;
  }
  google::protobuf::io::FileInputStream raw(fd);
  google::protobuf::io::CodedInputStream coded(&raw);
  // The default limit is lower on some protobuf builds; the file size was checked above.
  coded.SetTotalBytesLimit(INT_MAX);
  coded.SetRecursionLimit(depth_limit);
  const bool ok = message.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  *read_errno = raw.GetErrno();
  return ok && *read_errno == 0;
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

  int read_errno = 0;
  if (!parse_from_fd(fd, message, kProtobufDepthLimit, &read_errno)) {
    if (read_errno != 0) fail(file, ": read error: ", std::strerror(read_errno));
    // protobuf fails alike for a truncated file and for messages nested past its
    // recursion limit; a second parse with a higher limit tells the two apart.
    std::unique_ptr<google::protobuf::Message> probe(message.New());
    if (parse_from_fd(fd, *probe, kProbeDepthLimit, &read_errno))
      fail(file, ": messages are nested deeper than protobuf's limit of ", kProtobufDepthLimit,
           " levels (subgraphs inside subgraphs?); such a file is refused, not read as ", what);
    fail(file, ": not a valid ", what, " (protobuf parse failed: truncated or not ONNX", looks_like(fd), ")");
  }
}

void write_proto_file(const fs::path& path, const google::protobuf::Message& message,
                      const std::function<void()>& before_rename) {
  const std::string file = path.string();
  const size_t size = message.ByteSizeLong();
  if (size > kMaxProtoBytes)
    fail(file, ": the model would be ", size, " bytes, over protobuf's 2 GiB limit even with its "
         "initializers in external data");
  ReplacingFile out(path);
  if (!message.SerializeToOstream(&out.stream())) fail(file, ": writing the model failed (disk full?)");
  if (before_rename) before_rename();
  out.commit();
}

}  // namespace octet::onnx_io
