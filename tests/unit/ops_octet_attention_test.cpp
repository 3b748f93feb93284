// octet.Attention: the inference rule (symbolic dims, both layouts, errors naming the
// node) and the reference kernel on cases small enough to compute by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ops_shape_test_util.h"
#include "ref_math_test_util.h"

namespace octet {
namespace {

using testing::contains;
using testing::error_of;
using testing::S;

std::string infer_error(DimVector q, DimVector k, DimVector v, std::optional<DimVector> mask,
                        std::vector<Attribute> attrs) {
  testing::GraphBuilder b;
  b.g.opset_imports["octet"] = 1;
  b.input("q", DType::Float32, q);
  b.input("k", DType::Float32, k);
  b.input("v", DType::Float32, v);
  std::vector<std::string> ins = {"q", "k", "v"};
  if (mask) {
    b.input("mask", DType::Float32, *mask);
    ins.push_back("mask");
  }
  b.g.add_node("Attention", ins, {"y"}, std::move(attrs), "octet", "attn");
  return error_of([&] { b.infer(); });
}

TEST(OctetAttention, InferenceBothLayouts) {
  testing::GraphBuilder b;
  b.g.opset_imports["octet"] = 1;
  b.input("q", DType::Float32, DimVector{S("batch"), S("seq"), 64});
  b.input("k", DType::Float32, DimVector{S("batch"), S("past") + S("seq"), 64});
  b.input("v", DType::Float32, DimVector{S("batch"), S("past") + S("seq"), 32});
  b.input("mask", DType::Float32, DimVector{S("batch"), 1, 1, S("past") + S("seq")});
  b.input("qs", DType::Float32, DimVector{197, S("batch"), 64});
  b.g.add_node("Attention", {"q", "k", "v", "mask"}, {"y"}, {Attribute::make_int("num_heads", 4)}, "octet");
  b.g.add_node("Attention", {"qs", "qs", "qs"}, {"ys"},
               {Attribute::make_int("num_heads", 4), Attribute::make_int("seq_first", 1)}, "octet");
  b.infer();
  EXPECT_EQ(dims_to_string(b.dims("y")), "[batch,seq,32]");
  EXPECT_EQ(dims_to_string(b.dims("ys")), "[197,batch,64]");
}

TEST(OctetAttention, InferenceErrorsNameTheNode) {
  const DimVector x = {2, 5, 16};
  auto heads = [](int64_t h) { return std::vector<Attribute>{Attribute::make_int("num_heads", h)}; };
  EXPECT_TRUE(contains(infer_error(x, x, x, {}, {}), "node 'attn' (octet.Attention): num_heads"));
  EXPECT_TRUE(contains(infer_error(x, x, x, {}, heads(3)), "do not split into num_heads = 3"));
  EXPECT_TRUE(contains(infer_error(x, {2, 5, 8}, x, {}, heads(4)), "Q and K channel counts differ"));
  EXPECT_TRUE(contains(infer_error(x, {3, 5, 16}, {3, 5, 16}, {}, heads(4)), "batch sizes differ"));
  EXPECT_TRUE(contains(infer_error(x, x, {2, 6, 16}, {}, heads(4)), "sequence lengths differ"));
  EXPECT_TRUE(contains(infer_error(x, x, x, DimVector{2, 3, 5, 5}, heads(4)), "does not broadcast"));
  EXPECT_TRUE(contains(infer_error(x, x, x, DimVector{1, 2, 1, 5, 5}, heads(4)), "rank <= 4"));
  EXPECT_TRUE(contains(infer_error({2, 16}, x, x, {}, heads(4)), "rank 3"));
  auto causal2 = heads(4);
  causal2.push_back(Attribute::make_int("causal", 2));
  EXPECT_TRUE(contains(infer_error(x, x, x, {}, causal2), "causal must be 0 or 1"));
}

std::vector<Attribute> attrs(int64_t heads, float scale, bool causal = false) {
  return {Attribute::make_int("num_heads", heads), Attribute::make_float("scale", scale),
          Attribute::make_int("causal", causal ? 1 : 0)};
}

// Runs the reference kernel (the subject here), and checks the optimized one agrees.
std::vector<float> run_attention(std::vector<Tensor> in, std::vector<Attribute> a) {
  auto g = std::make_shared<Graph>();
  g->opset_imports["octet"] = 1;
  NamedTensors feeds;
  std::vector<std::string> names;
  for (size_t i = 0; i < in.size(); ++i) {
    names.push_back("in" + std::to_string(i));
    g->add_input(names.back(), TensorType(in[i].dtype(), DimVector(in[i].shape().begin(), in[i].shape().end())));
    feeds.emplace_back(names.back(), in[i]);
  }
  g->add_node("Attention", names, {"y"}, std::move(a), "octet");
  g->mark_output(g->value("y"));
  SessionOptions ref;
  ref.kernels = KernelChoice::Reference;
  std::vector<float> want = Session(g, ref).run(feeds)[0].second.to_float_vector();
  std::vector<float> got = Session(g).run(feeds)[0].second.to_float_vector();
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  return want;
}

TEST(OctetAttention, ReferenceKernelByHand) {
  // One head, one query q = 1 against keys 0 and ln 3: weights 1/4, 3/4 over V = 1, 5.
  using testing::f32;
  auto y = run_attention({f32({1, 1, 1}, {1}), f32({1, 2, 1}, {0, std::log(3.0f)}), f32({1, 2, 1}, {1, 5})},
                         attrs(1, 1.0f));
  ASSERT_EQ(y.size(), 1u);
  EXPECT_NEAR(y[0], 4.0f, 1e-6);
  // The scale multiplies q.k: scale 0 gives equal weights.
  y = run_attention({f32({1, 1, 1}, {1}), f32({1, 2, 1}, {0, std::log(3.0f)}), f32({1, 2, 1}, {1, 5})},
                    attrs(1, 0.0f));
  EXPECT_NEAR(y[0], 3.0f, 1e-6);
}

TEST(OctetAttention, ReferenceMasksAsTheDecomposedGraph) {
  using testing::f32;
  const float lowest = std::numeric_limits<float>::lowest();
  // Two heads of size 1; the mask hides key 1 for head 0 and every key for head 1 (a
  // fully padded row: equal scores, the plain average of V, as Softmax gives).
  Tensor q = f32({1, 1, 2}, {1, 1}), k = f32({1, 2, 2}, {0, 0, 2, 2}), v = f32({1, 2, 2}, {1, 10, 5, 20});
  Tensor mask = f32({1, 2, 1, 2}, {0, lowest, lowest, lowest});
  auto y = run_attention({q, k, v, mask}, attrs(2, 1.0f));
  EXPECT_NEAR(y[0], 1.0f, 1e-6);   // head 0 sees key 0 only
  EXPECT_NEAR(y[1], 15.0f, 1e-5);  // head 1: mean of 10 and 20
  // Causal with more queries than keys: query 0 of 3 sees no key of 2 (uniform), query 2
  // sees both.
  Tensor q3 = f32({1, 3, 1}, {1, 1, 1}), k2 = f32({1, 2, 1}, {0, 0}), v2 = f32({1, 2, 1}, {2, 4});
  y = run_attention({q3, k2, v2}, attrs(1, 1.0f, true));
  EXPECT_NEAR(y[0], 3.0f, 1e-6);
  EXPECT_NEAR(y[1], 2.0f, 1e-6);
  EXPECT_NEAR(y[2], 3.0f, 1e-6);
}

}  // namespace
}  // namespace octet
