// .npz: a zip archive of .npy members. Only the part of zip that numpy and Python's
// zipfile write is read: one disk, stored or deflated members, zip64 sizes and offsets,
// no encryption. Members are found through the central directory (as np.load does), and
// every offset and size in it is checked against the file before it is used.
#include <zlib.h>

#include <algorithm>
#include <limits>
#include <set>

#include "io/npy.h"
#include "io/output_file.h"

namespace octet {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kMax32 = 0xffffffffu;
// Deflate cannot expand data more than about 1032:1; a larger claim is a corrupt header,
// and checking it first keeps a corrupt file from making us allocate gigabytes.
constexpr uint64_t kMaxDeflateRatio = 1040;

class Reader {
 public:
  Reader(std::string_view bytes, std::string context) : b_(bytes), ctx_(std::move(context)) {}
  [[noreturn]] void corrupt(const std::string& what) const { fail(ctx_, ": corrupt .npz (zip) file: ", what); }
  uint64_t le(uint64_t at, int n) const {
    if (at > b_.size() || static_cast<uint64_t>(n) > b_.size() - at) corrupt("a record runs past the end of the file");
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= uint64_t{static_cast<uint8_t>(b_[at + i])} << (8 * i);
    return v;
  }
  std::string_view slice(uint64_t at, uint64_t n, const char* what) const {
    if (at > b_.size() || n > b_.size() - at) corrupt(std::string(what) + " runs past the end of the file");
    return b_.substr(at, n);
  }
  size_t size() const { return b_.size(); }
  const std::string& context() const { return ctx_; }

 private:
  std::string_view b_;
  std::string ctx_;
};

struct Entry {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t csize = 0, usize = 0, offset = 0;
};

struct Directory {
  uint64_t count = 0, offset = 0, size = 0;
};

Directory find_directory(const Reader& r) {
  if (r.size() < 22) r.corrupt("too short for a zip file");
  // The end record is the last 22 bytes plus a comment of at most 65535 bytes.
  uint64_t lowest = r.size() > 22 + 65535 ? r.size() - 22 - 65535 : 0;
  uint64_t end = r.size() - 22;
  while (r.le(end, 4) != kEndSig) {
    if (end == lowest) r.corrupt("no end-of-central-directory record (not a zip file, or truncated)");
    --end;
  }
  Directory d{r.le(end + 10, 2), r.le(end + 16, 4), r.le(end + 12, 4)};
  if (r.le(end + 4, 2) != 0 || r.le(end + 6, 2) != 0) r.corrupt("multi-disk archives are not supported");
  if ((d.count == 0xffff || d.offset == kMax32 || d.size == kMax32) && end >= 20 &&
      r.le(end - 20, 4) == kZip64LocatorSig) {
    uint64_t at = r.le(end - 20 + 8, 8);
    if (r.le(at, 4) != kZip64EndSig) r.corrupt("bad zip64 end-of-central-directory record");
    d = Directory{r.le(at + 32, 8), r.le(at + 48, 8), r.le(at + 40, 8)};
  }
  if (d.offset > r.size() || d.size > r.size() - d.offset) r.corrupt("central directory outside the file");
  if (d.count > d.size / 46) r.corrupt("central directory claims more entries than it can hold");
  return d;
}

std::vector<Entry> read_entries(const Reader& r, const Directory& d) {
  std::vector<Entry> entries;
  uint64_t at = d.offset;
  for (uint64_t i = 0; i < d.count; ++i) {
    if (r.le(at, 4) != kCentralSig) r.corrupt("bad central directory entry " + std::to_string(i));
    Entry e;
    e.flags = static_cast<uint16_t>(r.le(at + 8, 2));
    e.method = static_cast<uint16_t>(r.le(at + 10, 2));
    e.crc = static_cast<uint32_t>(r.le(at + 16, 4));
    e.csize = r.le(at + 20, 4);
    e.usize = r.le(at + 24, 4);
    uint64_t name_len = r.le(at + 28, 2), extra_len = r.le(at + 30, 2), comment_len = r.le(at + 32, 2);
    e.offset = r.le(at + 42, 4);
    e.name = std::string(r.slice(at + 46, name_len, "a member name"));
    // zip64 extra field: the 64-bit values, in this order, for each 32-bit field that is 0xffffffff.
    std::string_view extra = r.slice(at + 46 + name_len, extra_len, "an extra field");
    for (size_t x = 0; x + 4 <= extra.size();) {
      Reader xr(extra, r.context());
      uint64_t id = xr.le(x, 2), len = xr.le(x + 2, 2);
      if (id == 1) {
        uint64_t p = x + 4, stop = x + 4 + len;
        for (uint64_t* field : {&e.usize, &e.csize, &e.offset}) {
          if (*field != kMax32) continue;
          if (p + 8 > stop) r.corrupt("short zip64 extra field for member '" + e.name + "'");
          *field = xr.le(p, 8);
          p += 8;
        }
      }
      x += 4 + len;
    }
    entries.push_back(std::move(e));
    at += 46 + name_len + extra_len + comment_len;
  }
  return entries;
}

std::string inflate_member(std::string_view in, uint64_t usize, const std::string& context) {
  if (usize > kMaxDeflateRatio * in.size() + 1024)
    fail(context, ": corrupt .npz member: claims ", usize, " bytes from ", in.size(), " compressed");
  std::string out(usize, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) fail(context, ": zlib inflateInit failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  size_t in_left = in.size(), out_left = out.size();
  int rc = Z_OK;
  constexpr size_t kChunk = size_t{1} << 30;  // zlib counts in 32-bit uInt
  while (rc == Z_OK) {
    if (z.avail_in == 0 && in_left) {
      z.avail_in = static_cast<uInt>(std::min(in_left, kChunk));
      in_left -= z.avail_in;
    }
    if (z.avail_out == 0 && out_left) {
      z.avail_out = static_cast<uInt>(std::min(out_left, kChunk));
      out_left -= z.avail_out;
    }
    uInt before_in = z.avail_in, before_out = z.avail_out;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR || (rc == Z_OK && z.avail_in == before_in && z.avail_out == before_out)) break;
  }
  uint64_t produced = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != usize)
    fail(context, ": corrupt .npz member: deflate data is damaged or truncated",
         rc == Z_STREAM_END ? " (wrong uncompressed size)" : "");
  return out;
}

uint32_t crc_of(std::string_view data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  constexpr size_t kChunk = size_t{1} << 30;
  for (size_t at = 0; at < data.size(); at += kChunk) {
    size_t n = std::min(kChunk, data.size() - at);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(data.data() + at), static_cast<uInt>(n));
  }
  return static_cast<uint32_t>(crc);
}

std::string deflate_bytes(std::string_view in, const std::string& context) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    fail(context, ": zlib deflateInit failed");
  std::string out;
  constexpr size_t kChunk = size_t{1} << 20;
  std::string buf(kChunk, '\0');
  size_t in_at = 0;
  int rc = Z_OK;
  do {
    size_t n = std::min(in.size() - in_at, size_t{1} << 30);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_at));
    z.avail_in = static_cast<uInt>(n);
    in_at += n;
    int flush = in_at == in.size() ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf.data());
      z.avail_out = static_cast<uInt>(kChunk);
      rc = deflate(&z, flush);
      out.append(buf.data(), kChunk - z.avail_out);
    } while (z.avail_out == 0);
  } while (in_at < in.size() || rc != Z_STREAM_END);
  deflateEnd(&z);
  return out;
}

void put(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

NamedArrays read_npz(const std::filesystem::path& path) {
  const std::string bytes = io_detail::read_file(path);
  Reader r(bytes, path.string());
  std::vector<Entry> entries = read_entries(r, find_directory(r));
  NamedArrays out;
  std::set<std::string> keys;
  for (const Entry& e : entries) {
    const std::string context = path.string() + ": member '" + e.name + "'";
    if (!e.name.empty() && e.name.back() == '/') continue;  // directory entry
    if (e.flags & 1) fail(context, ": encrypted members are not supported");
    if (e.method != 0 && e.method != 8)
      fail(context, ": compression method ", e.method, " is not supported (only stored and deflate)");
    if (r.le(e.offset, 4) != kLocalSig) r.corrupt("member '" + e.name + "' has no local header");
    uint64_t data_at = e.offset + 30 + r.le(e.offset + 26, 2) + r.le(e.offset + 28, 2);
    std::string_view raw = r.slice(data_at, e.csize, ("member '" + e.name + "'").c_str());
    std::string inflated;
    std::string_view data = raw;
    if (e.method == 8) {
      inflated = inflate_member(raw, e.usize, context);
      data = inflated;
    } else if (e.csize != e.usize) {
      r.corrupt("stored member '" + e.name + "' has different compressed and uncompressed sizes");
    }
    if (crc_of(data) != e.crc) fail(context, ": CRC mismatch (the archive is corrupt)");
    std::string key = e.name;
    if (key.size() > 4 && key.compare(key.size() - 4, 4, ".npy") == 0) key.resize(key.size() - 4);
    if (!keys.insert(key).second) fail(context, ": two members are named '", key, "'");
    out.emplace_back(key, parse_npy(data, context));
  }
  return out;
}

void write_npz(const std::filesystem::path& path, const NamedArrays& arrays, const NpzWriteOptions& options) {
  std::string zip, central;
  std::set<std::string> names;
  for (const auto& [key, tensor] : arrays) {
    const std::string name = key + ".npy";
    if (!names.insert(name).second) fail(path.string(), ": two arrays are named '", key, "'");
    if (name.size() > 0xffff) fail(path.string(), ": array name too long: '", key.substr(0, 64), "...'");
    std::string npy;
    try {
      npy = npy_bytes(tensor);
    } catch (const Error& e) {
      fail(path.string(), ": array '", key, "': ", e.what());
    }
    const uint32_t crc = crc_of(npy);
    const std::string data = options.compress ? deflate_bytes(npy, path.string()) : std::string();
    const std::string_view body = options.compress ? std::string_view(data) : std::string_view(npy);
    const uint64_t usize = npy.size(), csize = body.size(), offset = zip.size();
    const bool z64 = options.force_zip64 || usize >= kMax32 || csize >= kMax32 || offset >= kMax32;
    const uint16_t method = options.compress ? 8 : 0, version = z64 ? 45 : 20;
    constexpr uint16_t kDosTime = 0, kDosDate = (1 << 5) | 1;  // 1980-01-01: reproducible files

    zip += "PK\x03\x04";
    put(zip, version, 2), put(zip, 0, 2), put(zip, method, 2), put(zip, kDosTime, 2), put(zip, kDosDate, 2);
    put(zip, crc, 4), put(zip, z64 ? kMax32 : csize, 4), put(zip, z64 ? kMax32 : usize, 4);
    put(zip, name.size(), 2), put(zip, z64 ? 20 : 0, 2);
    zip += name;
    if (z64) put(zip, 1, 2), put(zip, 16, 2), put(zip, usize, 8), put(zip, csize, 8);
    zip += body;

    central += "PK\x01\x02";
    put(central, version, 2), put(central, version, 2), put(central, 0, 2), put(central, method, 2);
    put(central, kDosTime, 2), put(central, kDosDate, 2), put(central, crc, 4);
    put(central, z64 ? kMax32 : csize, 4), put(central, z64 ? kMax32 : usize, 4);
    put(central, name.size(), 2), put(central, z64 ? 28 : 0, 2), put(central, 0, 2);
    put(central, 0, 2), put(central, 0, 2), put(central, 0, 4), put(central, z64 ? kMax32 : offset, 4);
    central += name;
    if (z64) put(central, 1, 2), put(central, 24, 2), put(central, usize, 8), put(central, csize, 8), put(central, offset, 8);
  }
  const uint64_t cd_offset = zip.size(), cd_size = central.size(), count = arrays.size();
  zip += central;
  const bool z64_end = options.force_zip64 || count >= 0xffff || cd_offset >= kMax32 || cd_size >= kMax32;
  if (z64_end) {
    const uint64_t at = zip.size();
    zip += "PK\x06\x06";
    put(zip, 44, 8), put(zip, 45, 2), put(zip, 45, 2), put(zip, 0, 4), put(zip, 0, 4);
    put(zip, count, 8), put(zip, count, 8), put(zip, cd_size, 8), put(zip, cd_offset, 8);
    zip += "PK\x06\x07";
    put(zip, 0, 4), put(zip, at, 8), put(zip, 1, 4);
  }
  zip += "PK\x05\x06";
  put(zip, 0, 2), put(zip, 0, 2);
  put(zip, z64_end ? 0xffff : count, 2), put(zip, z64_end ? 0xffff : count, 2);
  put(zip, z64_end ? kMax32 : cd_size, 4), put(zip, z64_end ? kMax32 : cd_offset, 4), put(zip, 0, 2);
  write_file_replacing(path, zip);
}

}  // namespace octet
