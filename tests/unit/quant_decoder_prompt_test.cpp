// Calibration samples for decoders exported with a KV cache (quant/decoder_prompt.h): a
// sample with input_ids only is completed as the first (prompt) step of generation, and
// the completed sample, run on the with-past fixtures (tiny Llama with GQA, tiny GPT-2),
// gives onnxruntime's prefill logits (tests/models/make_decoder_references.py, step 0).
// A model that is not such a decoder still needs every input; so do a decoder's inputs
// that a prompt step cannot fill.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "cpu_test_util.h"
#include "io/npy.h"
#include "onnx/model_io.h"
#include "onnx_test_util.h"
#include "quant/calibration_data.h"
#include "quant/decoder_prompt.h"
#include "quant/weight_only.h"

namespace octet::quant {
namespace {

using octet::testing::expect_error;
using octet::testing::TempDir;
namespace fs = std::filesystem;

std::string fixture(const std::string& name) { return std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/" + name; }

std::shared_ptr<Graph> load(const std::string& name) { return std::shared_ptr<Graph>(load_model(fixture(name + ".onnx")).graph); }

std::vector<InputSpec> specs_of(const Graph& g) {
  std::vector<const Value*> v;
  for (const Value* i : g.inputs())
    if (!i->is_initializer()) v.push_back(i);
  return input_specs(v);
}

const Tensor& get(const NamedTensors& s, const std::string& name) {
  for (const auto& kv : s)
    if (kv.first == name) return kv.second;
  throw std::runtime_error("no " + name);
}

using octet::testing::max_relative_error;

class DecoderPrompt : public ::testing::TestWithParam<const char*> {};

TEST_P(DecoderPrompt, InputIdsAloneRunAsTheReferencePrefill) {
  const std::string name = GetParam();
  auto g = load(name);
  const std::vector<InputSpec> specs = specs_of(*g);
  ASSERT_TRUE(is_with_past_decoder(specs));
  NamedArrays ref = read_npz(fixture(name + "_steps.npz"));
  auto ref_of = [&](const std::string& key) -> const Tensor& {
    for (const auto& kv : ref)
      if (kv.first == "step0." + key) return kv.second;
    throw std::runtime_error("no reference " + key);
  };
  TempDir dir;
  write_npz(dir / "s0.npz", {{"input_ids", ref_of("input_ids")}});
  const CalibrationSource src = CalibrationSource::open(dir.path().string(), specs);
  const NamedTensors s = src.sample(0);
  ASSERT_EQ(s.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) EXPECT_EQ(s[i].first, specs[i].name);  // model order
  EXPECT_EQ(get(s, "attention_mask").to_int64_vector(), ref_of("attention_mask").to_int64_vector());
  EXPECT_EQ(get(s, "position_ids").to_int64_vector(), ref_of("position_ids").to_int64_vector());
  const std::vector<int64_t> kv_heads_and_dim = {ref_of("present.0.key").shape()[1], ref_of("present.0.key").shape()[3]};
  for (const char* past : {"past_key_values.0.key", "past_key_values.1.value"}) {
    const Tensor& t = get(s, past);
    EXPECT_EQ(t.dtype(), DType::Float32);
    EXPECT_EQ(t.shape(), (std::vector<int64_t>{1, kv_heads_and_dim[0], 0, kv_heads_and_dim[1]})) << past;
  }
  const Session session(g);
  const NamedTensors out = session.run(s);
  EXPECT_LT(max_relative_error(get(out, "logits"), ref_of("logits")), 1e-4) << name;
  EXPECT_LT(max_relative_error(get(out, "present.1.value"), ref_of("present.1.value")), 1e-4) << name;
}

INSTANTIATE_TEST_SUITE_P(Decoders, DecoderPrompt, ::testing::Values("llama_gen_with_past", "gpt2_gen_with_past"));

// Synthetic inputs in optimum's naming; dims as the fixtures declare them.
std::vector<InputSpec> decoder_specs() {
  return {{"input_ids", DType::Int64, DimVector{Dim::symbol("batch"), Dim::symbol("sequence")}},
          {"attention_mask", DType::Int32, DimVector{Dim::symbol("batch"), Dim::symbol("total_sequence")}},
          {"position_ids", DType::Int64, DimVector{Dim::symbol("batch"), Dim::symbol("sequence")}},
          {"past_key_values.0.key", DType::Float32, DimVector{Dim::symbol("batch"), 3, Dim::symbol("past"), 8}}};
}

TEST(DecoderPromptFill, APaddedMaskGivesHuggingFacePositionsAndBatchComesFromTheIds) {
  TempDir dir;
  write_npz(dir / "s.npz", {{"input_ids", Tensor::from_vector<int64_t>({2, 4}, {5, 6, 7, 8, 0, 0, 9, 10})},
                            {"attention_mask", Tensor::from_vector<int64_t>({2, 4}, {1, 1, 1, 1, 0, 0, 1, 1})}});
  const NamedTensors s = CalibrationSource::open(dir.path().string(), decoder_specs()).sample(0);
  EXPECT_EQ(get(s, "attention_mask").dtype(), DType::Int32);  // the given mask, converted to the model's type
  EXPECT_EQ(get(s, "position_ids").to_int64_vector(), (std::vector<int64_t>{0, 1, 2, 3, 1, 1, 0, 1}));
  EXPECT_EQ(get(s, "past_key_values.0.key").shape(), (std::vector<int64_t>{2, 3, 0, 8}));

  // No mask: ones of the model's type (int32 here), positions 0..seq-1 on every row.
  write_npz(dir / "s.npz", {{"input_ids", Tensor::from_vector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6})}});
  const NamedTensors t = CalibrationSource::open(dir.path().string(), decoder_specs()).sample(0);
  EXPECT_EQ(get(t, "attention_mask").describe(), "int32[2,3]");
  EXPECT_EQ(get(t, "attention_mask").to_int64_vector(), (std::vector<int64_t>(6, 1)));
  EXPECT_EQ(get(t, "position_ids").to_int64_vector(), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
}

TEST(DecoderPromptFill, AGivenCacheMovesTheMaskAndPositionsOn) {
  TempDir dir;
  write_npz(dir / "s.npz", {{"input_ids", Tensor::from_vector<int64_t>({1, 3}, {4, 5, 6})},
                            {"past_key_values.0.key", Tensor(DType::Float32, {1, 3, 2, 8})}});
  const NamedTensors s = CalibrationSource::open(dir.path().string(), decoder_specs()).sample(0);
  EXPECT_EQ(get(s, "attention_mask").describe(), "int32[1,5]");
  EXPECT_EQ(get(s, "position_ids").to_int64_vector(), (std::vector<int64_t>{2, 3, 4}));
}

TEST(DecoderPromptFill, NpyStacksNeedOnlyTheIds) {
  TempDir dir;
  write_npy(dir / "input_ids.npy", Tensor::from_vector<int64_t>({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  const CalibrationSource src = CalibrationSource::open(dir.path().string(), decoder_specs());
  ASSERT_EQ(src.size(), 3u);
  const NamedTensors s = src.sample(2);
  EXPECT_EQ(get(s, "input_ids").to_int64_vector(), (std::vector<int64_t>{9, 10, 11, 12}));
  EXPECT_EQ(get(s, "position_ids").to_int64_vector(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(get(s, "past_key_values.0.key").shape(), (std::vector<int64_t>{1, 3, 0, 8}));
}

TEST(DecoderPromptFill, InputsAPromptStepCannotFillAreErrorsNamingThem) {
  TempDir dir;
  write_npz(dir / "s.npz", {{"input_ids", Tensor::from_vector<int64_t>({1, 2}, {1, 2})}});
  std::vector<InputSpec> merged = decoder_specs();
  merged.push_back({"use_cache_branch", DType::Bool, DimVector{1}});
  expect_error([&] { CalibrationSource::open(dir.path().string(), merged); },
               "s.npz: no data for model input 'use_cache_branch' (the model's inputs: input_ids, attention_mask, "
               "position_ids, past_key_values.0.key, use_cache_branch; given: input_ids); a decoder's samples may "
               "leave out only attention_mask, position_ids, past_key_values.* (1), which are filled as a first "
               "(prompt) step gets them");

  // The ids themselves are the window: never made up.
  write_npz(dir / "s.npz", {{"attention_mask", Tensor::from_vector<int64_t>({1, 2}, {1, 1})}});
  expect_error([&] { CalibrationSource::open(dir.path().string(), decoder_specs()); },
               "no data for model input 'input_ids'");

  // Part of a cache given: the rest cannot be made up as empty.
  std::vector<InputSpec> two_layers = decoder_specs();
  two_layers.push_back({"past_key_values.0.value", DType::Float32, DimVector{Dim::symbol("batch"), 3, Dim::symbol("past"), 8}});
  write_npz(dir / "s.npz", {{"input_ids", Tensor::from_vector<int64_t>({1, 2}, {1, 2})},
                            {"past_key_values.0.key", Tensor(DType::Float32, {1, 3, 5, 8})}});
  expect_error([&] { CalibrationSource::open(dir.path().string(), two_layers); },
               "input 'past_key_values.0.value': the sample's other inputs make its shape [1,3,5,8], a cache that is "
               "not empty; give every past_key_values.* input or none");

  // A cache whose head count is symbolic and unbound: the empty cache's shape is unknown.
  std::vector<InputSpec> unknown_heads = decoder_specs();
  unknown_heads[3].dims = DimVector{Dim::symbol("batch"), Dim::symbol("heads"), Dim::symbol("past"), 8};
  write_npz(dir / "s.npz", {{"input_ids", Tensor::from_vector<int64_t>({1, 2}, {1, 2})}});
  expect_error([&] { CalibrationSource::open(dir.path().string(), unknown_heads); },
               "input 'past_key_values.0.key': declared [batch,heads,past,8], of which 2 dims are neither constant "
               "nor bound");
}

TEST(DecoderPromptFill, AModelWithoutACacheStillNeedsEveryInput) {
  // An encoder's (or a decoder without past's) attention_mask is not made up.
  std::vector<InputSpec> encoder = decoder_specs();
  encoder.pop_back();
  EXPECT_FALSE(is_with_past_decoder(encoder));
  TempDir dir;
  write_npz(dir / "s.npz", {{"input_ids", Tensor::from_vector<int64_t>({1, 2}, {1, 2})}});
  expect_error([&] { CalibrationSource::open(dir.path().string(), encoder); },
               "s.npz: no data for model input 'attention_mask' (the model's inputs: input_ids, attention_mask, "
               "position_ids; given: input_ids)");
  TempDir stacks;
  write_npy(stacks / "input_ids.npy", Tensor::from_vector<int64_t>({1, 2}, {1, 2}));
  expect_error([&] { CalibrationSource::open(stacks.path().string(), encoder); },
               "no attention_mask.npy for model input 'attention_mask'");
}

TEST(DecoderPromptFill, GptqWeightOnlyCalibratesTheWithPastExportOnIdsAlone) {
  TempDir dir;
  fs::create_directories(dir / "calib");
  for (int64_t i = 0; i < 3; ++i) {
    const char* names[] = {"s0.npz", "s1.npz", "s2.npz"};
    write_npz(dir / "calib" / names[i], {{"input_ids", Tensor::from_vector<int64_t>({1, 6}, {3 + i, 17, 40 + i, 99, 5, 200 - i})}});
  }
  WeightOnlyJob job;
  job.model = fixture("llama_gen_with_past.onnx");
  job.output = dir / "q.onnx";
  job.options.bits = 4;
  job.options.block = 16;
  job.options.gptq = true;
  job.calib = (dir / "calib").string();
  job.progress = false;
  const WeightOnlyReport report = quantize_weights_only(job);
  EXPECT_EQ(report.calibration_samples, 3u);
  EXPECT_EQ(report.to_json()["calibration_samples"], 3);  // the recipe bench/decode_prepare.py records
  EXPECT_GT(report.gptq_layers, 0u);
  EXPECT_TRUE(fs::exists(job.output));
}

}  // namespace
}  // namespace octet::quant
