// A SmoothQuant Mul(x, c) read only by float-A octet.QMatMuls (per token or static) folds
// into their a_channel_scale: the same output bits on the optimized kernels as the Mul
// node (the kernel scales each row by the same float32 factors before quantizing it), and
// the same numbers on the reference kernels. Muls the readers cannot take stay.
#include <gtest/gtest.h>

#include "pass_test_util.h"
#include "qmatmul_test_util.h"

namespace octet {
namespace {

using testing::count_ops;
using testing::PassGraph;
using testing::run_graph_with;

struct MulCase {
  bool per_token = true;      // the readers quantize A per row (no a_scale), else static
  bool two_readers = true;    // two QMatMuls read the Mul (a Q and a K projection)
  bool factor_on_left = false;
  std::vector<int64_t> c_shape = {12};  // K = 12; {1, 1, 12} folds too
  // Cases the pass must leave alone:
  bool float_reader = false;  // a float Add reads the Mul too
  bool c_input = false;       // c is a graph input
  bool reader_has_scale = false;  // the reader already has an a_channel_scale
};

std::shared_ptr<Graph> graph(const MulCase& o) {
  PassGraph b;
  b.g->opset_imports["octet"] = 1;
  const int64_t k = 12, n = 16;
  b.input("x", DType::Float32, DimVector{2, 5, k});
  if (o.c_input) b.input("c", DType::Float32, DimVector(o.c_shape.begin(), o.c_shape.end()));
  else b.init("c", testing::ramp(DType::Float32, o.c_shape, 5, 0.9f));
  b.node("Mul", o.factor_on_left ? std::vector<std::string>{"c", "x"} : std::vector<std::string>{"x", "c"}, {"m"});
  b.init("sa", Tensor::scalar<float>(2.1f / 255.0f));
  b.init("za", Tensor::scalar<uint8_t>(127));
  b.init("sb", Tensor::scalar<float>(0.02f));
  b.init("other_c", testing::ramp(DType::Float32, {k}, 6, 0.7f));
  const int readers = o.two_readers ? 2 : 1;
  for (int r = 0; r < readers; ++r) {
    const std::string w = r == 0 ? "w0" : "w1", y = r == 0 ? "y0" : "y1";
    b.init(w, testing::qmm::rand_int8({k, n}, 3 + r));
    std::vector<std::string> ins = {"m", o.per_token ? "" : "sa", o.per_token ? "" : "za", w, "sb"};
    if (o.reader_has_scale) ins.insert(ins.end(), {"", "", "", "other_c"});
    std::vector<Attribute> attrs;
    if (o.per_token) attrs.push_back(Attribute::make_string("dynamic_type", "uint8"));
    b.node("QMatMul", ins, {y}, attrs, "octet");
    b.output(y);
  }
  if (o.float_reader) {
    b.node("Add", {"m", "m"}, {"twice"});
    b.output("twice");
  }
  return b.done();
}

NamedTensors inputs(const MulCase& o) {
  NamedTensors in = {{"x", testing::ramp(DType::Float32, {2, 5, 12}, 1, 2.0f)}};
  if (o.c_input) in.emplace_back("c", testing::ramp(DType::Float32, o.c_shape, 5, 0.9f));
  return in;
}

// Runs the pass; true when it folded. Checks the outputs either way: bit for bit on the
// optimized kernels, to float rounding on the reference ones.
bool fold_and_compare(const MulCase& o) {
  auto g = graph(o);
  const OptimizeReport r = run_pass(*g, passes::fold_smoothing_mul());
  const bool folded = r.detail("Mul -> QMatMul a_channel_scale") > 0;
  const NamedTensors want = run_graph_with(graph(o), inputs(o), KernelChoice::Optimized);
  const NamedTensors got = run_graph_with(g, inputs(o), KernelChoice::Optimized);
  EXPECT_EQ(testing::max_relative_error(got, want), 0.0);
  EXPECT_LE(testing::max_relative_error(run_graph_with(g, inputs(o), KernelChoice::Reference),
                                        run_graph_with(graph(o), inputs(o), KernelChoice::Reference)),
            1e-6);
  EXPECT_EQ(count_ops(*g, "Mul"), folded ? 0 : 1);
  return folded;
}

TEST(FoldSmoothingMul, FoldsIntoEveryQMatMulReader) {
  EXPECT_TRUE(fold_and_compare({}));
  MulCase one;
  one.two_readers = false;
  one.factor_on_left = true;
  one.c_shape = {1, 1, 12};
  EXPECT_TRUE(fold_and_compare(one));
  MulCase static_reader;
  static_reader.per_token = false;
  EXPECT_TRUE(fold_and_compare(static_reader));
}

TEST(FoldSmoothingMul, LeavesMulsTheReadersCannotTake) {
  MulCase f;
  f.float_reader = true;
  EXPECT_FALSE(fold_and_compare(f));
  MulCase c;
  c.c_input = true;
  EXPECT_FALSE(fold_and_compare(c));
  MulCase s;
  s.reader_has_scale = true;
  EXPECT_FALSE(fold_and_compare(s));
  MulCase whole;  // a factor per element, not per channel
  whole.c_shape = {5, 12};
  EXPECT_FALSE(fold_and_compare(whole));
}

}  // namespace
}  // namespace octet
