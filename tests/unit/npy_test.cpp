// .npy/.npz: every dtype, 0-d and empty arrays, numpy's exact header bytes, header
// versions, and malformed files (each an octet::Error naming the file, never a crash).
// tests/python/test_npy_cli.py checks the same files against numpy itself.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "io/npy.h"
#include "onnx_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;

std::string header_of(const std::string& dict, int major = 1) {
  std::string h = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  h.append((64 - (prefix + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < (major == 1 ? 2u : 4u); ++i) out += static_cast<char>((h.size() >> (8 * i)) & 0xff);
  return out + h;
}

template <typename T>
std::string bytes_of_values(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

std::string npy(const std::string& descr, const std::string& shape, const std::string& data, int major = 1) {
  return header_of("{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }", major) + data;
}

template <typename T>
void expect_round_trip(DType dtype, const std::vector<T>& values, std::vector<int64_t> shape) {
  Tensor t(dtype, shape);
  if (!values.empty()) std::memcpy(t.mutable_raw(), values.data(), values.size() * sizeof(T));
  Tensor back = parse_npy(npy_bytes(t), "x.npy");
  EXPECT_EQ(back.dtype(), dtype) << dtype_name(dtype);
  EXPECT_EQ(back.shape(), shape) << dtype_name(dtype);
  ASSERT_EQ(back.bytes(), t.bytes());
  if (t.bytes()) {
    EXPECT_EQ(std::memcmp(back.raw(), t.raw(), t.bytes()), 0) << dtype_name(dtype);
  }
}

TEST(Npy, HeaderBytesMatchNumpy) {
  // np.save(f, np.zeros((), np.float32)): a 118-byte header, data at offset 128.
  std::string want = npy("<f4", "()", std::string(4, '\0'));
  EXPECT_EQ(want.size(), 132u);
  EXPECT_EQ(npy_bytes(Tensor(DType::Float32, {})), want);
  // 1-d shapes keep Python's trailing comma; every header ends at a multiple of 64.
  std::string one_d = npy_bytes(Tensor::from_vector<int64_t>({3}, {1, 2, 3}));
  EXPECT_NE(one_d.find("'shape': (3,), }"), std::string::npos);
  EXPECT_EQ((one_d.size() - 24) % 64, 0u);
  EXPECT_NE(npy_bytes(Tensor(DType::Bool, {0, 3})).find("{'descr': '|b1', 'fortran_order': False, 'shape': (0, 3), }"),
            std::string::npos);
}

TEST(Npy, RoundTripEveryDtype) {
  expect_round_trip<float>(DType::Float32, {1.5f, -2.0f, INFINITY, NAN, 0.0f, -0.0f}, {2, 3});
  expect_round_trip<double>(DType::Float64, {1e300, -1e-300}, {2});
  expect_round_trip<uint16_t>(DType::Float16, {0x3c00, 0xfc00, 0x7e00}, {3, 1});
  expect_round_trip<uint16_t>(DType::BFloat16, {0x3f80, 0x4000}, {2});
  expect_round_trip<int64_t>(DType::Int64, {INT64_MIN, INT64_MAX, 0}, {3});
  expect_round_trip<int32_t>(DType::Int32, {INT32_MIN, 7}, {1, 2});
  expect_round_trip<int16_t>(DType::Int16, {-3, 4}, {2});
  expect_round_trip<int8_t>(DType::Int8, {-128, 127}, {2});
  expect_round_trip<uint8_t>(DType::UInt8, {0, 255}, {2});
  expect_round_trip<uint16_t>(DType::UInt16, {65535}, {1});
  expect_round_trip<uint32_t>(DType::UInt32, {4000000000u}, {1});
  expect_round_trip<uint64_t>(DType::UInt64, {UINT64_MAX}, {1});
  expect_round_trip<uint8_t>(DType::Bool, {1, 0, 1}, {3});
  expect_round_trip<float>(DType::Complex64, {1, 2, 3, 4}, {2});
  expect_round_trip<double>(DType::Complex128, {1, -2}, {1});
}

TEST(Npy, ZeroDimAndEmptyArrays) {
  expect_round_trip<float>(DType::Float32, {42.0f}, {});
  expect_round_trip<int64_t>(DType::Int64, {}, {0});
  expect_round_trip<float>(DType::Float32, {}, {2, 0, 5});
  Tensor t = parse_npy(npy("<i8", "()", bytes_of_values<int64_t>({-7})), "x.npy");
  EXPECT_EQ(t.rank(), 0);
  EXPECT_EQ(t.to_int64_vector(), std::vector<int64_t>{-7});
}

TEST(Npy, ReadsWhatNumpyMayWrite) {
  // Keys in any order, double quotes, no trailing comma, Python 2 longs, versions 2 and 3.
  std::string data = bytes_of_values<float>({1, 2, 3, 4, 5, 6});
  for (const std::string& dict :
       {std::string("{'shape': (2, 3), 'fortran_order': False, 'descr': '<f4'}"),
        std::string("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2L, 3L)}"),
        std::string("{'descr':'<f4','fortran_order':False,'shape':(2,3),}")}) {
    for (int major : {1, 2, 3}) {
      Tensor t = parse_npy(header_of(dict, major) + data, "x.npy");
      EXPECT_EQ(t.describe(), "float32[2,3]") << dict << " v" << major;
    }
  }
  // Byte order marks that do not matter: '|' and '>' on one-byte types, '=' (native).
  EXPECT_EQ(parse_npy(npy(">i1", "(1,)", "\x05"), "x.npy").dtype(), DType::Int8);
  EXPECT_EQ(parse_npy(npy("=i4", "(1,)", std::string(4, '\0')), "x.npy").dtype(), DType::Int32);
  EXPECT_EQ(parse_npy(npy("|V2", "(1,)", std::string(2, '\0')), "x.npy").dtype(), DType::BFloat16);
}

TEST(Npy, RejectsWhatItCannotReadCorrectly) {
  const std::string f4 = bytes_of_values<float>({1, 2});
  expect_error([&] { parse_npy(npy(">f4", "(2,)", f4), "in.npy"); }, "in.npy: big-endian data ('>f4')");
  expect_error(
      [&] { parse_npy(header_of("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }") + f4, "in.npy"); },
      "in.npy: fortran_order=True");
  expect_error([&] { parse_npy(npy("<U5", "(1,)", std::string(20, 'a')), "in.npy"); },
               "in.npy: unsupported dtype '<U5'");
  expect_error([&] { parse_npy(npy("|O", "(1,)", std::string(8, 'a')), "in.npy"); }, "unsupported dtype '|O'");
  expect_error([&] { parse_npy(npy("<f16", "(1,)", std::string(16, 'a')), "in.npy"); }, "unsupported dtype '<f16'");
  expect_error([&] { parse_npy(npy("|V1", "(1,)", "a"), "in.npy"); }, "unsupported dtype '|V1'");
  expect_error(
      [&] { parse_npy(header_of("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }") + f4, "in.npy"); },
      "structured arrays");
}

TEST(Npy, CorruptHeaders) {
  const std::string f4 = bytes_of_values<float>({1, 2});
  expect_error([] { parse_npy("", "e.npy"); }, "e.npy: not a .npy file");
  expect_error([] { parse_npy("PK\x03\x04 this is a zip", "e.npy"); }, "e.npy: not a .npy file");
  expect_error([] { parse_npy(std::string("\x93NUMPY\x01", 7), "e.npy"); }, "e.npy: truncated .npy file");
  expect_error([] { parse_npy(std::string("\x93NUMPY\x04\x00\x10\x00", 10), "e.npy"); },
               "unsupported .npy format version 4.0");
  // The header length field claims more bytes than the file has.
  expect_error([] { parse_npy(std::string("\x93NUMPY\x01\x00\xff\xff{}", 12), "e.npy"); }, "e.npy: truncated .npy file");
  expect_error([] { parse_npy(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff", 12), "e.npy"); }, "truncated .npy file");
  for (const std::string& bad : {
           std::string("{'descr': '<f4', 'fortran_order': False}"),                            // no shape
           std::string("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}"),             // bad bool
           std::string("{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}"),              // quoting
           std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}"),     // extra key
           std::string("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}"),
           std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}"),            // negative
           std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk"),
           std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (2,"),
           std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"),
           std::string("[1, 2]"),
       })
    expect_error([&] { parse_npy(header_of(bad) + f4, "h.npy"); }, "h.npy: malformed .npy header");
}

TEST(Npy, DataLengthMustMatchShape) {
  expect_error([] { parse_npy(npy("<f4", "(2, 3)", std::string(20, '\0')), "d.npy"); },
               "d.npy: truncated data: 20 bytes of data, but <f4 with shape [2,3] needs 24");
  expect_error([] { parse_npy(npy("<f4", "(2,)", std::string(12, '\0')), "d.npy"); }, "unexpected bytes after the data");
  // A shape whose size overflows is refused before anything is allocated.
  expect_error([] { parse_npy(npy("<f8", "(4294967296, 4294967296)", ""), "d.npy"); }, "d.npy: shape");
  expect_error([] { parse_npy(npy("<f8", "(1000000000, 1000000)", ""), "d.npy"); }, "truncated data");
  // Every prefix of a valid file is an error, not a crash.
  const std::string full = npy_bytes(Tensor::from_vector<float>({2, 2}, {1, 2, 3, 4}));
  for (size_t n = 0; n < full.size(); ++n)
    EXPECT_THROW(parse_npy(std::string_view(full).substr(0, n), "t.npy"), Error) << n;
}

TEST(Npy, FilesAndErrorsNameThePath) {
  TempDir dir;
  Tensor t = Tensor::from_vector<int32_t>({2}, {5, 6});
  write_npy(dir / "a.npy", t);
  EXPECT_EQ(read_npy(dir / "a.npy").to_int64_vector(), (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(sniff_array_file(dir / "a.npy"), ArrayFileKind::Npy);
  EXPECT_FALSE(fs::exists(dir / "a.npy.tmp-octet"));
  expect_error([&] { read_npy(dir / "missing.npy"); }, "missing.npy: cannot open");
  expect_error([&] { read_npy(dir.path()); }, "is a directory");
  write_file(dir / "empty.npy", "");
  expect_error([&] { read_npy(dir / "empty.npy"); }, "empty.npy: not a .npy file");
  expect_error([&] { write_npy(dir / "q.npy", Tensor(DType::Float8E4M3FN, {2})); }, "q.npy: float8e4m3fn cannot be saved");
  expect_error([&] { write_npy(dir / "no_such_dir" / "x.npy", t); }, "x.npy: cannot write");
}

NamedArrays sample_arrays() {
  return {{"input_ids", Tensor::from_vector<int64_t>({1, 3}, {101, 7, 102})},
          {"scalar", Tensor::scalar<float>(2.5f)},
          {"empty", Tensor(DType::Float16, {0, 4})},
          {"dir/name with space", Tensor::from_vector<uint8_t>({4}, {1, 1, 1, 1})}};
}

void expect_same(const NamedArrays& a, const NamedArrays& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_EQ(a[i].second.describe(), b[i].second.describe());
    ASSERT_EQ(a[i].second.bytes(), b[i].second.bytes());
    if (a[i].second.bytes()) {
      EXPECT_EQ(std::memcmp(a[i].second.raw(), b[i].second.raw(), a[i].second.bytes()), 0);
    }
  }
}

TEST(Npz, RoundTripStoredDeflatedAndZip64) {
  TempDir dir;
  for (bool compress : {false, true})
    for (bool zip64 : {false, true}) {
      fs::path p = dir / ("a" + std::to_string(compress) + std::to_string(zip64) + ".npz");
      write_npz(p, sample_arrays(), {compress, zip64});
      EXPECT_EQ(sniff_array_file(p), ArrayFileKind::Npz);
      expect_same(read_npz(p), sample_arrays());
    }
  write_npz(dir / "none.npz", {});
  EXPECT_TRUE(read_npz(dir / "none.npz").empty());
  expect_error([&] { write_npz(dir / "dup.npz", {{"a", Tensor::scalar<float>(1)}, {"a", Tensor::scalar<float>(2)}}); },
               "two arrays are named 'a'");
}

TEST(Npz, CorruptArchivesAreErrors) {
  TempDir dir;
  for (bool compress : {false, true}) {
    fs::path good = dir / "good.npz";
    write_npz(good, sample_arrays(), {compress, false});
    const std::string bytes = io_detail::read_file(good);
    // Truncation anywhere loses the end record or a member: an error naming the file.
    for (size_t n = 0; n < bytes.size(); n += 7) {
      write_file(dir / "cut.npz", bytes.substr(0, n));
      expect_error([&] { read_npz(dir / "cut.npz"); }, "cut.npz");
    }
    // Any single corrupted byte is either harmless (names, times) or an error; never a crash.
    for (size_t i = 0; i < bytes.size(); ++i) {
      std::string flipped = bytes;
      flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
      write_file(dir / "flip.npz", flipped);
      try {
        read_npz(dir / "flip.npz");
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("flip.npz"), std::string::npos) << e.what();
      }
    }
  }
  // Damaged data behind an intact directory: the CRC catches it.
  write_npz(dir / "crc.npz", {{"x", Tensor::from_vector<float>({4}, {1, 2, 3, 4})}});
  std::string bytes = io_detail::read_file(dir / "crc.npz");
  size_t data_at = bytes.find("\x93NUMPY") + 128 + 2;
  bytes[data_at] ^= 1;
  write_file(dir / "crc.npz", bytes);
  expect_error([&] { read_npz(dir / "crc.npz"); }, "crc.npz: member 'x.npy': CRC mismatch");
  write_file(dir / "text.npz", "just some text that is long enough to look for an end record in");
  expect_error([&] { read_npz(dir / "text.npz"); }, "text.npz: corrupt .npz (zip) file");
}

uint32_t crc32_of(std::string_view data) {
  uint32_t crc = 0xffffffffu;
  for (char ch : data) {
    crc ^= static_cast<uint8_t>(ch);
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

void put_le32(std::string& bytes, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

TEST(Npz, MemberErrorsNameTheMember) {
  TempDir dir;
  // A valid zip around an invalid .npy member.
  NamedArrays arrays = {{"x", Tensor::from_vector<float>({2}, {1, 2})}};
  write_npz(dir / "m.npz", arrays);
  std::string bytes = io_detail::read_file(dir / "m.npz");
  size_t at = bytes.find("'<f4'");
  bytes.replace(at, 5, "'>f4'");  // same length; then fix the CRC in both headers
  const size_t npy_at = bytes.find("\x93NUMPY"), npy_size = 128 + 8;
  const uint32_t crc = crc32_of(std::string_view(bytes).substr(npy_at, npy_size));
  put_le32(bytes, 14, crc);                                  // local header
  put_le32(bytes, bytes.find("PK\x01\x02") + 16, crc);      // central directory
  write_file(dir / "m.npz", bytes);
  expect_error([&] { read_npz(dir / "m.npz"); }, "m.npz: member 'x.npy': big-endian data ('>f4')");
}

}  // namespace
}  // namespace octet
