// Dynamic quantization folds a Linear layer's bias into the quantized matmul whatever shape
// the exporter gave it, as long as adding it never grows the result: Marian and BART keep
// final_logits_bias as [1, vocab], which once reached octet.QMatMul unreshaped and failed
// "(bias) must be 1-D [N]".
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "cpu_test_util.h"
#include "ops/infer.h"
#include "quant/qdq_rewrite.h"
#include "quant/quantize_plan.h"
#include "runtime/session.h"

namespace octet::quant {
namespace {

using octet::testing::random_f32;

// y = MatMul(x, w) + b, x of rank `rank` ([5, 8] or [2, 5, 8]), w [8, 16].
std::shared_ptr<Graph> linear(const std::vector<int64_t>& bias_shape, int rank) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 17;
  DimVector x_dims = rank == 3 ? DimVector{Dim(2), Dim(5), Dim(8)} : DimVector{Dim(5), Dim(8)};
  g->add_input("x", TensorType(DType::Float32, x_dims));
  g->add_initializer("w", std::make_shared<const Tensor>(random_f32({8, 16}, 3, -1, 1)));
  g->add_initializer("b", std::make_shared<const Tensor>(random_f32(bias_shape, 4, -2, 2)));
  g->add_node("MatMul", {"x", "w"}, {"mm"}, {}, "", "lm_head/MatMul");
  g->add_node("Add", {"mm", "b"}, {"y"}, {}, "", "lm_head/Add");
  g->mark_output(g->value("y"));
  infer_graph(*g);
  return g;
}

std::map<std::string, int> op_counts(const Graph& g) {
  std::map<std::string, int> out;
  for (const Node* n : g.nodes()) ++out[(n->domain().empty() ? "" : n->domain() + ".") + n->op_type()];
  return out;
}

// max |got - want| / max |want|
double relative_error(const Tensor& got, const Tensor& want) {
  double err = 0, scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    err = std::max(err, double(std::fabs(got.data<float>()[i] - want.data<float>()[i])));
    scale = std::max(scale, double(std::fabs(want.data<float>()[i])));
  }
  return err / scale;
}

// Quantizes dynamically for `target`, runs it and float on the same input; returns the
// quantized graph's op counts.
std::map<std::string, int> quantize_and_compare(const std::vector<int64_t>& bias_shape, int rank, Target target) {
  auto g = linear(bias_shape, rank);
  const NamedTensors in = {{"x", random_f32(rank == 3 ? std::vector<int64_t>{2, 5, 8} : std::vector<int64_t>{5, 8}, 5)}};
  const NamedTensors want = Session(std::shared_ptr<const Graph>(linear(bias_shape, rank))).run(in);
  QuantizeOptions o;
  o.mode = Mode::Dynamic;
  o.target = target;
  write_quantized_graph(*g, plan_quantization(*g, o), {}, o);
  const auto ops = op_counts(*g);
  const NamedTensors got = Session(std::shared_ptr<Graph>(g)).run(in);
  EXPECT_EQ(got[0].second.shape(), want[0].second.shape());
  EXPECT_LT(relative_error(got[0].second, want[0].second), 0.03);
  return ops;
}

int count(const std::map<std::string, int>& ops, const std::string& op) {
  auto it = ops.find(op);
  return it == ops.end() ? 0 : it->second;
}

TEST(QuantBiasShape, RowBiasFoldsIntoQMatMul) {
  for (int rank : {2, 3}) {
    for (auto shape : {std::vector<int64_t>{16}, std::vector<int64_t>{1, 16}}) {
      const auto ops = quantize_and_compare(shape, rank, Target::Octet);
      EXPECT_EQ(count(ops, "octet.QMatMul"), 1) << "rank " << rank;
      EXPECT_EQ(count(ops, "Add"), 0) << "rank " << rank << ", bias rank " << shape.size();
    }
  }
  const auto ops = quantize_and_compare({1, 1, 16}, 3, Target::Octet);
  EXPECT_EQ(count(ops, "Add"), 0);
}

TEST(QuantBiasShape, BiasThatWouldGrowTheResultStaysAnAdd) {
  // [1, 1, 16] on a [5, 16] product broadcasts to [1, 5, 16]: folding it would drop a dim.
  const auto ops = quantize_and_compare({1, 1, 16}, 2, Target::Octet);
  EXPECT_EQ(count(ops, "octet.QMatMul"), 1);
  EXPECT_EQ(count(ops, "Add"), 1);
}

TEST(QuantBiasShape, OrtTargetKeepsTheBiasAsItWas) {
  const auto ops = quantize_and_compare({1, 16}, 3, Target::Ort);
  EXPECT_EQ(count(ops, "MatMulInteger"), 1);
  EXPECT_EQ(count(ops, "Add"), 1);
}

}  // namespace
}  // namespace octet::quant
