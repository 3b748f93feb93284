#include "onnx/external_data.h"

#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>

#include "octet/error.h"

namespace octet::onnx_io {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- MappedFile

MappedFile::MappedFile(const fs::path& path, const std::string& context) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(context, ": cannot open external data file '", path.string(), "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(context, ": external data file '", path.string(), "' is not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    // MAP_PRIVATE: tensors must not change if someone rewrites the file afterwards
    // (within the limits of what the kernel guarantees for pages not yet touched).
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    ::close(fd);
    if (p == MAP_FAILED) fail(context, ": cannot map external data file '", path.string(), "': ", std::strerror(err));
    data_ = static_cast<const uint8_t*>(p);
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

// ---------------------------------------------------------------- locations

fs::path resolve_external_location(const fs::path& base_dir, const std::string& location,
                                   const std::string& context) {
  if (location.empty()) fail(context, ": external data has no location");
  auto escapes = [&] { fail(context, ": external data location '", location, "' escapes the model folder"); };
  if (location.find('\0') != std::string::npos) escapes();
  fs::path loc(location);
  if (loc.is_absolute() || loc.has_root_name() || loc.has_root_directory()) escapes();
  fs::path normal = loc.lexically_normal();
  if (normal.empty() || *normal.begin() == "..") escapes();
  if (normal == ".") fail(context, ": external data location '", location, "' is not a file");

  fs::path base = base_dir.empty() ? fs::path(".") : base_dir;
  fs::path full = base / normal;
  std::error_code ec;
  fs::file_status st = fs::status(full, ec);  // follows symlinks
  if (ec || !fs::exists(st))  // a dangling symlink reads as not found too
    fail(context, ": external data file '", location, "' not found (looked for '", full.string(), "')");
  // Lexically inside is not enough: a symlink (or a symlinked directory) inside the folder
  // may point anywhere. Compare real paths.
  fs::path real_base = fs::canonical(base, ec);
  if (ec) fail(context, ": cannot resolve the model folder '", base.string(), "': ", ec.message());
  fs::path real = fs::canonical(full, ec);
  if (ec) fail(context, ": cannot resolve external data file '", location, "': ", ec.message());
  fs::path rel = real.lexically_relative(real_base);
  if (rel.empty() || *rel.begin() == ".." || rel == ".") escapes();
  if (!fs::is_regular_file(st)) fail(context, ": external data file '", location, "' is not a regular file");
  return real;
}

// ---------------------------------------------------------------- TensorSource

TensorSource::TensorSource(fs::path base_dir) : base_dir_(std::move(base_dir)) {}

namespace {
// ONNX writes offsets and lengths as decimal strings; anything else is a broken file.
uint64_t parse_size_key(const std::string& key, const std::string& text, const std::string& context) {
  if (text.empty() || text.size() > 20) fail(context, ": external data ", key, " '", text, "' is not a number");
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') fail(context, ": external data ", key, " '", text, "' is not a number");
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - digit) / 10)
      fail(context, ": external data ", key, " '", text, "' is too large");
    v = v * 10 + digit;
  }
  return v;
}
}  // namespace

std::shared_ptr<Buffer> TensorSource::external_bytes(const onnx::TensorProto& proto, size_t expected,
                                                     size_t element_align, const std::string& context,
                                                     const std::string& desc) {
  std::string location;
  std::optional<uint64_t> offset, length;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = parse_size_key("offset", kv.value(), context);
    else if (kv.key() == "length") length = parse_size_key("length", kv.value(), context);
    // "checksum" and keys from newer writers are not needed to read the bytes.
  }
  fs::path real = resolve_external_location(base_dir_, location, context);

  auto& mapped = files_[real.string()];
  if (!mapped) mapped = std::make_shared<const MappedFile>(real, context);
  const size_t file_size = mapped->size();

  uint64_t off = offset.value_or(0);
  if (off > file_size)
    fail(context, ": external data offset ", off, " is past the end of '", location, "' (", file_size, " bytes)");
  uint64_t len = length.value_or(file_size - off);
  if (len > file_size - off) {
    const bool wraps = len > std::numeric_limits<uint64_t>::max() - off;
    fail(context, ": external data range [", off, ", ", wraps ? "overflow" : std::to_string(off + len),
         ") exceeds the ", file_size, " bytes of '", location, "'");
  }
  if (len != expected)
    fail(context, " (", desc, ") has ", len, " bytes of external data, expected ", expected);

  const uint8_t* p = mapped->data() ? mapped->data() + off : nullptr;
  // Kernels read elements through typed pointers; a misaligned one would be undefined
  // behaviour, so such a tensor gets its own aligned copy.
  if (len > 0 && reinterpret_cast<uintptr_t>(p) % element_align != 0) {
    auto copy = Buffer::allocate(len);
    std::memcpy(copy->mutable_data(), p, len);
    return copy;
  }
  if (len == 0) return Buffer::allocate(0);
  return Buffer::borrow(p, len, mapped);
}

// ---------------------------------------------------------------- writer

ExternalDataWriter::ExternalDataWriter(fs::path final_path, const std::string& context)
    : final_path_(std::move(final_path)), context_(context), file_(final_path_) {}

ExternalDataWriter::~ExternalDataWriter() = default;

uint64_t ExternalDataWriter::append(const uint8_t* data, size_t bytes) {
  // Page alignment lets runtimes (ORT included) map large tensors directly; small ones
  // only need cache-line alignment, and padding them to a page would waste space.
  const uint64_t align = bytes >= 4096 ? 4096 : 64;
  uint64_t start = (offset_ + align - 1) / align * align;
  static const char zeros[4096] = {};
  std::ofstream& out = file_.stream();
  out.write(zeros, static_cast<std::streamsize>(start - offset_));
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) fail(context_, ": writing external data file '", file_.temp_path().string(), "' failed");
  offset_ = start + bytes;
  return start;
}

void ExternalDataWriter::commit() {
  try {
    file_.commit();
  } catch (const Error& e) {
    fail(context_, ": external data file: ", e.what());
  }
}

}  // namespace octet::onnx_io
