// octet.QMatMul writing its output per row (y_dynamic_type: u8 Y, y_scale and
// y_zero_point per row, the A of per-token QMatMuls; docs/quantization.md §2), on the
// oneDNN kernel (raw sums + epilogue, and the fused static primitive + a quantize pass):
// - against the reference kernel on edge shapes (M, K, N down to 1, rank-3 A), static and
//   dynamic A, uint8 and int8 rows, GeLU, residual, output_scale, one and two threads;
//   the reference forms each float row in double, the kernel in float32, so a row's scale
//   agrees to float rounding, its zero point and each level to within one, such flips
//   rare (at most 1 in 200 elements);
// - exactly against the kernel's own float output quantized per row with the call a
//   per-token reader makes (quantize_row_dynamic): what keeps the readers' bits;
// - rows of equal values (a zero row: scale 1, zero point 0) bit-exact against the
//   reference;
// - at every ISA level (oneDNN's is fixed per process: child runs).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "isa_child_runs.h"
#include "kernels/cpu/quant_ops.h"
#include "qmatmul_test_util.h"

namespace octet {
namespace {

using testing::mm::Operand;
using testing::qmm::QCase;

// QMatMul(ins) -> (y, y_scale, y_zero_point) with y_dynamic_type = type; A and the
// residual are graph inputs, the rest constants.
std::shared_ptr<Graph> per_row_graph(const std::vector<std::optional<Operand>>& ins, std::vector<Attribute> attrs,
                                     const std::string& type) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 17;
  g->opset_imports["octet"] = 1;
  std::vector<std::string> names;
  for (size_t i = 0; i < ins.size(); ++i) {
    if (!ins[i]) {
      names.push_back("");
      continue;
    }
    names.push_back("in" + std::to_string(i));
    const Tensor& t = ins[i]->value;
    if (ins[i]->constant) g->add_initializer(names.back(), std::make_shared<Tensor>(t));
    else g->add_input(names.back(), TensorType(t.dtype(), DimVector(t.shape().begin(), t.shape().end())));
  }
  attrs.push_back(Attribute::make_string("y_dynamic_type", type));
  g->add_node("QMatMul", names, {"y", "y_scale", "y_zero_point"}, std::move(attrs), "octet", "node_under_test");
  for (const char* o : {"y", "y_scale", "y_zero_point"}) g->mark_output(g->value(o));
  infer_graph(*g);
  return g;
}

// Without a_channel_scale: these cases test the per-row Y, not the A side.
QCase variant(std::vector<int64_t> a_shape, int64_t n, int i) {
  return testing::qmm::cycled_variant(std::move(a_shape), n, i, /*channel_scale=*/false);
}

std::string label(const QCase& c, const std::string& type, int threads) {
  return c.label() + " rows " + type + " threads " + std::to_string(threads);
}

// The optimized per-row outputs against the reference's (bounds above), and exactly
// against the optimized float output quantized per row by the reader's call.
void check(const QCase& c, const std::string& type, int threads) {
  const std::string what = label(c, type, threads);
  const auto ins = testing::qmm::operands(c);
  const NamedTensors in = testing::mm::feeds(ins);
  auto g = per_row_graph(ins, testing::qmm::attributes(c), type);
  Session fast = testing::mm::session(g, KernelChoice::Optimized, threads);
  EXPECT_EQ(fast.optimized_nodes(), 1) << what;
  const int64_t fallbacks = cpu::int8_reference_runs();
  const NamedTensors got = fast.run(in);
  EXPECT_EQ(cpu::int8_reference_runs(), fallbacks) << what << ": ran the reference kernel";
  const NamedTensors want = testing::mm::session(g, KernelChoice::Reference).run(in);
  ASSERT_EQ(got.size(), 3u) << what;
  const Tensor &q = got[0].second, &s = got[1].second, &z = got[2].second;
  std::vector<int64_t> lead(c.a_shape.begin(), c.a_shape.end() - 1);
  ASSERT_EQ(q.dtype(), DType::UInt8) << what;
  ASSERT_EQ(q.shape(), c.out_shape()) << what;
  ASSERT_EQ(s.shape(), lead) << what;
  ASSERT_EQ(z.dtype(), DType::Int32) << what;
  ASSERT_EQ(z.shape(), lead) << what;
  int64_t flips = 0;
  for (int64_t i = 0; i < q.numel(); ++i) {
    const int d = std::abs(int(q.data<uint8_t>()[i]) - int(want[0].second.data<uint8_t>()[i]));
    EXPECT_LE(d, 1) << what << ": element " << i;
    flips += d != 0;
  }
  EXPECT_LE(flips * 200, std::max<int64_t>(q.numel(), 200)) << what << ": " << flips << " levels differ";
  for (int64_t r = 0; r < s.numel(); ++r) {
    const float sg = s.data<float>()[r], sw = want[1].second.data<float>()[r];
    EXPECT_LE(std::fabs(sg - sw), 2e-5f * sw + 1e-9f) << what << ": scale of row " << r;
    const int32_t zg = z.data<int32_t>()[r];
    EXPECT_LE(std::abs(zg - want[2].second.data<int32_t>()[r]), 1) << what << ": zero point of row " << r;
    if (type == "int8") {
      EXPECT_EQ(zg, 128) << what << ": int8 rows are symmetric (zero point 128 in uint8)";
    }
  }

  // The same node with a float output, quantized per row as a per-token reader would.
  auto gf = testing::mm::one_node("QMatMul", ins, testing::qmm::attributes(c), "octet");
  const Tensor y = testing::mm::session(gf, KernelChoice::Optimized, threads).run(in)[0].second;
  const int64_t n = c.n, rows = y.numel() / n;
  Tensor q2(DType::UInt8, y.shape());
  for (int64_t r = 0; r < rows; ++r) {
    const cpu::RowParams p = cpu::quantize_row_dynamic(cpu::quant_ops(), y.data<float>() + r * n, n, type == "int8",
                                                       q2.mutable_data<uint8_t>() + r * n);
    EXPECT_EQ(p.scale, s.data<float>()[r]) << what << ": row " << r << " scale differs from the reader's";
    EXPECT_EQ(p.zero_point, z.data<int32_t>()[r]) << what << ": row " << r << " zero point differs";
  }
  EXPECT_EQ(std::memcmp(q2.raw(), q.raw(), q.bytes()), 0) << what << ": differs from float Y quantized by the reader";
}

TEST(CpuQMatMulPerRowY, EdgeShapesEveryEpilogue) {
  int i = 0;
  for (int64_t m : {1, 7, 128})
    for (int64_t k : {1, 5, 64, 384})
      for (int64_t n : {1, 3, 65, 256}) {
        const QCase c = variant({m, k}, n, i);
        check(c, i % 4 == 1 ? "int8" : "uint8", 1 + i % 2);
        ++i;
      }
  // Every epilogue at once, static (fused primitive) and dynamic A, rank-3 A.
  for (bool is_static : {true, false})
    for (const char* type : {"uint8", "int8"}) {
      QCase c = variant({2, 65, 96}, 200, 0);
      c.is_static = is_static;
      c.activation = "gelu";
      c.residual = c.output_scale = true;
      check(c, type, 2);
    }
}

// Rows of one value: B zero, so each row is the bias (or its GeLU); no bias: rows of
// zeros (scale 1, zero point 0). The kernel's rows are exactly the reference's here.
TEST(CpuQMatMulPerRowY, RowsOfEqualValues) {
  for (int v = 0; v < 4; ++v)
    for (const char* type : {"uint8", "int8"}) {
      QCase c = variant({5, 33}, 17, 1);  // dynamic A
      c.is_static = v == 3;
      c.activation = "";
      c.residual = c.output_scale = false;
      c.bias = v != 0;
      auto ins = testing::qmm::operands(c);
      ins[3]->value = Tensor(DType::Int8, {33, 17});
      if (c.bias) {
        Tensor bias(DType::Float32, {17});
        for (int64_t j = 0; j < 17; ++j) bias.mutable_data<float>()[j] = v == 2 ? -0.37f : 0.61f;
        ins[6]->value = bias;
      }
      const std::string what = std::string("equal rows variant ") + std::to_string(v) + " " + type;
      auto g = per_row_graph(ins, testing::qmm::attributes(c), type);
      const NamedTensors in = testing::mm::feeds(ins);
      const NamedTensors got = testing::mm::session(g, KernelChoice::Optimized, 2).run(in);
      const NamedTensors want = testing::mm::session(g, KernelChoice::Reference).run(in);
      for (size_t o = 0; o < 3; ++o) {
        ASSERT_EQ(got[o].second.bytes(), want[o].second.bytes()) << what;
        EXPECT_EQ(std::memcmp(got[o].second.raw(), want[o].second.raw(), got[o].second.bytes()), 0)
            << what << ": output " << o;
      }
      if (v == 0) {
        EXPECT_EQ(got[1].second.to_float_vector(), std::vector<float>(5, 1.0f)) << what;
      }
    }
}

TEST(CpuQMatMulPerRowY, BadNodesAreRefused) {
  QCase c = variant({3, 8}, 4, 1);
  auto ins = testing::qmm::operands(c);
  // y_scale beside y_dynamic_type, or an unknown type: inference names the problem.
  auto with_scale = ins;
  with_scale.resize(11);
  with_scale[10] = Operand{Tensor::scalar<float>(0.1f), true};
  EXPECT_THROW(per_row_graph(with_scale, testing::qmm::attributes(c), "uint8"), std::exception);
  EXPECT_THROW(per_row_graph(ins, testing::qmm::attributes(c), "int4"), std::exception);
}

TEST(CpuQMatMulPerRowY, EveryLevelInAChildProcess) {
  testing::expect_child_runs_pass_at_every_isa("CpuQMatMulPerRowY.*", "cpu_qmatmul_per_row_y_isa");
}

}  // namespace
}  // namespace octet
