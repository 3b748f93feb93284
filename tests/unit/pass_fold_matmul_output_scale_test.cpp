// A per-column constant Mul after octet.QMatMul / octet.MatMulBias (DINOv2's LayerScale)
// folds into the product (QMatMul's output_scale: the same numbers; MatMulBias's weights:
// the same up to float rounding), with the reference kernels and with the optimized ones at every ISA
// level (oneDNN's, chosen per process: child runs); Muls that do not commute stay.
#include <gtest/gtest.h>

#include "isa_child_runs.h"
#include "pass_test_util.h"
#include "passes/pattern.h"
#include "qmatmul_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;
using testing::run_graph_with;

struct Options {
  bool quantized = true;
  std::vector<int64_t> x_shape = {2, 5, 12};  // [B, S, K]
  int64_t n = 16;
  std::vector<int64_t> lambda_shape = {16};  // {} for one value
  bool per_tensor_b_scale = false;
  bool b_zero_point = false;  // an all-zero per-tensor b_zero_point
  bool bias = true;
  bool add_after = true;  // the residual Add behind the Mul (LayerScale's block output)
  bool gelu = false;  // the product has an activation (folds into QMatMul only)
  // Cases the pass must leave alone:
  bool lambda_input = false;   // lambda is a graph input, not a constant
  bool also_output = false;    // the product's output is a graph output too
};

std::shared_ptr<Graph> graph(const Options& o) {
  PassGraph b;
  b.g->opset_imports["octet"] = 1;
  const int64_t k = o.x_shape.back(), n = o.n;
  b.input("x", DType::Float32, DimVector(o.x_shape.begin(), o.x_shape.end()));
  std::vector<int64_t> y_shape = o.x_shape;
  y_shape.back() = n;
  b.input("r", DType::Float32, DimVector(y_shape.begin(), y_shape.end()));
  std::vector<std::string> ins;
  if (o.quantized) {
    b.init("sa", Tensor::scalar<float>(2.1f / 255.0f));
    b.init("za", Tensor::scalar<uint8_t>(127));
    b.init("w", testing::qmm::rand_int8({k, n}, 3));
    Tensor sb(DType::Float32, o.per_tensor_b_scale ? std::vector<int64_t>{} : std::vector<int64_t>{n});
    for (int64_t c = 0; c < sb.numel(); ++c)
      sb.mutable_data<float>()[c] = (0.6f + 0.05f * static_cast<float>(c % 9)) / (127.0f * std::sqrt(float(k)));
    b.init("sb", std::move(sb));
    b.init("zb", Tensor::scalar<int8_t>(0));
    ins = {"x", "sa", "za", "w", "sb", o.b_zero_point ? "zb" : "", o.bias ? "bias" : ""};
  } else {
    b.init("w", testing::ramp(DType::Float32, {k, n}, 3, 0.3f));
    ins = {"x", "w", "bias"};
  }
  b.init("bias", testing::ramp(DType::Float32, {n}, 4, 0.2f));
  while (ins.back().empty()) ins.pop_back();
  std::vector<Attribute> attrs;
  if (o.gelu) attrs.push_back(Attribute::make_string("activation", "gelu"));
  b.node(o.quantized ? "QMatMul" : "MatMulBias", ins, {"p"}, attrs, "octet");
  if (o.lambda_input) {
    b.input("lambda", DType::Float32, DimVector(o.lambda_shape.begin(), o.lambda_shape.end()));
  } else {
    // Mixed signs and magnitudes, like trained LayerScale vectors (1e-5 .. 1).
    Tensor lambda = testing::ramp(DType::Float32, o.lambda_shape, 5, 0.8f);
    b.init("lambda", std::move(lambda));
  }
  b.node("Mul", {"p", "lambda"}, {"m"});
  if (o.add_after) {
    b.node("Add", {"m", "r"}, {"y"});
    b.output("y");
  } else {
    b.output("m");
  }
  if (o.also_output) b.output("p");
  return b.done();
}

NamedTensors inputs(const Options& o, const Graph& g) {
  std::vector<int64_t> y_shape = o.x_shape;
  y_shape.back() = o.n;
  NamedTensors in = {{"x", testing::ramp(DType::Float32, o.x_shape, 1, 1.2f)},
                     {"r", testing::ramp(DType::Float32, y_shape, 2, 1.0f)}};
  if (o.lambda_input) in.push_back({"lambda", testing::ramp(DType::Float32, o.lambda_shape, 5, 0.8f)});
  return in;
}

std::vector<Options> fold_cases() {
  std::vector<Options> out;
  for (bool quantized : {true, false}) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 5, 12}, {1, 1, 12}, {3, 17, 7}, {1, 64, 40}}) {
      Options o;
      o.quantized = quantized;
      o.x_shape = shape;
      out.push_back(o);
    }
    Options scalar, broadcast_dims, plain, no_add, gelu;
    scalar.lambda_shape = {};
    broadcast_dims.lambda_shape = {1, 1, 16};
    plain.per_tensor_b_scale = plain.b_zero_point = true;
    plain.bias = !quantized;  // MatMulBias always has one
    no_add.add_after = false;
    gelu.gelu = true;  // QMatMul applies output_scale after its activation
    for (Options o : {scalar, broadcast_dims, plain, no_add, gelu}) {
      o.quantized = quantized;
      if (o.gelu && !quantized) continue;  // MatMulBias would scale B under the GeLU
      out.push_back(o);
    }
  }
  return out;
}

TEST(FoldMatmulOutputScale, FoldsIntoTheWeightsWithTheSameValues) {
  for (const Options& o : fold_cases()) {
    SCOPED_TRACE(std::string(o.quantized ? "QMatMul" : "MatMulBias") + (o.gelu ? " gelu" : "") + " x " +
                 shape_to_string(o.x_shape) + " lambda " + shape_to_string(o.lambda_shape));
    auto original = graph(o), folded = graph(o);
    EXPECT_EQ(run_pass(*folded, passes::fold_matmul_output_scale()).passes[0].rewrites, 1);
    EXPECT_TRUE(verify_graph(*folded).empty());
    EXPECT_EQ(count_ops(*folded, "Mul"), 0);
    const NamedTensors in = inputs(o, *original);
    for (KernelChoice kernels : {KernelChoice::Reference, KernelChoice::Optimized}) {
      // QMatMul applies lambda as the Mul did (output_scale, before the residual): the same
      // numbers. MatMulBias folds it into B and the bias: float rounding only.
      EXPECT_LE(testing::max_relative_error(run_graph_with(folded, in, kernels),
                                            run_graph_with(original, in, kernels)),
                o.quantized ? 0.0 : 2e-6)
          << (kernels == KernelChoice::Reference ? "reference kernels" : "optimized kernels");
    }
    // With the Mul gone, the residual Add folds into the product too.
    if (o.add_after) {
      run_pass(*folded, passes::fuse_matmul_epilogue());
      EXPECT_EQ(count_ops(*folded, "Add"), 0);
    }
  }
}

TEST(FoldMatmulOutputScale, FoldsIntoTheWeightsWithTheSameValuesAtEveryIsa) {
  testing::expect_child_runs_pass_at_every_isa("FoldMatmulOutputScale.FoldsIntoTheWeightsWithTheSameValues",
                                               "fold_matmul_output_scale");
}

TEST(FoldMatmulOutputScale, MulsThatDoNotCommuteStay) {
  Options gelu, runtime_lambda, shared, per_row;
  gelu.gelu = true;  // MatMulBias only: scaling B would move lambda under the GeLU
  runtime_lambda.lambda_input = true;
  shared.also_output = true;
  per_row.lambda_shape = {5, 1};  // one factor per token: broadcasts along N, not a column factor
  for (bool quantized : {true, false})
    for (Options o : {gelu, runtime_lambda, shared, per_row}) {
      o.quantized = quantized;
      if (o.gelu && quantized) continue;  // folds (FoldsIntoTheWeightsWithTheSameValues)
      auto g = graph(o);
      EXPECT_EQ(run_pass(*g, passes::fold_matmul_output_scale()).passes[0].rewrites, 0);
      EXPECT_EQ(count_ops(*g, "Mul"), 1);
    }
}

}  // namespace
}  // namespace octet
