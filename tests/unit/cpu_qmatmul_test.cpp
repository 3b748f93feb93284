// The oneDNN octet.QMatMul kernel (src/kernels/cpu/dnnl_qmatmul*.cpp) against the
// reference kernel: edge shapes (M, K, N from 1 to 1000), rank-3 A, static and dynamic,
// uint8 and int8 activations, per-tensor and per-column weights, bias, GeLU, residual,
// a_channel_scale,
// one and two threads, the fallbacks, the primitive cache, concurrent runs, and every ISA
// level (oneDNN fixes its ISA per process: child processes with OCTET_ISA set; below
// AVX-512 VNNI the product runs split in two, see dnnl_int8_gemm.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>

#include <omp.h>

#include "isa_child_runs.h"
#include "kernels/cpu/dnnl_qmatmul.h"
#include "kernels/cpu/quant_ops.h"
#include "qmatmul_test_util.h"

namespace octet {
namespace {

using testing::mm::Operand;
using testing::qmm::QCase;

// Runs `c` on the optimized and the reference kernels and compares; returns how many
// nodes ran optimized.
int check(const QCase& c, int threads = 1) {
  auto ins = testing::qmm::operands(c);
  auto g = testing::qmm::graph(c);
  Session fast = testing::mm::session(g, KernelChoice::Optimized, threads);
  Session ref = testing::mm::session(g, KernelChoice::Reference);
  const NamedTensors in = testing::mm::feeds(ins);
  const int64_t fallbacks = cpu::int8_reference_runs();
  const Tensor got = fast.run(in)[0].second;
  if (fast.optimized_nodes() == 1) {
    EXPECT_EQ(cpu::int8_reference_runs(), fallbacks) << c.label() << ": ran the reference kernel";
  }
  testing::qmm::expect_close(got, ref.run(in)[0].second, c.label() + " threads " + std::to_string(threads));
  return fast.optimized_nodes();
}

QCase variant(int64_t m, int64_t k, int64_t n, int i) { return testing::qmm::cycled_variant({m, k}, n, i); }

TEST(CpuQMatMul, EdgeShapes) {
  int i = 0;
  for (int64_t m : {1, 3, 17, 128})
    for (int64_t k : {1, 7, 64, 1000})
      for (int64_t n : {1, 5, 64, 129}) {
        const QCase c = variant(m, k, n, i++);
        EXPECT_EQ(check(c), 1) << c.label();
      }
}

TEST(CpuQMatMul, EveryParameterKindAndThreadCount) {
  for (int i = 0; i < 2 * 2 * 2 * 3 * 5 * 7; i += 29)
    for (int threads : {1, 2}) {
      const QCase c = variant(33, 96, 40, i);
      EXPECT_EQ(check(c, threads), 1) << c.label();
    }
  // The full cross of mode x activation type x granularity, with everything else on.
  for (bool is_static : {true, false})
    for (DType act : {DType::UInt8, DType::Int8})
      for (bool per_column : {true, false})
        for (int threads : {1, 2}) {
          QCase c = variant(128, 64, 64, 0);
          c.is_static = is_static;
          c.act = act;
          c.per_column = per_column;
          c.activation = "gelu";
          c.residual = true;
          c.b_zero_point = true;  // explicit zeros are taken
          c.channel_scale = per_column;
          c.output_scale = true;
          EXPECT_EQ(check(c, threads), 1) << c.label();
        }
}

// The dynamic path's row blocks (dnnl_qmatmul.cpp): M large enough for several blocks per
// thread (N = 2048: 128-row blocks), uneven shares, fewer rows than threads; the sums are
// exact and the epilogue per row, so one and two threads give the same bits.
TEST(CpuQMatMul, RowBlocksOfThePerTokenPath) {
  int i = 0;
  for (int64_t m : {1, 2, 257, 600})
    for (bool float_a : {true, false}) {
      QCase c = variant(m, 48, 2048, 2 * i + 1);  // odd: dynamic
      ++i;
      c.activation = i % 2 ? "gelu" : "";
      c.residual = m > 2;
      c.channel_scale = false;
      auto ins = testing::qmm::operands(c);
      std::vector<Attribute> attrs = testing::qmm::attributes(c);
      if (!float_a) {  // a uint8 A quantized per row (as LayerNormQuantize writes it)
        const std::vector<int64_t> lead(c.a_shape.begin(), c.a_shape.end() - 1);
        Tensor scale(DType::Float32, lead), zero(DType::Int32, lead);
        for (int64_t r = 0; r < m; ++r) {
          scale.mutable_data<float>()[r] = 0.004f + 0.0001f * static_cast<float>(r % 7);
          zero.mutable_data<int32_t>()[r] = static_cast<int32_t>(r * 37 % 256);
        }
        ins[0]->value = testing::qmm::rand_bytes(DType::UInt8, c.a_shape, c.seed + 9);
        ins[1] = Operand{scale};
        ins[2] = Operand{zero};
      }
      const std::string what = c.label() + (float_a ? " float A" : " per-row uint8 A");
      auto g = testing::mm::one_node("QMatMul", ins, attrs, "octet");
      const NamedTensors in = testing::mm::feeds(ins);
      const Tensor want = testing::mm::session(g, KernelChoice::Reference).run(in)[0].second;
      Tensor first;
      for (int threads : {1, 2}) {
        Session fast = testing::mm::session(g, KernelChoice::Optimized, threads);
        const int64_t fallbacks = cpu::int8_reference_runs();
        const Tensor got = fast.run(in)[0].second;
        EXPECT_EQ(fast.optimized_nodes(), 1) << what;
        EXPECT_EQ(cpu::int8_reference_runs(), fallbacks) << what << ": ran the reference kernel";
        testing::qmm::expect_close(got, want, what + " threads " + std::to_string(threads));
        if (threads == 1) {
          first = got;
        } else {
          ASSERT_EQ(got.bytes(), first.bytes()) << what;
          EXPECT_EQ(std::memcmp(got.raw(), first.raw(), got.bytes()), 0) << what << ": 1 and 2 threads differ";
        }
      }
    }
}

// A run inside the caller's own OpenMP region (nested regions get one thread): the row
// blocks of every thread's share still run, on the one thread there is.
TEST(CpuQMatMul, RowBlocksInsideAnOuterParallelRegion) {
  QCase c = variant(300, 40, 70, 3);  // dynamic
  c.channel_scale = false;
  auto ins = testing::qmm::operands(c);
  auto g = testing::qmm::graph(c);
  const NamedTensors in = testing::mm::feeds(ins);
  Session fast = testing::mm::session(g, KernelChoice::Optimized, 2);
  const Tensor want = fast.run(in)[0].second;
  std::vector<Tensor> got(2);
#pragma omp parallel num_threads(2)
  got[static_cast<size_t>(omp_get_thread_num())] = fast.run(in)[0].second;
  for (const Tensor& t : got) {
    ASSERT_EQ(t.bytes(), want.bytes());
    EXPECT_EQ(std::memcmp(t.raw(), want.raw(), t.bytes()), 0) << "a run inside an outer region differs";
  }
}

TEST(CpuQMatMul, RankThreeAndOneA) {
  for (std::vector<int64_t> a : {std::vector<int64_t>{2, 9, 64}, {3, 1, 7}, {2, 3, 5, 17}, {64}}) {
    QCase c = variant(1, 1, 48, static_cast<int>(a.size()));
    c.a_shape = a;
    c.residual = true;
    EXPECT_EQ(check(c, 2), 1) << c.label();
    c.is_static = !c.is_static;
    EXPECT_EQ(check(c), 1) << c.label();
  }
}

TEST(CpuQMatMul, ExtremeActivationsSaturateAndZeroRowsStayZero) {
  // Rows of zeros (dynamic scale 1), rows far outside the static range, NaN-free.
  for (bool is_static : {true, false})
    for (DType act : {DType::UInt8, DType::Int8}) {
      QCase c = variant(6, 40, 24, 0);
      c.is_static = is_static;
      c.act = act;
      auto ins = testing::qmm::operands(c);
      float* x = ins[0]->value.mutable_data<float>();
      for (int64_t j = 0; j < 40; ++j) {
        x[j] = 0;                                  // row 0: zeros
        x[40 + j] = j % 2 ? 50.0f : -50.0f;        // row 1: saturates a static range
        x[80 + j] = 1e-30f * static_cast<float>(j);  // row 2: tiny
      }
      auto g = testing::mm::one_node("QMatMul", ins, testing::qmm::attributes(c), "octet");
      const NamedTensors in = testing::mm::feeds(ins);
      Session fast = testing::mm::session(g, KernelChoice::Optimized), ref = testing::mm::session(g, KernelChoice::Reference);
      EXPECT_EQ(fast.optimized_nodes(), 1);
      testing::qmm::expect_close(fast.run(in)[0].second, ref.run(in)[0].second, c.label() + " extremes");
    }
}

TEST(CpuQMatMul, QuantizedAFromLayerNormQuantize) {
  // A uint8/int8 A is already quantized (octet.LayerNormQuantize wrote it): static only,
  // with every epilogue, edge shapes, one and two threads.
  int i = 0;
  for (int64_t m : {1, 5, 128})
    for (int64_t k : {1, 33, 384})
      for (DType act : {DType::UInt8, DType::Int8})
        for (int threads : {1, 2}) {
          QCase c = variant(m, k, 1 + (i * 37) % 130, 2 * i);  // even: static
          ++i;
          c.act = act;
          c.channel_scale = false;
          auto ins = testing::qmm::operands(c);
          ins[0]->value = testing::qmm::rand_bytes(act, c.a_shape, c.seed + 7);
          auto g = testing::mm::one_node("QMatMul", ins, testing::qmm::attributes(c), "octet");
          Session fast = testing::mm::session(g, KernelChoice::Optimized, threads);
          Session ref = testing::mm::session(g, KernelChoice::Reference);
          EXPECT_EQ(fast.optimized_nodes(), 1) << c.label();
          const NamedTensors in = testing::mm::feeds(ins);
          const int64_t fallbacks = cpu::int8_reference_runs();
          testing::qmm::expect_close(fast.run(in)[0].second, ref.run(in)[0].second, c.label() + " quantized A");
          EXPECT_EQ(cpu::int8_reference_runs(), fallbacks) << c.label() << ": ran the reference kernel";
        }
  // The same product from the float A that quantizes to those bytes: identical outputs.
  QCase c = variant(17, 64, 40, 0);
  c.channel_scale = false;
  auto ins = testing::qmm::operands(c);
  Tensor bytes(DType::UInt8, c.a_shape);
  const float* x = ins[0]->value.data<float>();
  for (int64_t j = 0; j < bytes.numel(); ++j)
    bytes.mutable_data<uint8_t>()[j] =
        static_cast<uint8_t>(std::clamp(std::nearbyint(x[j] / (1.9f / 255.0f)) + 131.0f, 0.0f, 255.0f));
  auto from_float = testing::mm::one_node("QMatMul", ins, testing::qmm::attributes(c), "octet");
  auto quantized_ins = ins;
  quantized_ins[0]->value = bytes;
  auto from_bytes = testing::mm::one_node("QMatMul", quantized_ins, testing::qmm::attributes(c), "octet");
  const Tensor want = testing::mm::session(from_float, KernelChoice::Optimized, 2).run(testing::mm::feeds(ins))[0].second;
  const Tensor got =
      testing::mm::session(from_bytes, KernelChoice::Optimized, 2).run(testing::mm::feeds(quantized_ins))[0].second;
  ASSERT_EQ(got.bytes(), want.bytes());
  EXPECT_EQ(std::memcmp(got.raw(), want.raw(), got.bytes()), 0) << "quantized A differs from the float A it stands for";
}

// Y quantized (y_scale, y_zero_point): within one level of the reference everywhere, and a
// level off only where the float result sits within its rounding (the reference forms it
// in double, the kernels in float32) of a boundary: at most 1 in 200. And the same bits as
// the float output of the same kernel quantized by QuantizeLinear's optimized kernel.
void check_quantized_y(QCase c, DType y_type, int threads) {
  auto ins = testing::qmm::operands(c);
  ins.resize(12);
  ins[10] = testing::mm::Operand{Tensor::scalar<float>(y_type == DType::Int8 ? 2.6f / 127.0f : 5.2f / 255.0f), true};
  ins[11] = testing::mm::Operand{testing::qmm::scalar_of(y_type, y_type == DType::Int8 ? -4 : 124), true};
  auto g = testing::mm::one_node("QMatMul", ins, testing::qmm::attributes(c), "octet");
  Session fast = testing::mm::session(g, KernelChoice::Optimized, threads);
  Session ref = testing::mm::session(g, KernelChoice::Reference);
  EXPECT_EQ(fast.optimized_nodes(), 1) << c.label();
  const NamedTensors in = testing::mm::feeds(ins);
  const int64_t fallbacks = cpu::int8_reference_runs();
  const Tensor got = fast.run(in)[0].second, want = ref.run(in)[0].second;
  EXPECT_EQ(cpu::int8_reference_runs(), fallbacks) << c.label() << ": ran the reference kernel";
  ASSERT_EQ(got.dtype(), y_type) << c.label();
  ASSERT_EQ(want.dtype(), y_type) << c.label();
  ASSERT_EQ(got.shape(), want.shape()) << c.label();
  const std::vector<float> g8 = got.to_float_vector(), w8 = want.to_float_vector();
  int64_t flips = 0;
  for (size_t i = 0; i < g8.size(); ++i) {
    EXPECT_LE(std::fabs(g8[i] - w8[i]), 1.0f) << c.label() << " quantized Y, element " << i;
    flips += g8[i] != w8[i];
  }
  EXPECT_LE(flips * 200, std::max<int64_t>(static_cast<int64_t>(g8.size()), 200))
      << c.label() << " quantized Y: " << flips << " of " << g8.size() << " levels differ";

  auto float_ins = ins;
  float_ins.resize(10);
  while (!float_ins.empty() && !float_ins.back()) float_ins.pop_back();
  auto gf = testing::mm::one_node("QMatMul", float_ins, testing::qmm::attributes(c), "octet");
  const Tensor y = testing::mm::session(gf, KernelChoice::Optimized, threads).run(testing::mm::feeds(float_ins))[0].second;
  testing::mm::Operand yv{y};
  auto gq = testing::mm::one_node("QuantizeLinear", {yv, ins[10], ins[11]}, {}, "");
  const Tensor q = testing::mm::session(gq, KernelChoice::Optimized).run(testing::mm::feeds({yv, ins[10], ins[11]}))[0].second;
  ASSERT_EQ(q.bytes(), got.bytes());
  EXPECT_EQ(std::memcmp(q.raw(), got.raw(), q.bytes()), 0) << c.label() << ": differs from float Y + QuantizeLinear";
}

TEST(CpuQMatMul, QuantizedYForTheNextQMatMul) {
  int i = 0;
  for (int64_t m : {1, 7, 128})
    for (int64_t k : {5, 64, 384})
      for (int64_t n : {3, 65, 256}) {
        QCase c = variant(m, k, n, i);
        c.activation = i % 3 == 0 ? "gelu" : "";
        check_quantized_y(c, i % 4 == 1 ? DType::Int8 : DType::UInt8, 1 + i % 2);
        ++i;
      }
  // Every epilogue at once, static and dynamic A.
  for (bool is_static : {true, false})
    for (DType y_type : {DType::UInt8, DType::Int8}) {
      QCase c = variant(128, 96, 200, 0);
      c.is_static = is_static;
      c.activation = "gelu";
      c.residual = c.output_scale = true;
      check_quantized_y(c, y_type, 2);
    }
}

TEST(CpuQMatMul, FallbacksAndDeclinedNodes) {
  // A nonzero weight zero point, a run-time B or a run-time bias: the reference kernel.
  QCase c = variant(5, 16, 8, 0);
  c.b_zero_point = true;
  c.b_zero_value = 3;
  EXPECT_EQ(check(c), 0) << c.label();
  auto ins = testing::qmm::operands(variant(5, 16, 8, 0));
  for (size_t runtime : {size_t{3}, size_t{6}}) {
    auto copy = ins;
    copy[runtime]->constant = false;
    auto g = testing::mm::one_node("QMatMul", copy, {}, "octet");
    EXPECT_EQ(testing::mm::session(g, KernelChoice::Optimized).optimized_nodes(), 0) << "input " << runtime;
  }

  // Empty A (M = 0 through a symbolic dim) goes to the reference kernel, which then reads
  // B unpacked from the state: the session released the graph's copy.
  auto sym = ins;
  sym[0]->dims = DimVector{Dim::symbol("m"), 16};
  auto g = testing::mm::one_node("QMatMul", sym, {}, "octet");
  SessionOptions o;
  Session fast(std::move(g), o);
  EXPECT_EQ(fast.optimized_nodes(), 1);
  EXPECT_EQ(fast.released_weights(), 1);
  const int64_t fallbacks = cpu::int8_reference_runs();
  Tensor empty = fast.run({{"in0", Tensor(DType::Float32, {0, 16})}})[0].second;
  EXPECT_EQ(empty.shape(), (std::vector<int64_t>{0, 8}));
  EXPECT_EQ(cpu::int8_reference_runs(), fallbacks + 1);
  auto g2 = testing::mm::one_node("QMatMul", sym, {}, "octet");
  Session ref = testing::mm::session(g2, KernelChoice::Reference);
  for (int64_t m : {3, 0, 7}) {
    const NamedTensors in = {{"in0", testing::mm::rand({m, 16}, static_cast<uint64_t>(m))}};
    testing::qmm::expect_close(fast.run(in)[0].second, ref.run(in)[0].second, "released B, M " + std::to_string(m));
  }
}

TEST(CpuQMatMul, PrimitivesAreCachedPerShapeAndThreads) {
  for (bool is_static : {true, false}) {
    QCase c = variant(4, 64, 48, 0);
    c.is_static = is_static;
    c.activation = "gelu";  // post-ops must not make oneDNN want another layout of B
    auto ins = testing::qmm::operands(c);
    ins[0]->dims = DimVector{Dim::symbol("m"), 64};
    testing::mm::DirectKernel kernel(testing::mm::one_node("QMatMul", ins, testing::qmm::attributes(c), "octet"));
    const auto& state = static_cast<const dnnl_cpu::QMatMulState&>(*kernel.state);
    std::vector<const Tensor*> inputs;
    for (const auto& op : ins) inputs.push_back(op ? &op->value : nullptr);
    Tensor a5 = testing::mm::rand({5, 64}, 1), a7 = testing::mm::rand({7, 64}, 2);
    inputs[3] = nullptr;  // the state owns B
    inputs[0] = &a5;
    kernel.run(inputs, 1);
    EXPECT_EQ(state.primitives_created(), 1);
    kernel.run(inputs, 1);
    EXPECT_EQ(state.primitives_created(), 1);
    inputs[0] = &a7;
    kernel.run(inputs, 1);
    EXPECT_EQ(state.primitives_created(), 2);
    kernel.run(inputs, 2);
    // Fused (static where the product is exact): the primitive for (7, 2 threads). Else
    // the row blocks of the two threads' shares, 3 and 4 rows, each a one-thread product.
    EXPECT_EQ(state.primitives_created(), state.fused() ? 3 : 4);
    EXPECT_EQ(state.reference_runs(), 0);
    for (const std::string& impl : state.implementations()) {
      EXPECT_EQ(impl.rfind("ref", 0), std::string::npos) << impl;
      if (state.gemm().prepacked()) {
        EXPECT_EQ(impl.find("plain B"), std::string::npos) << impl;
      }
      std::cout << "[ impl     ] " << isa_name(dnnl_cpu::engine_isa()) << (is_static ? " static: " : " dynamic: ")
                << impl << (state.fused() ? " (fused)" : "") << (state.gemm().prepacked() ? ", B prepacked" : ", B plain")
                << (dnnl_cpu::int8_gemm_exact() ? "" : ", split 7-bit A") << "\n";
    }
  }
}

TEST(CpuQMatMul, ConcurrentRunsOnOneSession) {
  for (bool is_static : {true, false}) {
    QCase c = variant(1, 64, 96, 1);
    c.is_static = is_static;
    c.residual = false;
    auto ins = testing::qmm::operands(c);
    ins[0]->dims = DimVector{Dim::symbol("batch"), Dim::symbol("seq"), 64};
    ins[0]->value = testing::mm::rand({1, 1, 64}, 1);
    auto g = testing::mm::one_node("QMatMul", ins, testing::qmm::attributes(c), "octet");
    Session fast = testing::mm::session(g, KernelChoice::Optimized, 2), ref = testing::mm::session(g, KernelChoice::Reference);
    std::vector<Tensor> inputs, want;
    for (int64_t seq : {1, 5, 16, 33, 64, 7}) {
      inputs.push_back(testing::mm::rand({2, seq, 64}, static_cast<uint64_t>(seq)));
      want.push_back(ref.run({{"in0", inputs.back()}})[0].second);
    }
    // Outputs here are ~1, where expect_close's K-scaled float tolerance (64 * 4 eps) is
    // about this kernel's 1e-5.
    testing::mm::expect_concurrent_runs_match(fast, inputs, want, 10, 64);
  }
}

// The order dnnl_qmatmul_state.cpp relies on when it folds za and the bias into oneDNN's
// bias: oneDNN 2.6 computes an int8 matmul as scale * (acc + bias), not scale * acc + bias
// (oneDNN 3 changed this). A new oneDNN that reorders them fails here first.
TEST(CpuQMatMul, OneDnnAddsTheInt8BiasBeforeTheOutputScales) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  std::vector<uint8_t> a = {1, 1, 1, 1};
  std::vector<int8_t> b = {1, 2, 1, 2, 1, 2, 1, 2};  // acc = [4, 8]
  std::vector<float> bias = {10, 100}, y(2);
  const dnnl::memory::desc ad({1, 4}, dt::u8, tag::ab), bd({4, 2}, dt::s8, tag::ab), biasd({1, 2}, dt::f32, tag::ab),
      yd({1, 2}, dt::f32, tag::ab);
  dnnl::primitive_attr attr;
  attr.set_output_scales(1 << 1, {0.5f, 0.25f});
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, biasd, yd), attr, dnnl_cpu::engine());
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, dnnl_cpu::wrap(ad, a.data())},
                                                {DNNL_ARG_WEIGHTS, dnnl_cpu::wrap(bd, b.data())},
                                                {DNNL_ARG_BIAS, dnnl_cpu::wrap(biasd, bias.data())},
                                                {DNNL_ARG_DST, dnnl_cpu::wrap(yd, y.data())}};
  dnnl_cpu::run_primitive(dnnl::matmul(pd), pd.scratchpad_desc(), args);
  EXPECT_EQ(y, (std::vector<float>{0.5f * (4 + 10), 0.25f * (8 + 100)})) << dnnl_cpu::impl_name(pd);
  std::cout << "[ int8     ] " << isa_name(dnnl_cpu::engine_isa()) << ": " << dnnl_cpu::impl_name(pd)
            << ", u8 x s8 products " << (dnnl_cpu::int8_gemm_exact() ? "exact" : "saturate (A runs split)") << "\n";
}

// Each ISA level in a process of its own.
TEST(CpuQMatMulIsa, EveryLevelInAChildProcess) {
  testing::expect_child_runs_pass_at_every_isa("CpuQMatMul.*:CpuQuantOnnx.*:CpuConvInteger.*", "cpu_qmatmul_isa");
}

// One-thread timings of the int8 Linear layer against the float32 one (octet.MatMulBias
// on oneDNN), best of several runs; printed, never asserted (the machine is shared).
TEST(CpuQMatMulBench, VersusFloat32MatMulBias) {
  for (auto [m, k, n] : {std::tuple<int64_t, int64_t, int64_t>{128, 64, 64}, {128, 768, 768}}) {
    QCase c = variant(m, k, n, 0);
    c.activation = "gelu";
    const Tensor a = testing::mm::rand({m, k}, 1);
    const NamedTensors in = {{"in0", a}};
    auto fp32 = testing::mm::one_node(
        "MatMulBias", {Operand{a}, Operand{testing::mm::rand({k, n}, 2), true}, Operand{testing::mm::rand({n}, 3), true}},
        {Attribute::make_string("activation", "gelu")}, "octet");
    const double f = testing::mm::best_run(testing::mm::session(fp32, KernelChoice::Optimized, 1), in, 0.3, 200);
    for (bool is_static : {true, false}) {
      c.is_static = is_static;
      const double q = testing::mm::best_run(testing::mm::session(testing::qmm::graph(c), KernelChoice::Optimized, 1),
                                             in, 0.3, 200);
      std::printf("[ timing   ] [%ld,%ld]x[%ld,%ld] +bias+gelu, 1 thread, %s: QMatMul %s %.4f ms, fp32 MatMulBias "
                  "%.4f ms, %.2fx\n",
                  static_cast<long>(m), static_cast<long>(k), static_cast<long>(k), static_cast<long>(n),
                  isa_name(dnnl_cpu::engine_isa()), is_static ? "static u8" : "dynamic u8", q * 1e3, f * 1e3, f / q);
    }
  }
}

}  // namespace
}  // namespace octet
