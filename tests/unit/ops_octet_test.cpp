// The octet-domain fused ops: inference rules and reference kernels.
#include <gtest/gtest.h>

#include <cmath>

#include "ops_shape_test_util.h"
#include "ref_math_test_util.h"

namespace octet {
namespace {

using testing::error_of;
using testing::contains;
using testing::S;

TEST(OctetOps, MatMulBiasInference) {
  testing::GraphBuilder b;
  b.g.opset_imports["octet"] = 1;
  b.input("x", DType::Float32, DimVector{S("batch"), S("seq"), 4});
  b.input("w", DType::Float32, DimVector{4, 6});
  b.input("bias", DType::Float32, DimVector{6});
  b.input("bad_bias", DType::Float32, DimVector{5});
  b.input("w1d", DType::Float32, DimVector{4});
  b.g.add_node("MatMulBias", {"x", "w", "bias"}, {"y"}, {}, "octet");
  b.infer();
  EXPECT_EQ(dims_to_string(b.dims("y")), "[batch,seq,6]");
  EXPECT_EQ(b.type("y").dtype, DType::Float32);

  testing::GraphBuilder c;
  c.input("x", DType::Float32, DimVector{3, 4});
  c.input("w", DType::Float32, DimVector{4, 6});
  c.input("bias", DType::Float32, DimVector{5});
  c.g.add_node("MatMulBias", {"x", "w", "bias"}, {"y"}, {}, "octet", "mmb");
  EXPECT_TRUE(contains(error_of([&] { c.infer(); }), "node 'mmb' (octet.MatMulBias): input 2")) << error_of([&] { c.infer(); });

  testing::GraphBuilder d;
  d.input("x", DType::Float32, DimVector{3, 4});
  d.input("w", DType::Float32, DimVector{4});
  d.input("bias", DType::Float32, DimVector{1});
  d.g.add_node("MatMulBias", {"x", "w", "bias"}, {"y"}, {}, "octet");
  EXPECT_TRUE(contains(error_of([&] { d.infer(); }), "rank >= 2"));
}

TEST(OctetOps, MatMulBiasKernelIsMatMulThenAdd) {
  Tensor a = Tensor::from_vector<float>({2, 1, 2}, {1, 2, 3, 4});
  Tensor w = Tensor::from_vector<float>({2, 3}, {1, 0, -1, 2, 1, 0});
  Tensor bias = Tensor::from_vector<float>({3}, {10, 20, 30});
  auto out = testing::run({"MatMulBias", {a, w, bias}, {}, 21, 1, "octet"});
  EXPECT_EQ(out[0].shape(), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(out[0].to_float_vector(), (std::vector<float>{15, 22, 29, 21, 24, 27}));
  EXPECT_TRUE(contains(error_of([&] {
                         testing::run({"MatMulBias", {a, w, Tensor::from_vector<float>({2}, {1, 2})}, {}, 21, 1, "octet"});
                       }),
                       "bias float32[2] must be 1-D with N = 3"));
}

TEST(OctetOps, GeluMatchesTheFormulaInBothModes) {
  std::vector<float> xs = {-3, -1, -0.5f, 0, 0.25f, 1, 2.5f};
  Tensor x = Tensor::from_vector<float>({7}, xs);
  auto exact = testing::run({"Gelu", {x}, {}, 17, 1, "octet"})[0].to_float_vector();
  auto tanh = testing::run({"Gelu", {x}, {Attribute::make_string("approximate", "tanh")}, 17, 1, "octet"})[0]
                  .to_float_vector();
  for (size_t i = 0; i < xs.size(); ++i) {
    const double v = xs[i];
    EXPECT_NEAR(exact[i], 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))), 1e-6);
    EXPECT_NEAR(tanh[i], 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))), 1e-6);
  }
  testing::GraphBuilder b;
  b.input("x", DType::Float32, DimVector{2});
  b.g.add_node("Gelu", {"x"}, {"y"}, {Attribute::make_string("approximate", "erf")}, "octet");
  EXPECT_TRUE(contains(error_of([&] { b.infer(); }), "accepts 'none' or 'tanh'"));
}

TEST(OctetOps, RmsNormalizationIsTheOnnxOp) {
  Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, -4, 0.5f, 2});
  Tensor scale = Tensor::from_vector<float>({3}, {1, 0.5f, 2});
  std::vector<Attribute> attrs = {Attribute::make_float("epsilon", 1e-3f)};
  auto octet_out = testing::run({"RMSNormalization", {x, scale}, attrs, 17, 1, "octet"})[0];
  auto onnx_out = testing::run({"RMSNormalization", {x, scale}, attrs, 23})[0];
  EXPECT_EQ(octet_out.to_float_vector(), onnx_out.to_float_vector());
}

}  // namespace
}  // namespace octet
