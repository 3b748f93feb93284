// The decoder probe behind the default activation mode (quant/default_mode.h), on the
// exporter fixtures: torch.onnx.export's GPT-2 (causal) and BERT (bidirectional), and on
// inputs the probe must leave alone.
#include <gtest/gtest.h>

#include "quant/default_mode.h"
#include "quant_fixture_util.h"

namespace octet::quant {
namespace {

using testing::fixture_inputs;
using testing::level1;

std::optional<std::string> probe(const std::string& name, const NamedTensors& sample) {
  return causal_decoder_evidence(Session(std::shared_ptr<const Graph>(level1(name))), sample);
}

std::optional<std::string> probe(const std::string& name) { return probe(name, fixture_inputs(name, *level1(name))); }

TEST(DefaultModeProbe, Gpt2IsACausalDecoder) {
  const auto evidence = probe("gpt2_tiny");
  ASSERT_TRUE(evidence.has_value());
  EXPECT_NE(evidence->find("'logits'"), std::string::npos) << *evidence;
  EXPECT_NE(evidence->find("causal decoder"), std::string::npos) << *evidence;
}

TEST(DefaultModeProbe, BertSeesLaterTokens) { EXPECT_FALSE(probe("bert_tiny").has_value()); }

// A padded sample hides its tail behind the mask: the probe attends every position, so a
// bidirectional encoder still shows that its first half sees the second (a padded
// paraphrase-MiniLM sample passed for causal before).
TEST(DefaultModeProbe, PaddedSamplesDoNotMakeAnEncoderCausal) {
  NamedTensors sample = fixture_inputs("bert_tiny", *level1("bert_tiny"));
  bool masked = false;
  for (auto& [name, t] : sample) {
    if (name != "attention_mask") continue;
    std::vector<int64_t> mask = t.to_int64_vector();
    const int64_t len = t.shape()[1];
    for (size_t i = 0; i < mask.size(); ++i) mask[i] = static_cast<int64_t>(i) % len < len / 2 ? 1 : 0;
    t = Tensor::from_vector<int64_t>(t.shape(), mask);
    masked = true;
  }
  ASSERT_TRUE(masked) << "bert_tiny has no attention_mask input";
  EXPECT_FALSE(probe("bert_tiny", sample).has_value());
}

TEST(DefaultModeProbe, NoTokenInputIsNotProbed) { EXPECT_FALSE(probe("vit_tiny").has_value()); }

// A sample whose tokens are all the same cannot be altered: no evidence either way.
TEST(DefaultModeProbe, ConstantTokensAreInconclusive) {
  NamedTensors sample = fixture_inputs("gpt2_tiny", *level1("gpt2_tiny"));
  for (auto& [name, t] : sample) {
    if (name != "input_ids") continue;
    std::vector<int64_t> same(static_cast<size_t>(t.numel()), 7);
    t = Tensor::from_vector<int64_t>(t.shape(), same);
  }
  EXPECT_FALSE(probe("gpt2_tiny", sample).has_value());
}

// Too short to split into a prefix and a changed tail.
TEST(DefaultModeProbe, ShortSequencesAreNotProbed) {
  NamedTensors sample = fixture_inputs("gpt2_tiny", *level1("gpt2_tiny"));
  NamedTensors shortened;
  for (auto& [name, t] : sample) {
    if (t.rank() != 2) continue;
    const std::vector<int64_t> all = t.to_int64_vector();
    shortened.emplace_back(name, Tensor::from_vector<int64_t>({1, 3}, {all[0], all[1], all[2]}));
  }
  EXPECT_FALSE(probe("gpt2_tiny", shortened).has_value());
}

}  // namespace
}  // namespace octet::quant
