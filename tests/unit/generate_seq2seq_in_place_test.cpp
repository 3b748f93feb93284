// The seq2seq in-place runner (seq2seq_in_place_runner.h) on the encoder-decoder fixtures
// (tests/models/fixtures/seq2seq: Marian, Whisper, T5 shapes, random weights, optimum's
// decoder_model + decoder_with_past_model):
//   - the rewrite: every self-attention becomes CachedAttention (no Concat on a past input
//     is left), every cross-attention stays GroupedAttention on its past_key_values input;
//   - teacher forcing through the runner gives torch's logits (reference.npz), the strong
//     cache check (random models repeat tokens under greedy decoding);
//   - greedy and beam tokens equal the portable runner's and torch's;
//   - no step moves the caches: their memory stays where reserve() put it;
//   - what it cannot drive is refused with a reason (no first-step model).
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "generate/in_place_cache.h"
#include "generate/portable_runner.h"
#include "generate/runner_factory.h"
#include "generate/seq2seq_in_place_runner.h"
#include "generate/seq2seq_loop.h"
#include "io/npy.h"
#include "onnx/model_io.h"
#include "pass_test_util.h"
#include "passes/pipeline.h"

namespace octet::generate {
namespace {

std::string folder(const std::string& name) {
  return std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/seq2seq/" + name + "/";
}

std::map<std::string, Tensor> reference(const std::string& name) {
  std::map<std::string, Tensor> out;
  for (auto& [k, v] : read_npz(folder(name) + "reference.npz")) out[k] = v;
  return out;
}

RunnerOptions options() {
  RunnerOptions o;
  o.session.threads = 1;
  return o;
}

DecoderFiles files(const std::string& name) {
  return {folder(name) + "decoder_with_past_model.onnx", folder(name) + "decoder_model.onnx"};
}

std::unique_ptr<DecoderRunner> in_place(const std::string& name) {
  std::string why;
  auto runner = make_decoder_runner(files(name), options(), &why);
  EXPECT_FALSE(seq2seq_cache_memory(*runner).empty()) << name << " took the portable runner: " << why;
  return runner;
}

std::unique_ptr<DecoderRunner> portable(const std::string& name) {
  const RunnerOptions o = options();
  return std::make_unique<PortableRunner>(load_session(files(name).with_past, o), load_session(files(name).first, o));
}

NamedTensors encoder_inputs(const std::string& name, std::map<std::string, Tensor>& ref) {
  if (ref.count("input_features")) return {{"input_features", ref.at("input_features")}};
  return {{"input_ids", ref.at("input_ids")}, {"attention_mask", ref.at("attention_mask")}};
}

std::vector<int64_t> ints(const Tensor& t) {
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

class Seq2SeqInPlace : public ::testing::TestWithParam<const char*> {};

TEST_P(Seq2SeqInPlace, SelfAttentionCachedCrossAttentionReadInPlace) {
  const std::string name = GetParam();
  auto g = std::shared_ptr<Graph>(load_model(files(name).with_past).graph);
  optimize(*g);
  std::string why;
  RewriteOptions ro;
  ro.read_only_inputs = true;
  const std::vector<CacheSlot> slots = rewrite_in_place(*g, ro, why);
  ASSERT_EQ(slots.size(), 4u) << why;  // 2 layers x (key, value)
  EXPECT_EQ(testing::count_ops(*g, "CachedAttention", "octet"), 2);
  EXPECT_EQ(testing::count_ops(*g, "GroupedAttention", "octet"), 2);
  for (const Node* n : g->nodes()) {
    for (const Value* in : n->inputs()) {
      if (!in || in->name().rfind("past_key_values.", 0) != 0) continue;
      const bool decoder = in->name().find(".decoder.") != std::string::npos;
      // the self-attention past is read by Shape at most; the cross-attention's by its attention
      if (decoder) {
        EXPECT_EQ(n->op_type(), "Shape") << n->describe();
      } else if (n->op_type() != "Shape") {
        EXPECT_EQ(n->op_type(), "GroupedAttention") << n->describe();
      }
    }
  }
  // Without read_only_inputs the cross-attention is a refusal, not a silent rewrite.
  auto plain = std::shared_ptr<Graph>(load_model(files(name).with_past).graph);
  optimize(*plain);
  EXPECT_TRUE(rewrite_in_place(*plain, {}, why).empty());
  EXPECT_NE(why.find("is not Concat(past, new)"), std::string::npos) << why;
}

TEST_P(Seq2SeqInPlace, TeacherForcedLogitsEqualTorch) {
  const std::string name = GetParam();
  auto ref = reference(name);
  auto encoder = load_session(folder(name) + "encoder_model.onnx", options());
  const Tensor hidden = encoder->run(encoder_inputs(name, ref)).front().second;
  auto runner = in_place(name);
  runner->reserve(3);  // too small on purpose: the caches grow once, keeping their rows
  const std::vector<int64_t> ids = ints(ref.at("decoder_input_ids"));
  const Tensor& logits = ref.at("logits");
  const int64_t vocab = logits.shape()[2];
  DecoderStep step;
  step.extra_inputs = {{"encoder_hidden_states", hidden},
                       {"encoder_attention_mask", Tensor::from_vector<int64_t>({1, hidden.shape()[1]},
                                                                  std::vector<int64_t>(hidden.shape()[1], 1))}};
  for (size_t i = 0; i < ids.size(); ++i) {
    step.tokens = {ids[i]};
    const Tensor got = runner->step(step);
    double diff = 0, mag = 1e-12;
    for (int64_t v = 0; v < vocab; ++v) {
      const float want = logits.data<float>()[i * vocab + v];
      diff = std::max(diff, double(std::fabs(got.data<float>()[v] - want)));
      mag = std::max(mag, double(std::fabs(want)));
    }
    EXPECT_LE(diff / mag, 1e-4) << name << " step " << i;
  }
  EXPECT_EQ(runner->cached_tokens(), static_cast<int64_t>(ids.size()));
}

TEST_P(Seq2SeqInPlace, GreedyAndBeamTokensEqualPortableAndTorch) {
  const std::string name = GetParam();
  auto ref = reference(name);
  auto encoder = load_session(folder(name) + "encoder_model.onnx", options());
  const std::vector<int64_t> greedy = ints(ref.at("greedy_tokens"));
  Seq2SeqConfig c;
  c.decoder_start_ids = {greedy[0]};
  c.generation.max_new_tokens = static_cast<int64_t>(greedy.size()) - 1;
  auto fast = in_place(name), slow = portable(name);
  const auto got = generate_seq2seq(*encoder, *fast, encoder_inputs(name, ref), c).tokens;
  EXPECT_EQ(got, generate_seq2seq(*encoder, *slow, encoder_inputs(name, ref), c).tokens) << name;
  EXPECT_EQ(got, std::vector<int64_t>(greedy.begin() + 1, greedy.end())) << name;
  if (!ref.count("beam_tokens")) return;  // Whisper: its generate forces tokens, no beam reference
  const std::vector<int64_t> beam = ints(ref.at("beam_tokens"));
  c.num_beams = 3;
  c.generation.max_new_tokens = 12;
  c.generation.stop_token_ids = {name == "t5" ? 1 : 0};
  const auto beams = generate_seq2seq(*encoder, *fast, encoder_inputs(name, ref), c).tokens;
  EXPECT_EQ(beams, generate_seq2seq(*encoder, *slow, encoder_inputs(name, ref), c).tokens) << name;
  EXPECT_EQ(beams, std::vector<int64_t>(beam.begin() + 1, beam.end())) << name;
  // The runner is reused: a greedy run after the beam search (reset, batch 1) is unchanged.
  c.num_beams = 1;
  c.generation.max_new_tokens = static_cast<int64_t>(greedy.size()) - 1;
  c.generation.stop_token_ids.clear();
  EXPECT_EQ(generate_seq2seq(*encoder, *fast, encoder_inputs(name, ref), c).tokens, got) << name;
}

TEST_P(Seq2SeqInPlace, StepsNeitherMoveNorCopyTheCaches) {
  const std::string name = GetParam();
  auto ref = reference(name);
  auto encoder = load_session(folder(name) + "encoder_model.onnx", options());
  const Tensor hidden = encoder->run(encoder_inputs(name, ref)).front().second;
  auto runner = in_place(name);
  runner->reserve(16);
  DecoderStep step;
  step.extra_inputs = {{"encoder_hidden_states", hidden},
                       {"encoder_attention_mask", Tensor::from_vector<int64_t>({1, hidden.shape()[1]},
                                                                  std::vector<int64_t>(hidden.shape()[1], 1))}};
  step.tokens = {ints(ref.at("greedy_tokens"))[0]};
  runner->step(step);
  const std::vector<const void*> first = seq2seq_cache_memory(*runner);
  ASSERT_EQ(first.size(), 8u);  // 4 self-attention caches, 4 cross-attention keys/values
  for (int i = 0; i < 10; ++i) {
    step.tokens = {3 + i};
    runner->step(step);
    EXPECT_EQ(seq2seq_cache_memory(*runner), first) << name << " step " << i + 1;
  }
}

// Rows from different sources (their cross-attention keys/values differ): reorder_rows
// must move those with the self-attention rows, to a larger batch too.
TEST_P(Seq2SeqInPlace, ReorderRowsMovesTheCrossAttentionRows) {
  const std::string name = GetParam();
  auto ref = reference(name);
  auto encoder = load_session(folder(name) + "encoder_model.onnx", options());
  const Tensor hidden = encoder->run(encoder_inputs(name, ref)).front().second;
  const int64_t n = hidden.numel(), len = hidden.shape()[1], width = hidden.shape()[2];
  // the encoder states of sources {0, 1, ...}: source 1 is -0.5 x source 0
  auto states = [&](const std::vector<int>& sources) {
    std::vector<float> rows;
    for (int src : sources)
      for (int64_t i = 0; i < n; ++i) rows.push_back((src ? -0.5f : 1.0f) * hidden.data<float>()[i]);
    const int64_t b = static_cast<int64_t>(sources.size());
    return NamedTensors{{"encoder_hidden_states", Tensor::from_vector<float>({b, len, width}, rows)},
                        {"encoder_attention_mask", Tensor::from_vector<int64_t>({b, len}, std::vector<int64_t>(b * len, 1))}};
  };
  const int64_t start = ints(ref.at("greedy_tokens"))[0];
  auto fast = in_place(name), slow = portable(name);
  std::vector<Tensor> got[2];
  int k = 0;
  for (DecoderRunner* r : {fast.get(), slow.get()}) {
    DecoderStep s;
    s.batch = 2;
    s.tokens = {start, start};
    s.extra_inputs = states({0, 1});
    r->step(s);
    r->reorder_rows({1, 0, 1});
    s.batch = 3;
    s.tokens = {5, 6, 7};
    s.extra_inputs = states({1, 0, 1});
    got[k].push_back(r->step(s));
    r->reorder_rows({2, 0});
    s.batch = 2;
    s.tokens = {8, 9};
    s.extra_inputs = states({1, 1});
    got[k++].push_back(r->step(s));
  }
  for (size_t i = 0; i < got[0].size(); ++i) {
    ASSERT_EQ(got[0][i].shape(), got[1][i].shape());
    for (int64_t j = 0; j < got[0][i].numel(); ++j)
      ASSERT_NEAR(got[0][i].data<float>()[j], got[1][i].data<float>()[j], 1e-4) << name << " step " << i << " " << j;
  }
}

// optimum's merged decoder (an If on use_cache_branch) runs in place too, its branches
// taken as the split files; the tokens are the split files' and torch's.
TEST_P(Seq2SeqInPlace, MergedDecoderRunsInPlace) {
  const std::string name = GetParam();
  auto ref = reference(name);
  auto encoder = load_session(folder(name) + "encoder_model.onnx", options());
  std::string why;
  auto merged = make_decoder_runner({folder(name) + "decoder_model_merged.onnx", ""}, options(), &why);
  ASSERT_FALSE(seq2seq_cache_memory(*merged).empty()) << why;
  const std::vector<int64_t> greedy = ints(ref.at("greedy_tokens"));
  Seq2SeqConfig c;
  c.decoder_start_ids = {greedy[0]};
  c.generation.max_new_tokens = static_cast<int64_t>(greedy.size()) - 1;
  EXPECT_EQ(generate_seq2seq(*encoder, *merged, encoder_inputs(name, ref), c).tokens,
            std::vector<int64_t>(greedy.begin() + 1, greedy.end()));
  if (!ref.count("beam_tokens")) return;
  const std::vector<int64_t> beam = ints(ref.at("beam_tokens"));
  c.num_beams = 3;
  c.generation.max_new_tokens = 12;
  c.generation.stop_token_ids = {name == "t5" ? 1 : 0};
  EXPECT_EQ(generate_seq2seq(*encoder, *merged, encoder_inputs(name, ref), c).tokens,
            std::vector<int64_t>(beam.begin() + 1, beam.end()));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Seq2SeqInPlace, ::testing::Values("marian", "whisper", "t5"));

TEST(Seq2SeqInPlaceRefusal, NeedsTheFirstStepModel) {
  std::string why;
  auto g = std::shared_ptr<Graph>(load_model(files("marian").with_past).graph);
  EXPECT_EQ(make_seq2seq_in_place_runner(g, nullptr, {}, &why), nullptr);
  EXPECT_NE(why.find("decoder_model.onnx"), std::string::npos) << why;
  // The factory then takes the portable runner and says why.
  why.clear();
  auto runner = make_decoder_runner({files("marian").with_past, ""}, options(), &why);
  EXPECT_TRUE(seq2seq_cache_memory(*runner).empty());
  EXPECT_FALSE(why.empty());
}

}  // namespace
}  // namespace octet::generate
