// one_token_steps.h: which with-past files declare one new token per step (optimum's legacy
// exports do -- Llama's really computes wrong logits for more, GPT-2's happens not to --
// octet's own torch.onnx fixtures and the no-past files do not), and how the wrapper
// splits a step: column by column, every row's i-th token together, the logits of the last;
// a first step stays whole when a first-step file takes it. The end-to-end check against
// transformers' tokens is tests/python/test_generate_optimum_legacy.py.
#include <gtest/gtest.h>

#include "generate/one_token_steps.h"
#include "onnx/model_io.h"

namespace octet::generate {
namespace {

std::string fixture(const std::string& path) { return std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/" + path; }

TEST(OneTokenSteps, DetectsTheDeclaredOneTokenContract) {
  EXPECT_TRUE(takes_one_new_token(*load_model(fixture("optimum_decoders/llama/decoder_with_past_model.onnx")).graph));
  EXPECT_TRUE(takes_one_new_token(*load_model(fixture("optimum_decoders/gpt2/decoder_with_past_model.onnx")).graph));
  EXPECT_FALSE(takes_one_new_token(*load_model(fixture("optimum_decoders/llama/decoder_model.onnx")).graph));
  EXPECT_FALSE(takes_one_new_token(*load_model(fixture("llama_gen_with_past.onnx")).graph));
}

// Records every step it is given; its "logits" are [batch, 1] holding the step's count.
class Recorder : public DecoderRunner {
 public:
  std::vector<std::vector<int64_t>> steps;
  Tensor step(const DecoderStep& s) override {
    steps.push_back(s.tokens);
    cached_ += static_cast<int64_t>(s.tokens.size()) / s.batch;
    Tensor t(DType::Float32, {s.batch, 1});
    for (int64_t r = 0; r < s.batch; ++r) t.mutable_data<float>()[r] = static_cast<float>(steps.size());
    return t;
  }
  int64_t cached_tokens() const override { return cached_; }
  void reorder_rows(const std::vector<int64_t>&) override {}
  void reset() override { cached_ = 0; }
  int64_t cached_ = 0;
};

TEST(OneTokenSteps, SplitsStepsColumnByColumn) {
  auto owned = std::make_unique<Recorder>();
  Recorder* rec = owned.get();
  auto runner = one_token_steps(std::move(owned), /*whole_first_step=*/false);
  DecoderStep s;
  s.batch = 2;
  s.tokens = {1, 2, 3, 4, 5, 6};  // rows {1,2,3} and {4,5,6}
  Tensor logits = runner->step(s);
  ASSERT_EQ(rec->steps.size(), 3u);
  EXPECT_EQ(rec->steps[0], (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(rec->steps[2], (std::vector<int64_t>{3, 6}));
  EXPECT_EQ(logits.data<float>()[1], 3.0f);  // the last step's
  EXPECT_EQ(runner->cached_tokens(), 3);
  s.tokens = {7, 8};
  runner->step(s);
  EXPECT_EQ(rec->steps.size(), 4u);
  s.tokens = {1};  // 1 token, batch 2: an error, not a split
  EXPECT_THROW(runner->step(s), Error);
}

TEST(OneTokenSteps, KeepsTheFirstStepWholeForAFirstStepFile) {
  auto owned = std::make_unique<Recorder>();
  Recorder* rec = owned.get();
  auto runner = one_token_steps(std::move(owned), /*whole_first_step=*/true);
  DecoderStep s;
  s.tokens = {1, 2, 3};
  runner->step(s);
  ASSERT_EQ(rec->steps.size(), 1u);
  runner->step(s);  // a later chunk goes one token at a time
  EXPECT_EQ(rec->steps.size(), 4u);
  runner->reset();
  runner->step(s);
  EXPECT_EQ(rec->steps.size(), 5u);
}

}  // namespace
}  // namespace octet::generate
