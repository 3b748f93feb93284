// .npy reading and writing. The header is a Python dict literal; it is parsed here by a
// small tokenizer that accepts what numpy writes (any key order, either quote style,
// trailing commas, Python 2 'L' suffixes) and nothing that could make us misread data.
#include "io/npy.h"

#include "core/sizes.h"
#include "io/output_file.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <system_error>

namespace octet {

static_assert(std::endian::native == std::endian::little,
              ".npy data is read in place as little endian; big-endian hosts need byte swapping");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// Enough for any real array, small enough that bytes never overflow (16 B/element).

struct DescrEntry {
  char kind;  // numpy kind character
  int size;   // bytes
  DType dtype;
};
constexpr DescrEntry kDescrs[] = {
    {'f', 2, DType::Float16}, {'f', 4, DType::Float32},   {'f', 8, DType::Float64},
    {'i', 1, DType::Int8},    {'i', 2, DType::Int16},     {'i', 4, DType::Int32},
    {'i', 8, DType::Int64},   {'u', 1, DType::UInt8},     {'u', 2, DType::UInt16},
    {'u', 4, DType::UInt32},  {'u', 8, DType::UInt64},    {'b', 1, DType::Bool},
    {'c', 8, DType::Complex64}, {'c', 16, DType::Complex128},
    {'V', 2, DType::BFloat16},  // how np.save writes ml_dtypes.bfloat16
};

const char* kSupportedTypes =
    "octet reads bool, int8-64, uint8-64, float16/32/64, complex64/128, and bfloat16 saved as '<V2'";

DType dtype_from_descr(const std::string& descr, const std::string& context) {
  std::string_view d = descr;
  char order = '=';
  if (!d.empty() && (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=')) {
    order = d[0];
    d.remove_prefix(1);
  }
  std::optional<DescrEntry> found;
  if (d.size() >= 2) {
    int size = 0;
    bool digits = true;
    for (char c : d.substr(1)) {
      if (c < '0' || c > '9' || size > 1000) digits = false;
      else size = size * 10 + (c - '0');
    }
    if (digits)
      for (const DescrEntry& e : kDescrs)
        if (e.kind == d[0] && e.size == size) found = e;
  }
  if (!found) fail(context, ": unsupported dtype '", descr, "' (", kSupportedTypes, ")");
  if (order == '>' && found->size > 1 && found->kind != 'V')
    fail(context, ": big-endian data ('", descr, "') is not supported; save it little-endian, e.g. ",
         "np.save(f, a.astype(a.dtype.newbyteorder('<')))");
  return found->dtype;
}

// A tokenizer for the header's Python literal.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& context) : s_(text), context_(context) {}

  [[noreturn]] void bad(const std::string& what) const {
    fail(context_, ": malformed .npy header (", what, " at offset ", i_, "): ", printable(s_));
  }
  static std::string printable(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 200)) out += (c >= 32 && c < 127) ? c : '?';
    while (!out.empty() && (out.back() == ' ' || out.back() == '?')) out.pop_back();
    return out;
  }

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool peek(char c) {
    skip_ws();
    return i_ < s_.size() && s_[i_] == c;
  }
  bool eat(char c) {
    if (!peek(c)) return false;
    ++i_;
    return true;
  }
  void expect(char c) {
    if (!eat(c)) bad(std::string("expected '") + c + "'");
  }
  std::string string() {
    skip_ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) bad("expected a quoted string");
    char quote = s_[i_++];
    size_t end = s_.find(quote, i_);
    if (end == std::string_view::npos) bad("unterminated string");
    std::string out(s_.substr(i_, end - i_));
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_ws();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      size_t n = std::strlen(word);
      if (s_.substr(i_, n) == word) {
        i_ += n;
        return value;
      }
    }
    bad("expected True or False");
  }
  int64_t integer() {
    skip_ws();
    size_t start = i_;
    int64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      if (v > (std::numeric_limits<int64_t>::max() - 9) / 10) bad("dimension too large");
      v = v * 10 + (s_[i_++] - '0');
    }
    if (i_ == start) bad("expected a non-negative integer");
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 long
    return v;
  }
  std::vector<int64_t> shape() {
    expect('(');
    std::vector<int64_t> dims;
    while (!eat(')')) {
      dims.push_back(integer());
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }
  bool at_end() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\0'))
      ++i_;
    return i_ == s_.size();
  }

 private:
  std::string_view s_;
  const std::string& context_;
  size_t i_ = 0;
};

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

Header parse_header(std::string_view text, const std::string& context) {
  HeaderParser p(text, context);
  Header h;
  bool seen_descr = false, seen_order = false, seen_shape = false;
  p.expect('{');
  while (!p.eat('}')) {
    std::string key = p.string();
    p.expect(':');
    if (key == "descr" && !seen_descr) {
      if (p.peek('[')) fail(context, ": structured arrays (a list descr) are not supported");
      h.descr = p.string();
      seen_descr = true;
    } else if (key == "fortran_order" && !seen_order) {
      h.fortran_order = p.boolean();
      seen_order = true;
    } else if (key == "shape" && !seen_shape) {
      h.shape = p.shape();
      seen_shape = true;
    } else {
      p.bad("unexpected or repeated key '" + key + "'");
    }
    if (!p.eat(',')) {
      p.expect('}');
      break;
    }
  }
  if (!p.at_end()) p.bad("text after the closing '}'");
  if (!seen_descr || !seen_order || !seen_shape)
    fail(context, ": malformed .npy header (it needs the keys 'descr', 'fortran_order' and 'shape'): ",
         HeaderParser::printable(text));
  return h;
}

uint32_t read_le(std::string_view b, size_t at, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint32_t{static_cast<uint8_t>(b[at + i])} << (8 * i);
  return v;
}

}  // namespace

std::string npy_descr(DType dtype) {
  for (const DescrEntry& e : kDescrs) {
    if (e.dtype != dtype) continue;
    std::string order = e.size == 1 ? "|" : "<";
    return order + e.kind + std::to_string(e.size);
  }
  fail(dtype_name(dtype), " cannot be saved as .npy (numpy has no such type)");
}

namespace {

struct HeaderExtent {
  size_t text_start;  // after magic, version and the length field
  size_t data_start;  // after the header text
};

// Magic, version and header length. `bytes` is the file's beginning (at least its first
// 12 bytes when it has them); `file_size` the whole file's, so a header that claims more
// than the file holds is refused before anything is read or allocated.
HeaderExtent header_extent(std::string_view bytes, uint64_t file_size, const std::string& context) {
  if (bytes.size() < kMagicLen || bytes.substr(0, kMagicLen) != std::string_view(kMagic, kMagicLen))
    fail(context, ": not a .npy file (it does not start with the \\x93NUMPY magic)");
  if (file_size < 10 || bytes.size() < 10)
    fail(context, ": truncated .npy file (", file_size, " bytes, no complete header)");
  const int major = static_cast<uint8_t>(bytes[6]), minor = static_cast<uint8_t>(bytes[7]);
  size_t len_bytes = 0;
  if (major == 1) len_bytes = 2;
  else if (major == 2 || major == 3) len_bytes = 4;
  else fail(context, ": unsupported .npy format version ", major, ".", minor, " (octet reads 1.0, 2.0 and 3.0)");
  if (file_size < 8 + len_bytes || bytes.size() < 8 + len_bytes)
    fail(context, ": truncated .npy file (", file_size, " bytes, no complete header)");
  const size_t header_len = read_le(bytes, 8, len_bytes);
  const size_t data_start = 8 + len_bytes + header_len;
  if (file_size < data_start)
    fail(context, ": truncated .npy file (", file_size, " bytes; its header says the header alone needs ",
         data_start, ")");
  return {8 + len_bytes, data_start};
}

// The header of a file of `file_size` bytes whose beginning (through the header) is
// `bytes`; checks that the data after the header is exactly what dtype and shape need.
NpyHeader parse_npy_prefix(std::string_view bytes, uint64_t file_size, const std::string& context) {
  const HeaderExtent extent = header_extent(bytes, file_size, context);
  OCTET_ASSERT(bytes.size() >= extent.data_start, "the caller passes the whole header");
  Header h = parse_header(bytes.substr(extent.text_start, extent.data_start - extent.text_start), context);
  DType dtype = dtype_from_descr(h.descr, context);
  if (h.fortran_order)
    fail(context, ": fortran_order=True (column-major) arrays are not supported; save a C-order copy, "
         "e.g. np.save(f, np.ascontiguousarray(a))");
  // Compared with the data really there, never allocated from: no memory limit here.
  const std::optional<int64_t> numel = try_numel(h.shape);
  const std::optional<uint64_t> need = numel ? claimed_storage_bytes(dtype, *numel) : std::nullopt;
  if (!need) fail(context, ": shape ", shape_to_string(h.shape), " is too large");
  const uint64_t have = file_size - extent.data_start;
  if (have != *need)
    fail(context, ": ", have < *need ? "truncated data" : "unexpected bytes after the data", ": ", have,
         " bytes of data, but ", h.descr, " with shape ", shape_to_string(h.shape), " needs ", *need);
  return {dtype, std::move(h.shape), extent.data_start};
}

}  // namespace

Tensor parse_npy(std::string_view bytes, const std::string& context) {
  const NpyHeader h = parse_npy_prefix(bytes, bytes.size(), context);
  Tensor t(h.dtype, h.shape);
  if (t.bytes()) std::memcpy(t.mutable_raw(), bytes.data() + h.data_offset, t.bytes());
  return t;
}

NpyHeader read_npy_header(const std::filesystem::path& path) {
  const std::string context = path.string();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(context, ": is a directory, expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(context, ": cannot open (", std::strerror(errno), ")");
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) fail(context, ": cannot read");
  const uint64_t file_size = static_cast<uint64_t>(size);
  // The fixed part first, then exactly the header it announces.
  auto read_prefix = [&](uint64_t n) {
    std::string bytes(static_cast<size_t>(std::min<uint64_t>(n, file_size)), '\0');
    in.seekg(0);
    if (!bytes.empty() && !in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
      fail(context, ": read failed");
    return bytes;
  };
  const HeaderExtent extent = header_extent(read_prefix(12), file_size, context);
  return parse_npy_prefix(read_prefix(extent.data_start), file_size, context);
}

std::string npy_bytes(const Tensor& t) {
  std::string header = "{'descr': '" + npy_descr(t.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape().size(); ++i) header += (i ? ", " : "") + std::to_string(t.shape()[i]);
  header += t.shape().size() == 1 ? ",), }" : "), }";
  // Pad with spaces so that magic + version + length + header + '\n' is a multiple of 64.
  bool v2 = header.size() + 1 + 10 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  size_t total = prefix + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out(kMagic, kMagicLen);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  const size_t n = header.size();
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>((n >> (8 * i)) & 0xff);
  out += header;
  if (t.bytes()) out.append(reinterpret_cast<const char*>(t.raw()), t.bytes());
  return out;
}

namespace io_detail {

std::string read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(path.string(), ": is a directory, expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string(), ": cannot open (", std::strerror(errno), ")");
  std::string bytes;
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) fail(path.string(), ": cannot read");
  bytes.resize(static_cast<size_t>(size));
  in.seekg(0);
  if (size > 0 && !in.read(bytes.data(), size)) fail(path.string(), ": read failed");
  return bytes;
}

}  // namespace io_detail

Tensor read_npy(const std::filesystem::path& path) {
  return parse_npy(io_detail::read_file(path), path.string());
}

void write_npy(const std::filesystem::path& path, const Tensor& t) {
  std::string bytes;
  try {
    bytes = npy_bytes(t);
  } catch (const Error& e) {
    fail(path.string(), ": ", e.what());
  }
  write_file_replacing(path, bytes);
}

ArrayFileKind sniff_array_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  char head[6] = {};
  if (!in || !in.read(head, 6)) return ArrayFileKind::Other;
  if (std::memcmp(head, kMagic, kMagicLen) == 0) return ArrayFileKind::Npy;
  if (std::memcmp(head, "PK\x03\x04", 4) == 0 || std::memcmp(head, "PK\x05\x06", 4) == 0)
    return ArrayFileKind::Npz;
  return ArrayFileKind::Other;
}

}  // namespace octet
