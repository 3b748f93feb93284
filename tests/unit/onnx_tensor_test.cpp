// TensorProto -> Tensor: every typed field, raw_data, sub-byte packing, external data
// (mapping, sharing, confinement to the model folder) and the size checks.
#include <gtest/gtest.h>

#include <cmath>

#include "onnx/model_io.h"
#include "onnx/proto_convert.h"
#include "onnx_test_util.h"

namespace octet {
namespace {

using namespace octet::testing;

onnx::TensorProto tensor(int32_t dtype, std::vector<int64_t> dims) {
  onnx::TensorProto t;
  t.set_name("t");
  t.set_data_type(dtype);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

Tensor read(const onnx::TensorProto& p, const fs::path& dir = ".") {
  return tensor_from_proto(p, dir, "test.onnx: initializer 't'");
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  std::vector<T> out(static_cast<size_t>(t.numel()));
  std::memcpy(out.data(), t.raw(), t.bytes());
  return out;
}

TEST(OnnxTensor, RawDataFloat) {
  auto p = tensor(onnx::TensorProto::FLOAT, {2, 2});
  p.set_raw_data(bytes_of(std::vector<float>{1, 2, 3, 4}));
  Tensor t = read(p);
  EXPECT_EQ(t.describe(), "float32[2,2]");
  EXPECT_EQ(values<float>(t), (std::vector<float>{1, 2, 3, 4}));
}

TEST(OnnxTensor, FloatAndDoubleAndInt64Fields) {
  auto f = tensor(onnx::TensorProto::FLOAT, {3});
  for (float v : {1.5f, -2.f, 3.f}) f.add_float_data(v);
  EXPECT_EQ(values<float>(read(f)), (std::vector<float>{1.5f, -2.f, 3.f}));

  auto d = tensor(onnx::TensorProto::DOUBLE, {2});
  d.add_double_data(0.25);
  d.add_double_data(-1e300);
  EXPECT_EQ(values<double>(read(d)), (std::vector<double>{0.25, -1e300}));

  auto i = tensor(onnx::TensorProto::INT64, {2});
  i.add_int64_data(int64_t{1} << 40);
  i.add_int64_data(-7);
  EXPECT_EQ(values<int64_t>(read(i)), (std::vector<int64_t>{int64_t{1} << 40, -7}));

  auto c = tensor(onnx::TensorProto::COMPLEX64, {1});
  c.add_float_data(1.f);
  c.add_float_data(-1.f);
  Tensor tc = read(c);  // one element of 8 bytes: real, imaginary
  ASSERT_EQ(tc.bytes(), 8u);
  float parts[2];
  std::memcpy(parts, tc.raw(), 8);
  EXPECT_EQ(parts[0], 1.f);
  EXPECT_EQ(parts[1], -1.f);
}

TEST(OnnxTensor, Int32DataForNarrowIntegersAndBool) {
  auto i32 = tensor(onnx::TensorProto::INT32, {2});
  i32.add_int32_data(-5);
  i32.add_int32_data(1 << 30);
  EXPECT_EQ(values<int32_t>(read(i32)), (std::vector<int32_t>{-5, 1 << 30}));

  auto i16 = tensor(onnx::TensorProto::INT16, {2});
  i16.add_int32_data(-32768);
  i16.add_int32_data(1234);
  EXPECT_EQ(values<int16_t>(read(i16)), (std::vector<int16_t>{-32768, 1234}));

  auto u16 = tensor(onnx::TensorProto::UINT16, {1});
  u16.add_int32_data(65535);
  EXPECT_EQ(values<uint16_t>(read(u16)), (std::vector<uint16_t>{65535}));

  auto i8 = tensor(onnx::TensorProto::INT8, {3});
  for (int v : {-128, 0, 127}) i8.add_int32_data(v);
  EXPECT_EQ(values<int8_t>(read(i8)), (std::vector<int8_t>{-128, 0, 127}));

  auto u8 = tensor(onnx::TensorProto::UINT8, {2});
  u8.add_int32_data(255);
  u8.add_int32_data(7);
  EXPECT_EQ(values<uint8_t>(read(u8)), (std::vector<uint8_t>{255, 7}));

  auto b = tensor(onnx::TensorProto::BOOL, {3});
  for (int v : {1, 0, 5}) b.add_int32_data(v);
  EXPECT_EQ(values<uint8_t>(read(b)), (std::vector<uint8_t>{1, 0, 1}));
}

TEST(OnnxTensor, Int32DataHoldsHalfAndFloat8BitPatterns) {
  auto h = tensor(onnx::TensorProto::FLOAT16, {2});
  h.add_int32_data(float_to_half(1.5f));
  h.add_int32_data(float_to_half(-65504.f));
  Tensor th = read(h);
  EXPECT_EQ(th.to_float_vector(), (std::vector<float>{1.5f, -65504.f}));

  auto bf = tensor(onnx::TensorProto::BFLOAT16, {2});
  bf.add_int32_data(float_to_bfloat16(3.f));
  bf.add_int32_data(float_to_bfloat16(-0.5f));
  EXPECT_EQ(read(bf).to_float_vector(), (std::vector<float>{3.f, -0.5f}));

  for (int code : {17, 18, 19, 20}) {
    auto f8 = tensor(code, {2});
    f8.add_int32_data(0x38);
    f8.add_int32_data(0xC0);
    Tensor t = read(f8);
    EXPECT_EQ(t.bytes(), 2u);
    EXPECT_EQ(values<uint8_t>(t), (std::vector<uint8_t>{0x38, 0xC0})) << "code " << code;
  }
}

TEST(OnnxTensor, Int4PackingFollowsTheSpec) {
  // [1, -2, 3, -4, 5] packs low nibble first: 0xE1, 0xC3, 0x05 (what onnx.helper writes).
  auto p = tensor(dtype_to_onnx(DType::Int4), {5});
  for (int v : {0xE1, 0xC3, 0x05}) p.add_int32_data(v);
  Tensor t = read(p);
  EXPECT_EQ(t.dtype(), DType::Int4);
  ASSERT_EQ(t.bytes(), 3u);
  EXPECT_EQ(values<uint8_t>(Tensor(DType::UInt8, {3}, t.buffer())), (std::vector<uint8_t>{0xE1, 0xC3, 0x05}));

  // An odd count's unused high nibble is cleared.
  auto u = tensor(dtype_to_onnx(DType::UInt4), {3});
  u.add_int32_data(0x21);
  u.add_int32_data(0xF3);
  Tensor tu = read(u);
  EXPECT_EQ(tu.raw()[1], 0x03);

  // int32_data counts packed bytes, not elements.
  auto wrong = tensor(dtype_to_onnx(DType::Int4), {5});
  for (int i = 0; i < 5; ++i) wrong.add_int32_data(1);
  expect_error([&] { read(wrong); }, "has 5 int32_data values, expected 3");

  auto raw = tensor(dtype_to_onnx(DType::UInt4), {4});
  raw.set_raw_data(std::string("\x21\x43", 2));
  EXPECT_EQ(read(raw).bytes(), 2u);
  auto f4 = tensor(dtype_to_onnx(DType::Float4E2M1), {2});
  f4.add_int32_data(0x42);
  EXPECT_EQ(read(f4).dtype(), DType::Float4E2M1);
}

TEST(OnnxTensor, Int2PackingFollowsTheSpec) {
  // int2 [-2, -1, 0, 1, -2]: four per byte, lowest bits first: 0x4E, 0x02 (what
  // onnx.helper.make_tensor writes into int32_data).
  auto p = tensor(dtype_to_onnx(DType::Int2), {5});
  p.add_int32_data(0x4E);
  p.add_int32_data(0xFE);  // stray bits beyond the fifth element are cleared
  Tensor t = read(p);
  EXPECT_EQ(t.describe(), "int2[5]");
  ASSERT_EQ(t.bytes(), 2u);
  EXPECT_EQ(t.raw()[0], 0x4E);
  EXPECT_EQ(t.raw()[1], 0x02);

  // uint2 [0, 1, 2, 3, 3, 2, 1] from raw_data.
  auto u = tensor(dtype_to_onnx(DType::UInt2), {7});
  u.set_raw_data(std::string("\xE4\x1B", 2));
  Tensor tu = read(u);
  EXPECT_EQ(tu.describe(), "uint2[7]");
  EXPECT_EQ(values<uint8_t>(Tensor(DType::UInt8, {2}, tu.buffer())), (std::vector<uint8_t>{0xE4, 0x1B}));

  // int32_data and raw_data both count packed bytes.
  auto wrong = tensor(dtype_to_onnx(DType::UInt2), {5});
  for (int i = 0; i < 5; ++i) wrong.add_int32_data(1);
  expect_error([&] { read(wrong); }, "uint2[5]) has 5 int32_data values, expected 2");
  auto short_raw = tensor(dtype_to_onnx(DType::Int2), {9});
  short_raw.set_raw_data(std::string("\x01\x02", 2));
  expect_error([&] { read(short_raw); }, "has 2 bytes of raw_data, expected 3");
  // A multiple of four elements fills the last byte.
  auto full = tensor(dtype_to_onnx(DType::Int2), {2, 2});
  full.add_int32_data(0xFF);
  EXPECT_EQ(read(full).raw()[0], 0xFF);
}

TEST(OnnxTensor, Float8E8M0OneBytePerElement) {
  // 2^0, 2^-127, NaN and 2^127 as bit patterns: one per int32_data entry, or raw bytes.
  auto p = tensor(dtype_to_onnx(DType::Float8E8M0), {4});
  for (int v : {127, 0, 255, 254}) p.add_int32_data(v);
  Tensor t = read(p);
  EXPECT_EQ(t.describe(), "float8e8m0[4]");
  EXPECT_EQ(values<uint8_t>(Tensor(DType::UInt8, {4}, t.buffer())), (std::vector<uint8_t>{0x7F, 0x00, 0xFF, 0xFE}));
  auto raw = tensor(dtype_to_onnx(DType::Float8E8M0), {2});
  raw.set_raw_data(std::string("\x80\x7e", 2));
  EXPECT_EQ(values<uint8_t>(Tensor(DType::UInt8, {2}, read(raw).buffer())), (std::vector<uint8_t>{0x80, 0x7E}));
  auto wrong = tensor(dtype_to_onnx(DType::Float8E8M0), {3});
  wrong.add_int32_data(1);
  expect_error([&] { read(wrong); }, "float8e8m0[3]) has 1 int32_data values, expected 3");
}

TEST(OnnxTensor, Uint64DataForUnsigned) {
  auto u32 = tensor(onnx::TensorProto::UINT32, {2});
  u32.add_uint64_data(4294967295u);
  u32.add_uint64_data(3);
  EXPECT_EQ(values<uint32_t>(read(u32)), (std::vector<uint32_t>{4294967295u, 3}));
  auto u64 = tensor(onnx::TensorProto::UINT64, {1});
  u64.add_uint64_data(~uint64_t{0});
  EXPECT_EQ(values<uint64_t>(read(u64)), (std::vector<uint64_t>{~uint64_t{0}}));
}

TEST(OnnxTensor, StringData) {
  auto s = tensor(onnx::TensorProto::STRING, {2});
  s.add_string_data("hello");
  s.add_string_data(std::string("a\0b", 3));
  Tensor t = read(s);
  EXPECT_EQ(t.string_data(), (std::vector<std::string>{"hello", std::string("a\0b", 3)}));
  onnx::TensorProto back;
  tensor_to_proto(t, &back);
  EXPECT_EQ(back.string_data_size(), 2);
  EXPECT_FALSE(back.has_raw_data());

  auto raw = tensor(onnx::TensorProto::STRING, {1});
  raw.set_raw_data("x");
  expect_error([&] { read(raw); }, "string tensors cannot use raw_data");
}

TEST(OnnxTensor, EmptyAndScalarTensors) {
  auto e = tensor(onnx::TensorProto::FLOAT, {0, 3});
  EXPECT_EQ(read(e).numel(), 0);
  auto s = tensor(onnx::TensorProto::INT64, {});
  s.add_int64_data(42);
  EXPECT_EQ(read(s).to_int64_vector(), (std::vector<int64_t>{42}));
}

TEST(OnnxTensor, SizeAndTypeErrorsNameTheTensor) {
  auto raw = tensor(onnx::TensorProto::FLOAT, {64, 64});
  raw.set_raw_data(std::string(100, '\0'));
  expect_error([&] { read(raw); },
               "test.onnx: initializer 't' (float32[64,64]) has 100 bytes of raw_data, expected 16384");

  auto few = tensor(onnx::TensorProto::FLOAT, {4});
  few.add_float_data(1);
  expect_error([&] { read(few); }, "(float32[4]) has 1 float_data values, expected 4");

  auto none = tensor(onnx::TensorProto::INT64, {2});
  expect_error([&] { read(none); }, "has no data (expected 2 int64_data values)");

  auto bad = tensor(999, {1});
  expect_error([&] { read(bad); }, "test.onnx: initializer 't' has unknown data_type 999");
  auto newer = tensor(27, {1});  // float6e2m3, newer than octet's dtypes
  expect_error([&] { read(newer); }, "unknown data_type 27");
  auto undef = tensor(0, {1});
  expect_error([&] { read(undef); }, "has no data_type");

  auto neg = tensor(onnx::TensorProto::FLOAT, {2, -1});
  expect_error([&] { read(neg); }, "negative dimension");

  // Huge dims are rejected before anything is allocated.
  auto huge = tensor(onnx::TensorProto::FLOAT, {int64_t{1} << 40, int64_t{1} << 40});
  expect_error([&] { read(huge); }, "too many elements");
  auto big = tensor(onnx::TensorProto::FLOAT, {int64_t{1} << 50});
  big.set_raw_data("abcd");
  expect_error([&] { read(big); }, "has 4 bytes of raw_data, expected 4503599627370496");

  auto seg = tensor(onnx::TensorProto::FLOAT, {1});
  seg.mutable_segment()->set_begin(0);
  expect_error([&] { read(seg); }, "segmented tensors are not supported");
}

TEST(OnnxTensor, ToProtoWritesLittleEndianRawData) {
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16, DType::Int4, DType::UInt4, DType::Int8,
                   DType::Int64, DType::Bool, DType::Float8E5M2, DType::Float64, DType::UInt32, DType::Int2,
                   DType::UInt2, DType::Float8E8M0}) {
    Tensor t(dt, {3, 2});
    for (size_t i = 0; i < t.bytes(); ++i) t.mutable_raw()[i] = static_cast<uint8_t>(i * 37 + 1);
    if (dt == DType::Bool) for (size_t i = 0; i < t.bytes(); ++i) t.mutable_raw()[i] &= 1;
    onnx::TensorProto p;
    tensor_to_proto(t, &p);
    EXPECT_EQ(p.data_type(), static_cast<int32_t>(dt));
    EXPECT_EQ(p.raw_data(), std::string(reinterpret_cast<const char*>(t.raw()), t.bytes()));
    Tensor back = read(p);
    EXPECT_EQ(back.describe(), t.describe());
    EXPECT_EQ(std::memcmp(back.raw(), t.raw(), t.bytes()), 0) << dtype_name(dt);
  }
}

TEST(OnnxTensor, LoadTensorPb) {
  TempDir dir;
  auto p = tensor(onnx::TensorProto::FLOAT, {2});
  p.set_name("input");
  p.set_raw_data(bytes_of(std::vector<float>{7, 8}));
  write_file(dir / "input_0.pb", p.SerializeAsString());
  Tensor t = load_tensor_pb(dir / "input_0.pb");
  EXPECT_EQ(values<float>(t), (std::vector<float>{7, 8}));
  EXPECT_TRUE(t.buffer()->owns_memory());

  p.set_raw_data("xyz");
  write_file(dir / "bad.pb", p.SerializeAsString());
  expect_error([&] { load_tensor_pb(dir / "bad.pb"); },
               (dir / "bad.pb").string() + ": tensor 'input' (float32[2]) has 3 bytes of raw_data, expected 8");
  write_file(dir / "empty.pb", "");
  expect_error([&] { load_tensor_pb(dir / "empty.pb"); }, "file is empty");
  expect_error([&] { load_tensor_pb(dir / "missing.pb"); }, "missing.pb: cannot open");
}

// ---------------------------------------------------------------- external data

class ExternalData : public ::testing::Test {
 protected:
  void SetUp() override {
    std::vector<float> a(256), b(16);
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i);
    for (size_t i = 0; i < b.size(); ++i) b[i] = -static_cast<float>(i);
    std::string bytes = bytes_of(a) + std::string(3, '\0') + bytes_of(b);  // b at offset 1027
    write_file(dir / "weights.bin", bytes);
  }
  onnx::TensorProto ext(const std::string& location, int64_t offset, int64_t length, std::vector<int64_t> dims) {
    auto p = tensor(onnx::TensorProto::FLOAT, std::move(dims));
    set_external(&p, location, offset, length);
    return p;
  }
  Tensor load(const onnx::TensorProto& p) { return read(p, dir.path()); }
  TempDir dir;
};

TEST_F(ExternalData, ReadsAndShares) {
  onnx_io::TensorSource source(dir.path());
  auto pa = ext("weights.bin", 0, 1024, {256});
  auto pa2 = ext("./weights.bin", 512, 64, {16});
  Tensor a = onnx_io::tensor_from_proto(pa, source, "a");
  Tensor a2 = onnx_io::tensor_from_proto(pa2, source, "a2");
  EXPECT_EQ(source.mapped_file_count(), 1u);  // one mapping for both
  EXPECT_FALSE(a.buffer()->owns_memory());
  EXPECT_FALSE(a2.buffer()->owns_memory());
  EXPECT_EQ(a2.raw() - a.raw(), 512);  // both point into the same mapping
  EXPECT_EQ(a.to_float_vector()[255], 255.f);
  EXPECT_EQ(a2.to_float_vector()[0], 128.f);
  // The mapping outlives the source and lives as long as a tensor does.
  Tensor keep = a;
  { onnx_io::TensorSource gone(dir.path()); }
  EXPECT_EQ(keep.to_float_vector()[3], 3.f);
}

TEST_F(ExternalData, MisalignedDataIsCopied) {
  onnx_io::TensorSource source(dir.path());
  auto pb = ext("weights.bin", 1027, 64, {16});
  Tensor b = onnx_io::tensor_from_proto(pb, source, "b");
  EXPECT_TRUE(b.buffer()->owns_memory());
  EXPECT_EQ(b.to_float_vector()[15], -15.f);
}

TEST_F(ExternalData, LengthDefaultsToTheRestOfTheFile) {
  EXPECT_EQ(load(ext("weights.bin", 1024 + 3, -1, {16})).numel(), 16);
}

TEST_F(ExternalData, SizeAndRangeErrors) {
  expect_error([&] { load(ext("weights.bin", 0, 1024, {255})); },
               "initializer 't' (float32[255]) has 1024 bytes of external data, expected 1020");
  expect_error([&] { load(ext("weights.bin", 1000, 1024, {256})); }, "external data range [1000, 2024) exceeds");
  expect_error([&] { load(ext("weights.bin", 5000, 4, {1})); }, "offset 5000 is past the end");
  expect_error([&] { load(ext("weights.bin", 8, -1, {2})); }, "has 1083 bytes of external data, expected 8");
  auto overflow = ext("weights.bin", 16, -1, {1});
  auto* kv = overflow.add_external_data();
  kv->set_key("length");
  kv->set_value("18446744073709551615");
  expect_error([&] { load(overflow); }, "range [16, overflow) exceeds");
  auto bad_num = ext("weights.bin", 0, 4, {1});
  bad_num.mutable_external_data(1)->set_value("-4");
  expect_error([&] { load(bad_num); }, "external data offset '-4' is not a number");
  auto str = tensor(onnx::TensorProto::STRING, {1});
  set_external(&str, "weights.bin", 0, 4);
  expect_error([&] { load(str); }, "string tensors cannot use external data");
}

TEST_F(ExternalData, MissingFile) {
  expect_error([&] { load(ext("nothere.bin", 0, 4, {1})); },
               "test.onnx: initializer 't': external data file 'nothere.bin' not found");
  expect_error([&] { load(ext("", 0, 4, {1})); }, "external data has no location");
  fs::create_directories(dir / "sub");
  expect_error([&] { load(ext("sub", 0, 4, {1})); }, "'sub' is not a regular file");
}

TEST_F(ExternalData, LocationsThatEscapeAreRejected) {
  TempDir outside;
  write_file(outside / "x.bin", std::string(64, '\1'));
  const std::string abs = (outside / "x.bin").string();
  expect_error([&] { load(ext(abs, 0, 4, {1})); }, "external data location '" + abs + "' escapes the model folder");
  // The file exists next to the model folder; a loader without the check would read it.
  fs::path model_dir = outside.path() / "model";
  fs::create_directories(model_dir);
  auto up = ext("../x.bin", 0, 4, {1});
  expect_error([&] { read(up, model_dir); }, "external data location '../x.bin' escapes the model folder");
  auto sneaky = ext("a/../../x.bin", 0, 4, {1});
  expect_error([&] { read(sneaky, model_dir); }, "escapes the model folder");
  auto dots = ext("..", 0, 4, {1});
  expect_error([&] { read(dots, model_dir); }, "escapes the model folder");

  // A symlink inside the folder that resolves outside it.
  fs::create_symlink(outside / "x.bin", model_dir / "link.bin");
  expect_error([&] { read(ext("link.bin", 0, 4, {1}), model_dir); },
               "external data location 'link.bin' escapes the model folder");
  // So does a symlinked directory.
  fs::create_directory_symlink(outside.path(), model_dir / "linkdir");
  expect_error([&] { read(ext("linkdir/x.bin", 0, 4, {1}), model_dir); }, "escapes the model folder");
  // A symlink that stays inside is fine.
  write_file(model_dir / "real.bin", std::string(4, '\0'));
  fs::create_symlink("real.bin", model_dir / "alias.bin");
  EXPECT_EQ(read(ext("alias.bin", 0, 4, {1}), model_dir).numel(), 1);
  // And a subfolder is inside.
  write_file(model_dir / "w" / "d.bin", std::string(8, '\0'));
  EXPECT_EQ(read(ext("w/d.bin", 0, 8, {2}), model_dir).numel(), 2);
}

}  // namespace
}  // namespace octet
