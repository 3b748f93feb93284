// The portable KV-cache runner on the tiny Llama fixture (GQA, exported with past in optimum's
// naming): stepping through a sequence with the cache gives the logits of running it whole,
// reorder_rows moves each row's cache with it, reset forgets, and models it cannot drive are
// refused by name.
#include <gtest/gtest.h>

#include "generate/portable_runner.h"
#include "generate/runner_factory.h"
#include "octet/error.h"

namespace octet::generate {
namespace {

const std::string kFixtures = std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/";

std::unique_ptr<DecoderRunner> llama() {
  RunnerOptions o;
  o.session.threads = 1;
  return make_decoder_runner({kFixtures + "llama_gen_with_past.onnx", ""}, o);
}

std::vector<float> row(const Tensor& logits, int64_t r) {
  const int64_t vocab = logits.shape()[1];
  return std::vector<float>(logits.data<float>() + r * vocab, logits.data<float>() + (r + 1) * vocab);
}

void expect_near(const std::vector<float>& a, const std::vector<float>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4) << i;
}

Tensor step(DecoderRunner& runner, std::vector<int64_t> tokens, int64_t batch = 1) {
  DecoderStep s;
  s.tokens = std::move(tokens);
  s.batch = batch;
  return runner.step(s);
}

TEST(GeneratePortableRunner, CachedStepsEqualTheWholeSequence) {
  auto whole = llama();
  const Tensor all = step(*whole, {5, 17, 99, 3, 200});
  EXPECT_EQ(whole->cached_tokens(), 5);
  auto stepped = llama();
  step(*stepped, {5, 17});
  step(*stepped, {99});
  const Tensor last = step(*stepped, {3, 200});  // a chunk after the cache
  EXPECT_EQ(stepped->cached_tokens(), 5);
  expect_near(row(last, 0), row(all, 0));
  stepped->reset();
  EXPECT_EQ(stepped->cached_tokens(), 0);
  expect_near(row(step(*stepped, {5, 17, 99, 3, 200}), 0), row(all, 0));
}

TEST(GeneratePortableRunner, ReorderRowsMovesEachRowsCache) {
  auto a = llama(), b = llama(), batched = llama();
  step(*a, {1, 2, 3});
  step(*b, {7, 8, 9});
  step(*batched, {1, 2, 3, 7, 8, 9}, 2);
  // Rows swapped and the second duplicated: [b, a, a].
  batched->reorder_rows({1, 0, 0});
  const Tensor next = step(*batched, {40, 41, 42}, 3);
  expect_near(row(next, 0), row(step(*b, {40}), 0));
  expect_near(row(next, 1), row(step(*a, {41}), 0));
  auto a2 = llama();
  step(*a2, {1, 2, 3});
  expect_near(row(next, 2), row(step(*a2, {42}), 0));
  EXPECT_THROW(batched->reorder_rows({3}), Error);  // no row 3
}

TEST(GeneratePortableRunner, RefusesWhatItCannotDrive) {
  RunnerOptions o;
  o.session.threads = 1;
  try {
    make_decoder_runner({kFixtures + "gpt2_tiny.onnx", ""}, o);  // no KV cache
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("past_key_values"), std::string::npos) << e.what();
  }
  auto runner = llama();
  EXPECT_THROW(step(*runner, {1, 2, 3}, 2), Error);  // 3 tokens in 2 rows
  EXPECT_THROW(step(*runner, {}), Error);
  step(*runner, {1, 2});
  EXPECT_THROW(step(*runner, {1, 2}, 2), Error);  // batch changed without reorder_rows
}

}  // namespace
}  // namespace octet::generate
