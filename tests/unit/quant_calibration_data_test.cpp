// CalibrationSource: each layout, sample order and limit, the dtype rule, and that every
// error names the file and the problem. Fixtures are written here into a scratch folder.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstring>

#include "io/npy.h"
#include "ir/graph.h"
#include "onnx/model_io.h"
#include "onnx_test_util.h"
#include "quant/calibration_data.h"

namespace octet::quant {
namespace {

using octet::testing::expect_error;
using octet::testing::TempDir;
using octet::testing::write_file;
namespace fs = std::filesystem;

// The model: token ids [batch, seq] and features [batch, 4].
std::vector<InputSpec> model_inputs() {
  return {{"ids", DType::Int64, DimVector{Dim::symbol("batch"), Dim::symbol("seq")}},
          {"x", DType::Float32, DimVector{Dim::symbol("batch"), 4}}};
}

// Sample i: ids [[i, i+1, i+2]], x [[10i, 10i+1, 10i+2, 10i+3]].
Tensor ids_of(int64_t i) { return Tensor::from_vector<int64_t>({1, 3}, {i, i + 1, i + 2}); }
Tensor x_of(int64_t i) {
  const float b = 10.0f * static_cast<float>(i);
  return Tensor::from_vector<float>({1, 4}, {b, b + 1, b + 2, b + 3});
}
NamedArrays sample_arrays(int64_t i) { return {{"x", x_of(i)}, {"ids", ids_of(i)}}; }

// Checks that `s` is sample i (inputs in model order whatever order the file had).
void expect_sample(const NamedTensors& s, int64_t i) {
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].first, "ids");
  EXPECT_EQ(s[1].first, "x");
  EXPECT_EQ(s[0].second.describe(), "int64[1,3]");
  EXPECT_EQ(s[0].second.to_int64_vector(), ids_of(i).to_int64_vector());
  EXPECT_EQ(s[1].second.to_float_vector(), x_of(i).to_float_vector());
}

void write_pb(const fs::path& path, const Tensor& t, const std::string& name) {
  onnx::TensorProto proto;
  tensor_to_proto(t, &proto);
  proto.set_name(name);
  write_file(path, proto.SerializeAsString());
}

// ids [n, 3] and x [n, 4] stacks whose rows are the samples above.
void write_stacks(const fs::path& dir, int64_t n) {
  std::vector<int64_t> ids;
  std::vector<float> x;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t v : ids_of(i).to_int64_vector()) ids.push_back(v);
    for (float v : x_of(i).to_float_vector()) x.push_back(v);
  }
  fs::create_directories(dir);
  write_npy(dir / "ids.npy", Tensor::from_vector<int64_t>({n, 3}, ids));
  write_npy(dir / "x.npy", Tensor::from_vector<float>({n, 4}, x));
}

TEST(CalibData, NpzFolderInNaturalOrderWithLimit) {
  TempDir dir;
  for (int i : {10, 2, 1}) write_npz(dir / ("s" + std::to_string(i) + ".npz"), sample_arrays(i));
  write_file(dir / "README.txt", "calibration set");  // unrelated files are ignored
  auto src = CalibrationSource::open(dir.path().string(), model_inputs());
  EXPECT_EQ(src.layout(), CalibrationSource::Layout::NpzFolder);
  ASSERT_EQ(src.size(), 3u);
  expect_sample(src.sample(0), 1);
  expect_sample(src.sample(1), 2);
  expect_sample(src.sample(2), 10);  // s10 after s2
  EXPECT_EQ(src.describe(), "3 samples from a folder of .npz files '" + dir.path().string() + "'");
  expect_error([&] { src.sample(3); }, "calibration sample 3 requested, but there are 3");

  auto first2 = CalibrationSource::open(dir.path().string(), model_inputs(), 2);
  EXPECT_EQ(first2.size(), 2u);
  EXPECT_EQ(first2.available(), 3u);
  EXPECT_NE(first2.describe().find("first 2 of 3 samples"), std::string::npos) << first2.describe();
  EXPECT_EQ(CalibrationSource::open(dir.path().string(), model_inputs(), 99).size(), 3u);
}

TEST(CalibData, SingleNpzFileIsOneSample) {
  TempDir dir;
  write_npz(dir / "one.npz", sample_arrays(7), {true, false});  // deflated, like savez_compressed
  auto src = CalibrationSource::open((dir / "one.npz").string(), model_inputs());
  EXPECT_EQ(src.layout(), CalibrationSource::Layout::NpzFile);
  ASSERT_EQ(src.size(), 1u);
  expect_sample(src.sample(0), 7);
  EXPECT_NE(src.describe().find("1 sample from the .npz file"), std::string::npos) << src.describe();
}

TEST(CalibData, NpyStacksOfModelRankGiveBatchOneSlices) {
  TempDir dir;
  write_stacks(dir.path(), 5);
  auto src = CalibrationSource::open(dir.path().string(), model_inputs());
  EXPECT_EQ(src.layout(), CalibrationSource::Layout::NpyStacks);
  ASSERT_EQ(src.size(), 5u);
  for (int64_t i = 0; i < 5; ++i) expect_sample(src.sample(i), i);
  EXPECT_NE(src.describe().find("5 samples from .npy stacks"), std::string::npos) << src.describe();
  // Nothing is cached: each sample is read from the file when asked for.
  write_npy(dir / "x.npy", Tensor::from_vector<float>({5, 4}, std::vector<float>(20, -1.0f)));
  EXPECT_EQ(src.sample(4)[1].second.to_float_vector(), std::vector<float>(4, -1.0f));
}

TEST(CalibData, NpyStacksWithALeadingSampleAxis) {
  TempDir dir;
  // ids [3, 2, 3]: 3 samples of batch 2; x [3, 2, 4]; one file per input, any mix of forms.
  std::vector<int64_t> ids(18);
  std::vector<float> x(24);
  for (size_t k = 0; k < ids.size(); ++k) ids[k] = static_cast<int64_t>(k);
  for (size_t k = 0; k < x.size(); ++k) x[k] = 0.5f * static_cast<float>(k);
  write_npy(dir / "ids.npy", Tensor::from_vector<int64_t>({3, 2, 3}, ids));
  write_npy(dir / "x.npy", Tensor::from_vector<float>({3, 2, 4}, x));
  auto src = CalibrationSource::open(dir.path().string(), model_inputs());
  ASSERT_EQ(src.size(), 3u);
  const NamedTensors s = src.sample(2);
  EXPECT_EQ(s[0].second.describe(), "int64[2,3]");
  EXPECT_EQ(s[0].second.to_int64_vector(), (std::vector<int64_t>{12, 13, 14, 15, 16, 17}));
  EXPECT_EQ(s[1].second.describe(), "float32[2,4]");
  EXPECT_EQ(s[1].second.to_float_vector()[0], 8.0f);
}

TEST(CalibData, OnnxTestDataSetsByNameOrPosition) {
  TempDir dir;
  for (int i : {0, 1, 10, 2}) {
    const fs::path set = dir / ("test_data_set_" + std::to_string(i));
    write_pb(set / "input_0.pb", ids_of(i), "ids");
    write_pb(set / "input_1.pb", x_of(i), "");  // unnamed: the model's second input
    write_pb(set / "output_0.pb", x_of(0), "logits");  // expected outputs are not read
  }
  auto src = CalibrationSource::open(dir.path().string(), model_inputs());
  EXPECT_EQ(src.layout(), CalibrationSource::Layout::OnnxTestData);
  ASSERT_EQ(src.size(), 4u);
  expect_sample(src.sample(0), 0);
  expect_sample(src.sample(2), 2);
  expect_sample(src.sample(3), 10);
  // One set given directly.
  auto one = CalibrationSource::open((dir / "test_data_set_2").string(), model_inputs());
  ASSERT_EQ(one.size(), 1u);
  expect_sample(one.sample(0), 2);
  EXPECT_NE(src.describe().find("4 samples from ONNX test data sets in"), std::string::npos);

  // A set missing an input, and one with more inputs than the model.
  TempDir lone;
  write_pb(lone / "input_0.pb", ids_of(0), "ids");
  expect_error([&] { CalibrationSource::open(lone.path().string(), model_inputs()); },
               lone.path().string() + ": no data for model input 'x'");
  write_pb(dir / "test_data_set_0" / "input_2.pb", ids_of(0), "");
  expect_error([&] { CalibrationSource::open(dir.path().string(), model_inputs()); }, "input_2.pb");
}

TEST(CalibData, IntegerAndFloatInputsConvertByTheDocumentedRule) {
  TempDir dir;
  write_npz(dir / "a.npz", {{"ids", Tensor::from_vector<int32_t>({1, 3}, {5, 6, 7})},
                            {"x", Tensor::from_vector<double>({1, 4}, {0.1, 1, 2, 3})}});
  auto src = CalibrationSource::open(dir.path().string(), model_inputs());
  const NamedTensors s = src.sample(0);
  EXPECT_EQ(s[0].second.describe(), "int64[1,3]");
  EXPECT_EQ(s[0].second.to_int64_vector(), (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(s[1].second.describe(), "float32[1,4]");
  EXPECT_EQ(s[1].second.to_float_vector()[0], 0.1f);

  TempDir bad;
  write_npz(bad / "a.npz", {{"ids", ids_of(0)}, {"x", Tensor::from_vector<int32_t>({1, 4}, {1, 2, 3, 4})}});
  expect_error([&] { CalibrationSource::open(bad.path().string(), model_inputs()); },
               "a.npz: input 'x': the file holds int32 but the model takes float32");
  // Integer -> integer only when the values fit.
  std::vector<InputSpec> int32_ids = model_inputs();
  int32_ids[0].dtype = DType::Int32;
  write_npz(bad / "a.npz", {{"ids", Tensor::from_vector<int64_t>({1, 3}, {1, int64_t{1} << 40, 2})}, {"x", x_of(0)}});
  expect_error([&] { CalibrationSource::open(bad.path().string(), int32_ids); },
               "a.npz: input 'ids': value 1099511627776 at flat index 1 does not fit int32");
  write_npz(bad / "a.npz", {{"ids", ids_of(0)}, {"x", Tensor::from_vector<double>({1, 4}, {1e300, 0, 0, 0})}});
  expect_error([&] { CalibrationSource::open(bad.path().string(), model_inputs()); }, "beyond float32's range");
  // A stack's dtype is checked from its header, before any sample is read.
  TempDir stacks;
  write_stacks(stacks.path(), 2);
  write_npy(stacks / "ids.npy", Tensor::from_vector<float>({2, 3}, std::vector<float>(6, 1.0f)));
  expect_error([&] { CalibrationSource::open(stacks.path().string(), model_inputs()); },
               "ids.npy: input 'ids': the file holds float32 but the model takes int64");
}

TEST(CalibData, CorruptFilesAreErrorsNamingTheFile) {
  TempDir dir;
  write_npz(dir / "s1.npz", sample_arrays(1));
  write_npz(dir / "s2.npz", sample_arrays(2));
  const std::string good = octet::io_detail::read_file(dir / "s2.npz");
  write_file(dir / "s2.npz", good.substr(0, good.size() / 2));  // truncated
  auto src = CalibrationSource::open(dir.path().string(), model_inputs());  // only s1 is read now
  expect_error([&] { src.sample(1); }, "s2.npz: corrupt .npz");
  write_file(dir / "s0.npz", "PK\x03\x04 this is not a zip file");
  expect_error([&] { CalibrationSource::open(dir.path().string(), model_inputs()); }, "s0.npz: corrupt .npz");

  TempDir stacks;
  write_stacks(stacks.path(), 3);
  const std::string x = octet::io_detail::read_file(stacks / "x.npy");
  write_file(stacks / "x.npy", x.substr(0, x.size() - 4));
  expect_error([&] { CalibrationSource::open(stacks.path().string(), model_inputs()); }, "x.npy: truncated data");
  write_file(stacks / "x.npy", "garbage");
  expect_error([&] { CalibrationSource::open(stacks.path().string(), model_inputs()); }, "x.npy: not a .npy file");
}

TEST(CalibData, NamesThatAreNotModelInputsAndMissingInputs) {
  TempDir dir;
  write_npz(dir / "a.npz", {{"ids", ids_of(0)}, {"x", x_of(0)}, {"token_type_ids", ids_of(0)}});
  expect_error([&] { CalibrationSource::open(dir.path().string(), model_inputs()); },
               "a.npz: array 'token_type_ids' is not a model input (the model's inputs: ids, x)");
  write_npz(dir / "a.npz", {{"ids", ids_of(0)}});
  expect_error([&] { CalibrationSource::open(dir.path().string(), model_inputs()); },
               "a.npz: no data for model input 'x' (the model's inputs: ids, x; given: ids)");

  TempDir stacks;
  write_stacks(stacks.path(), 3);
  write_npy(stacks / "mask.npy", ids_of(0));
  expect_error([&] { CalibrationSource::open(stacks.path().string(), model_inputs()); },
               "mask.npy: 'mask' is not a model input (the model's inputs: ids, x");
  fs::remove(stacks / "mask.npy");
  fs::remove(stacks / "x.npy");
  expect_error([&] { CalibrationSource::open(stacks.path().string(), model_inputs()); },
               "no x.npy for model input 'x'");
}

TEST(CalibData, ShapesAreCheckedAgainstTheModelInputs) {
  TempDir dir;
  write_npz(dir / "a.npz", {{"ids", Tensor::from_vector<int64_t>({3}, {1, 2, 3})}, {"x", x_of(0)}});
  expect_error([&] { CalibrationSource::open(dir.path().string(), model_inputs()); },
               "a.npz: input 'ids' has rank 1 (shape [3]), expected rank 2");
  write_npz(dir / "a.npz", {{"ids", ids_of(0)}, {"x", Tensor::from_vector<float>({1, 5}, {0, 0, 0, 0, 0})}});
  expect_error([&] { CalibrationSource::open(dir.path().string(), model_inputs()); },
               "a.npz: input 'x' dim 1 is 5, expected 4");
  write_npz(dir / "a.npz", {{"ids", ids_of(0)}, {"x", Tensor(DType::Float32, {2, 4})}});
  expect_error([&] { CalibrationSource::open(dir.path().string(), model_inputs()); },
               "a.npz: input 'x' dim 0 is 2 but 'batch' is already 1 from another input");

  TempDir stacks;
  write_stacks(stacks.path(), 3);
  write_npy(stacks / "x.npy", Tensor(DType::Float32, {3, 1, 1, 4}));
  expect_error([&] { CalibrationSource::open(stacks.path().string(), model_inputs()); },
               "x.npy: input 'x': shape [3,1,1,4] has rank 4, but the model input is [batch,4] (rank 2)");
  write_npy(stacks / "x.npy", Tensor(DType::Float32, {3, 5}));
  expect_error([&] { CalibrationSource::open(stacks.path().string(), model_inputs()); },
               "x.npy (sample 0): input 'x' dim 1 is 5, expected 4");
  // A fixed batch other than 1 cannot be cut into batch-1 slices: the message says what to save.
  std::vector<InputSpec> fixed = model_inputs();
  fixed[1].dims = DimVector{8, 4};
  write_stacks(stacks.path(), 3);
  expect_error([&] { CalibrationSource::open(stacks.path().string(), fixed); },
               "x.npy: input 'x': the model's first dim is fixed at 8");
}

TEST(CalibData, LayoutErrors) {
  TempDir dir;
  expect_error([&] { CalibrationSource::open(dir.path().string(), model_inputs()); }, "the folder is empty");
  write_file(dir / "notes.txt", "x");
  expect_error([&] { CalibrationSource::open(dir.path().string(), model_inputs()); },
               "no calibration samples in the folder; expected .npz files");
  write_npz(dir / "a.npz", sample_arrays(0));
  write_npy(dir / "ids.npy", ids_of(0));
  expect_error([&] { CalibrationSource::open(dir.path().string(), model_inputs()); },
               "mixes calibration layouts (1 .npz files, 1 .npy files)");
  expect_error([&] { CalibrationSource::open((dir / "nope").string(), model_inputs()); }, "nope: no such file or folder");
  expect_error([&] { CalibrationSource::open((dir / "ids.npy").string(), model_inputs()); },
               "ids.npy: a single .npy file is not a calibration set");
  expect_error([&] { CalibrationSource::open((dir / "notes.txt").string(), model_inputs()); },
               "notes.txt: not a .npz file or a folder");

  TempDir stacks;
  write_stacks(stacks.path(), 3);
  write_npy(stacks / "x.npy", Tensor(DType::Float32, {2, 4}));
  expect_error([&] { CalibrationSource::open(stacks.path().string(), model_inputs()); },
               "sample counts differ across the .npy stacks: ids.npy has 3, x.npy has 2");
  write_npy(stacks / "x.npy", Tensor(DType::Float32, {0, 4}));
  write_npy(stacks / "ids.npy", Tensor(DType::Int64, {0, 3}));
  expect_error([&] { CalibrationSource::open(stacks.path().string(), model_inputs()); }, "ids.npy: holds 0 samples");
}

TEST(CalibData, InputSpecsComeFromGraphValues) {
  Graph g;
  const Value* ids = g.add_input("ids", TensorType(DType::Int64, DimVector{Dim::symbol("batch"), 7}));
  const Value* any = g.add_input("any", TensorType(DType::Float16, std::nullopt));
  const std::vector<InputSpec> specs = input_specs({ids, any});
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].name, "ids");
  EXPECT_EQ(specs[0].dtype, DType::Int64);
  EXPECT_EQ(dims_to_string(*specs[0].dims), "[batch,7]");
  EXPECT_FALSE(specs[1].dims.has_value());
}

TEST(CalibData, NpyHeaderGivesTheDataOffset) {
  TempDir dir;
  write_npy(dir / "a.npy", Tensor::from_vector<int16_t>({2, 3}, {1, 2, 3, 4, 5, 6}));
  const NpyHeader h = read_npy_header(dir / "a.npy");
  EXPECT_EQ(h.dtype, DType::Int16);
  EXPECT_EQ(h.shape, (std::vector<int64_t>{2, 3}));
  const std::string bytes = octet::io_detail::read_file(dir / "a.npy");
  EXPECT_EQ(h.data_offset, bytes.size() - 12);  // 6 int16 values follow the header
  EXPECT_EQ(h.data_offset % 64, 0u);  // numpy pads the header to a multiple of 64 bytes
  int16_t last = 0;
  std::memcpy(&last, bytes.data() + h.data_offset + 10, 2);
  EXPECT_EQ(last, 6);
  for (size_t n : {size_t{0}, size_t{5}, size_t{9}, size_t{40}, bytes.size() - 1}) {
    write_file(dir / "cut.npy", bytes.substr(0, n));
    EXPECT_THROW(read_npy_header(dir / "cut.npy"), Error) << n;
  }
}

TEST(CalibHoldout, LastFractionHeldOutFromFiveSamples) {
  auto [calib, held] = split_holdout(10, 0.2);
  EXPECT_EQ(calib, (std::vector<size_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(held, (std::vector<size_t>{8, 9}));
  std::tie(calib, held) = split_holdout(4, 0.5);  // too few: evaluate in-sample
  EXPECT_EQ(calib.size(), 4u);
  EXPECT_TRUE(held.empty());
  std::tie(calib, held) = split_holdout(5, 0.5);  // round(2.5) = 3
  EXPECT_EQ(held, (std::vector<size_t>{2, 3, 4}));
  std::tie(calib, held) = split_holdout(5, 0.99);  // one always stays for calibration
  EXPECT_EQ(calib, (std::vector<size_t>{0}));
  std::tie(calib, held) = split_holdout(7, 0.0);
  EXPECT_TRUE(held.empty());
  EXPECT_TRUE(split_holdout(0, 0.2).first.empty());
  expect_error([] { split_holdout(10, 1.0); }, "hold-out fraction 1 must be in [0, 1)");
}

}  // namespace
}  // namespace octet::quant
