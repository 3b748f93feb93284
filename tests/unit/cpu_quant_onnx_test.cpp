// The optimized ai.onnx quantization kernels against their reference twins, bit for bit:
// MatMulInteger and QLinearMatMul (dnnl_qgemm_onnx.cpp: constant and run-time B, uint8
// and int8 operands, zero points and scales per tensor, per row and per column, rank-1/3
// A) and QuantizeLinear / DequantizeLinear / DynamicQuantizeLinear (cpu_quantize.cpp:
// ties, saturation, NaN, infinities, chunked over two threads). CpuQMatMulIsa runs these
// at every ISA level too.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <sstream>

#include "cpu_test_util.h"
#include "kernels/cpu/quant_ops.h"
#include "qmatmul_test_util.h"

namespace octet {
namespace {

using testing::mm::Operand;

using testing::qmm::rand_bytes;
using testing::qmm::scalar_of;

Tensor vector_of(DType t, int64_t n, int base) { return testing::qmm::vector_of(t, n, base, 3); }

void expect_same_bytes(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const size_t elem = dtype_storage_bytes(got.dtype(), 1);
  for (int64_t i = 0; i < got.numel(); ++i)
    if (std::memcmp(got.raw() + i * elem, want.raw() + i * elem, elem) != 0) {
      ADD_FAILURE() << what << ": element " << i << " differs (" << got.to_float_vector()[i] << " vs "
                    << want.to_float_vector()[i] << ")";
      return;
    }
}

// Runs a one-node graph on both kernel sets; expects the optimized kernel to take it and
// agree bit for bit on every output.
void check(const std::string& op, const std::vector<std::optional<Operand>>& ins, const std::string& what,
           std::vector<Attribute> attrs = {}, int threads = 1, int64_t opset = 21) {
  auto g = testing::mm::one_node(op, ins, std::move(attrs), "", opset);
  Session fast = testing::mm::session(g, KernelChoice::Optimized, threads), ref = testing::mm::session(g, KernelChoice::Reference);
  EXPECT_EQ(fast.optimized_nodes(), 1) << what;
  const NamedTensors in = testing::mm::feeds(ins);
  const int64_t fallbacks = cpu::int8_reference_runs();
  const NamedTensors got = fast.run(in);
  EXPECT_EQ(cpu::int8_reference_runs(), fallbacks) << what << ": ran the reference kernel";
  const NamedTensors want = ref.run(in);
  for (size_t i = 0; i < want.size(); ++i) expect_same_bytes(got[i].second, want[i].second, what);
}

struct GemmCase {
  int64_t m, k, n;
  DType a, b;
  int zero_points;  // 0 none, 1 scalars, 2 per row of A / per column of B
  bool constant_b;
};

std::string label(const std::string& op, const GemmCase& c) {
  std::ostringstream o;
  o << op << " [" << c.m << "," << c.k << "]x[" << c.k << "," << c.n << "] " << dtype_name(c.a) << " x "
    << dtype_name(c.b) << " zp " << c.zero_points << (c.constant_b ? " const B" : " runtime B");
  return o.str();
}

std::vector<GemmCase> gemm_cases() {
  std::vector<GemmCase> out;
  int i = 0;
  for (int64_t m : {1, 3, 17, 128})
    for (int64_t k : {1, 7, 64, 1000})
      for (int64_t n : {1, 5, 64, 129}) {
        const DType a = i % 2 ? DType::Int8 : DType::UInt8, b = (i / 2) % 3 == 2 ? DType::UInt8 : DType::Int8;
        out.push_back({m, k, n, a, b, i % 3, (i / 3) % 2 == 0});
        ++i;
      }
  return out;
}

TEST(CpuQuantOnnx, MatMulIntegerIsBitExact) {
  uint64_t seed = 1;
  for (const GemmCase& c : gemm_cases()) {
    std::vector<std::optional<Operand>> ins = {Operand{rand_bytes(c.a, {c.m, c.k}, seed++)},
                                               Operand{rand_bytes(c.b, {c.k, c.n}, seed++), c.constant_b}};
    if (c.zero_points == 1) {
      ins.push_back(Operand{scalar_of(c.a, 7), true});
      ins.push_back(Operand{scalar_of(c.b, -5), true});
    } else if (c.zero_points == 2) {
      ins.push_back(Operand{vector_of(c.a, c.m, 1)});
      ins.push_back(Operand{vector_of(c.b, c.n, 250)});
    }
    check("MatMulInteger", ins, label("MatMulInteger", c), {}, c.m == 128 ? 2 : 1, 10);
  }
  // Rank-3 and rank-1 A against a 2-D B; a per-row zero point of the inner matrices.
  check("MatMulInteger",
        {Operand{rand_bytes(DType::UInt8, {2, 5, 33}, 1)}, Operand{rand_bytes(DType::Int8, {33, 9}, 2), true},
         Operand{vector_of(DType::UInt8, 5, 100)}},
        "rank-3 A, per-row zero point", {}, 1, 10);
  check("MatMulInteger", {Operand{rand_bytes(DType::Int8, {33}, 3)}, Operand{rand_bytes(DType::Int8, {33, 9}, 4)}},
        "1-D A", {}, 1, 10);
}

TEST(CpuQuantOnnx, QLinearMatMulIsBitExact) {
  uint64_t seed = 100;
  for (const GemmCase& c : gemm_cases()) {
    if (c.k == 1000 && c.m == 128 && c.n > 5) continue;  // covered by MatMulInteger; the oracle is slow
    const DType out = c.zero_points == 2 ? (c.a == DType::UInt8 ? DType::Int8 : DType::UInt8) : c.a;
    const float inner = 1.0f / (256.0f * std::sqrt(static_cast<float>(c.k)));  // outputs ~ +-40
    std::vector<std::optional<Operand>> ins = {Operand{rand_bytes(c.a, {c.m, c.k}, seed++)},
                                               Operand{Tensor::scalar<float>(0.02f), true},
                                               Operand{scalar_of(c.a, c.zero_points ? 9 : 0), true},
                                               Operand{rand_bytes(c.b, {c.k, c.n}, seed++), c.constant_b},
                                               Operand{Tensor::scalar<float>(0.03f), true},
                                               Operand{scalar_of(c.b, c.zero_points == 1 ? 3 : 0), true},
                                               Operand{Tensor::scalar<float>(0.02f * 0.03f / inner), true},
                                               Operand{scalar_of(out, 1), true}};
    if (c.zero_points == 2) {  // per-row a, per-column b and y
      Tensor sa(DType::Float32, {c.m}), sb(DType::Float32, {c.n}), sy(DType::Float32, {c.n});
      for (int64_t i = 0; i < c.m; ++i) sa.mutable_data<float>()[i] = 0.01f + 0.001f * static_cast<float>(i % 7);
      for (int64_t i = 0; i < c.n; ++i) {
        sb.mutable_data<float>()[i] = 0.03f + 0.002f * static_cast<float>(i % 5);
        sy.mutable_data<float>()[i] = 0.0006f / inner * (1 + 0.1f * static_cast<float>(i % 3));
      }
      ins[1] = Operand{sa, true};
      ins[2] = Operand{vector_of(c.a, c.m, 2)};
      ins[4] = Operand{sb, true};
      ins[5] = Operand{vector_of(c.b, c.n, 1)};
      ins[6] = Operand{sy, true};
      ins[7] = Operand{vector_of(out, c.n, 120)};
    }
    check("QLinearMatMul", ins, label("QLinearMatMul", c), {}, c.m == 128 ? 2 : 1, 10);
  }
  check("QLinearMatMul",
        {Operand{rand_bytes(DType::Int8, {2, 3, 40}, 7)}, Operand{Tensor::scalar<float>(0.05f)},
         Operand{scalar_of(DType::Int8, -4)}, Operand{rand_bytes(DType::Int8, {40, 12}, 8), true},
         Operand{Tensor::scalar<float>(0.01f)}, Operand{scalar_of(DType::Int8, 0)}, Operand{Tensor::scalar<float>(0.04f)},
         Operand{scalar_of(DType::Int8, 2)}},
        "rank-3 A, run-time scales", {}, 1, 10);
}

// float32 inputs with ties at `scale`, NaN, infinities and values that saturate.
Tensor tricky_floats(std::vector<int64_t> shape, float scale, uint64_t seed) {
  Tensor t = testing::mm::rand(std::move(shape), seed);
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (i % 13 == 0) p[i] = (static_cast<float>(i % 301) - 150.5f) * scale;  // ties
    else if (i % 101 == 7) p[i] = std::numeric_limits<float>::quiet_NaN();
    else if (i % 211 == 9) p[i] = i % 2 ? INFINITY : -INFINITY;
    else p[i] *= 300 * scale;
  }
  return t;
}

TEST(CpuQuantOnnx, QuantizeAndDequantizeLinearPerTensor) {
  for (int64_t n : {int64_t{1}, int64_t{15}, int64_t{1000}, int64_t{70000}})
    for (DType t : {DType::UInt8, DType::Int8})
      for (bool with_zp : {true, false}) {
        const std::string what = std::to_string(n) + " " + dtype_name(t) + (with_zp ? " zp" : "");
        std::vector<std::optional<Operand>> q = {Operand{tricky_floats({n}, 0.05f, static_cast<uint64_t>(n))},
                                                 Operand{Tensor::scalar<float>(0.05f), true}};
        std::vector<Attribute> attrs;
        if (with_zp) q.push_back(Operand{scalar_of(t, t == DType::Int8 ? -7 : 120), true});
        else if (t == DType::Int8) attrs.push_back(Attribute::make_int("output_dtype", 3));  // opset 21: int8
        check("QuantizeLinear", q, "QuantizeLinear " + what, attrs, n > 20000 ? 2 : 1);
        std::vector<std::optional<Operand>> d = {Operand{rand_bytes(t, {n}, static_cast<uint64_t>(n))},
                                                 Operand{Tensor::scalar<float>(0.37f)}};
        if (with_zp) d.push_back(Operand{scalar_of(t, 77)});
        check("DequantizeLinear", d, "DequantizeLinear " + what, {}, n > 20000 ? 2 : 1);
      }
  // A [1] zero point with a scalar scale (the ONNX backend tests' pairing), rank 3.
  check("QuantizeLinear",
        {Operand{tricky_floats({2, 3, 17}, 0.1f, 5)}, Operand{Tensor::scalar<float>(0.1f)},
         Operand{Tensor::from_vector<uint8_t>({1}, {3})}},
        "[1] zero point");
}

// Per-axis DequantizeLinear (weights per output channel): every axis of rank 1-3 shapes,
// the last axis (one scale per element of a row) and inner rows, with and without zero
// points, one and two threads; bit for bit against the reference.
TEST(CpuQuantOnnx, DequantizeLinearPerAxis) {
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis;
  };
  const std::vector<Case> cases = {{{5}, 0},        {{3, 7}, 0},      {{3, 7}, 1},      {{3, 7}, -1},
                                   {{64, 129}, 1},  {{129, 64}, 0},   {{2, 5, 3}, 1},   {{2, 5, 3}, 2},
                                   {{2, 5, 3}, 0},  {{300, 257}, 1}};
  int seed = 0;
  for (const Case& c : cases)
    for (DType t : {DType::UInt8, DType::Int8})
      for (bool with_zp : {true, false}) {
        const int64_t axis = c.axis < 0 ? c.axis + static_cast<int64_t>(c.shape.size()) : c.axis;
        const int64_t channels = c.shape[static_cast<size_t>(axis)];
        Tensor scale(DType::Float32, {channels});
        for (int64_t i = 0; i < channels; ++i) scale.mutable_data<float>()[i] = 0.01f + 0.37f * static_cast<float>(i % 11);
        std::vector<std::optional<Operand>> d = {Operand{rand_bytes(t, c.shape, static_cast<uint64_t>(++seed))},
                                                 Operand{scale, true}};
        if (with_zp) d.push_back(Operand{vector_of(t, channels, 5), true});
        std::ostringstream what;
        what << "DequantizeLinear per axis " << c.axis << " of " << c.shape.size() << "-D [" << c.shape.back() << "] "
             << dtype_name(t) << (with_zp ? " zp" : "");
        for (int threads : {1, 2})
          check("DequantizeLinear", d, what.str(), {Attribute::make_int("axis", c.axis)}, threads);
      }
}

TEST(CpuQuantOnnx, DynamicQuantizeLinear) {
  for (int64_t n : {int64_t{1}, int64_t{31}, int64_t{4096}, int64_t{50001}}) {
    Tensor x = testing::mm::rand({n}, static_cast<uint64_t>(n));
    for (int64_t i = 0; i < n; i += 17) x.mutable_data<float>()[i] = std::numeric_limits<float>::quiet_NaN();
    for (float shift : {0.0f, 1.5f, -1.5f}) {  // both signs, all positive, all negative
      Tensor xs = x;
      xs = Tensor(DType::Float32, x.shape());
      for (int64_t i = 0; i < n; ++i) xs.mutable_data<float>()[i] = x.data<float>()[i] + shift;
      auto g = std::vector<std::optional<Operand>>{Operand{xs}};
      auto graph = std::make_shared<Graph>();
      graph->opset_imports[""] = 21;
      graph->add_input("in0", TensorType(DType::Float32, DimVector{n}));
      graph->add_node("DynamicQuantizeLinear", {"in0"}, {"y", "s", "z"}, {}, "", "node_under_test");
      for (const char* o : {"y", "s", "z"}) graph->mark_output(graph->value(o));
      infer_graph(*graph);
      Session fast = testing::mm::session(graph, KernelChoice::Optimized, 2);
      Session ref = testing::mm::session(graph, KernelChoice::Reference);
      EXPECT_EQ(fast.optimized_nodes(), 1);
      const int64_t fallbacks = cpu::int8_reference_runs();
      const NamedTensors got = fast.run({{"in0", xs}}), want = ref.run({{"in0", xs}});
      EXPECT_EQ(cpu::int8_reference_runs(), fallbacks);
      for (size_t i = 0; i < 3; ++i)
        expect_same_bytes(got[i].second, want[i].second, "DynamicQuantizeLinear n " + std::to_string(n));
    }
  }
  // All zeros: scale 1/255, zero point 0.
  check("DynamicQuantizeLinear", {Operand{Tensor(DType::Float32, {3, 5})}}, "zeros");
}

}  // namespace
}  // namespace octet
