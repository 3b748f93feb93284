// The optimized octet.QAttention kernel (kernels/cpu/qattention*.cpp) against its
// reference twin, at every ISA level the machine has and on 1 and 2 threads: lengths
// around the 16-key tiles, the 2-key pairs and the 64-row task blocks, head sizes with
// odd channel counts and tails, Sq != Sk, both mask broadcasts, causal, seq-first, and
// uint8/int8 zero points (nonzero ones included).
//
// The integer parts are exact and the float products are the reference's, so outputs
// agree to float rounding except where the two softmaxes (double in the reference, the
// vectorized float one here) put a p_j / p_scale on different sides of a .5 boundary: one
// P quantum moves in that row. compare_qattention (qattention_test_util.h) allows that much
// on such elements and the tests bound how many there are.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <tuple>
#include <vector>

#include "kernels/cpu/qattention.h"
#include "kernels/kernel.h"
#include "qattention_test_util.h"

namespace octet::testing {
namespace {

struct Totals {
  int64_t elements = 0, loose = 0;
};

Totals check(const QCase& c, const NamedTensors& in) {
  auto g = qattention_graph(c);
  SessionOptions ref_opts;
  ref_opts.kernels = KernelChoice::Reference;
  const Tensor want = Session(g, ref_opts).run(in)[0].second;
  Totals t;
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel isa(level);
    // At the AVX-512 level: the AMX task (where the CPU has it), the VNNI one (where it has
    // that) and the plain one. 0 plain, 1 VNNI, 2 VNNI with AMX P.V.
    const bool both = level == IsaLevel::Avx512 && cpu::qattn::vnni_available();
    const bool amx = both && cpu::qattn::amx_available();
    std::vector<int> tasks = {1};
    if (both) tasks = amx ? std::vector<int>{2, 1, 0} : std::vector<int>{1, 0};
    for (int task : tasks) {
      const bool vnni = task >= 1;
      cpu::qattn::set_vnni_allowed(vnni);
      cpu::qattn::set_amx_allowed(task == 2);
      for (int threads : {1, 2}) {
        SessionOptions opts;
        opts.threads = threads;
        Session s(g, opts);
        EXPECT_EQ(s.optimized_nodes(), 1) << c.describe();
        const Tensor got = s.run(in)[0].second;
        const std::string what = c.describe() + " isa " + isa_name(level) + (both && vnni ? "+vnni" : "") +
                                 (task == 2 ? "+amx" : "") + " threads " + std::to_string(threads);
        const QCompare r = compare_qattention(got, want, c, what);
        t.elements += r.elements;
        t.loose += r.loose;
      }
    }
    cpu::qattn::set_vnni_allowed(true);
    cpu::qattn::set_amx_allowed(true);
  }
  return t;
}

// Runs every case under every zero-point style; flips stay rare (see the file comment).
void check_all(const std::vector<QCase>& cases, const char* label) {
  Totals total;
  for (const QCase& base : cases)
    for (auto with : {with_u8, with_u8_pzp, with_s8, with_s8_asym, with_u8_wide_p, with_s8_wide_p}) {
      const Totals t = check(with(base), qattention_inputs(with(base)));
      total.elements += t.elements;
      total.loose += t.loose;
    }
  std::printf("[ flips    ] %s: %lld of %lld outputs one P quantum off\n", label, (long long)total.loose,
              (long long)total.elements);
  EXPECT_LE(total.loose * 1000, total.elements) << label;
}

QCase shape(int64_t b, int64_t sq, int64_t sk, int64_t h, int64_t dk, int64_t dv) {
  QCase c;
  c.batch = b, c.q_len = sq, c.kv_len = sk, c.heads = h, c.head_k = dk, c.head_v = dv;
  return c;
}

using Shape5 = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>;  // batch, Sq, Sk, heads, head size

// Each shape in both P forms, each with no mask, a mask the kernels fuse (broadcast along
// keys), one they do not (along queries) and causal rows (some see no key): the sweep the
// task-against-task tests share.
std::vector<QCase> p_forms_and_masks(std::initializer_list<Shape5> shapes) {
  std::vector<QCase> cases;
  for (auto [b, sq, sk, h, d] : shapes) {
    for (bool rows : {true, false}) {
      QCase c = shape(b, sq, sk, h, d, d);
      c.row_probabilities = rows;
      cases.push_back(c);
      c.mask_shape = {b, 1, 1, sk};
      cases.push_back(c);
      c.mask_shape = {b, 1, sq, 1};
      cases.push_back(c);
      c.mask_shape = {};
      c.causal = true;
      cases.push_back(c);
    }
  }
  return cases;
}

TEST(CpuQAttention, Lengths) {
  std::vector<QCase> cases;
  for (int64_t s : {1, 2, 7, 64, 65, 197}) cases.push_back(shape(1, s, s, 2, 16, 16));
  cases.push_back(shape(2, 1, 9, 3, 16, 16));   // one query, odd key count
  cases.push_back(shape(2, 9, 1, 3, 16, 16));   // one key
  cases.push_back(shape(2, 65, 130, 1, 8, 8));  // Sq != Sk across task blocks
  cases.push_back(shape(1, 7, 197, 4, 8, 16));
  check_all(cases, "lengths");
}

TEST(CpuQAttention, EmptyShapes) {
  // No keys or no query channels go to the reference kernel at run time; no queries or no
  // value channels give an empty Y.
  check_all({shape(1, 3, 0, 2, 8, 8), shape(2, 3, 5, 2, 0, 8), shape(1, 0, 5, 2, 8, 8), shape(1, 3, 5, 2, 8, 0)},
            "empty shapes");
}

TEST(CpuQAttention, HeadSizes) {
  std::vector<QCase> cases;
  // 32 (MiniLM) and 36: the VNNI packing quantizes only dk4 of a 64-byte K row.
  for (int64_t d : {1, 8, 16, 17, 32, 36, 64}) cases.push_back(shape(2, 13, 13, 3, d, d));
  cases.push_back(shape(1, 7, 11, 2, 17, 64));  // Dk != Dv
  cases.push_back(shape(1, 7, 11, 4, 64, 1));
  cases.push_back(shape(1, 65, 33, 1, 80, 33));
  check_all(cases, "head sizes");
}

TEST(CpuQAttention, MasksAndCausal) {
  std::vector<QCase> cases;
  const int64_t b = 2, h = 3, sq = 19, sk = 23;
  for (std::vector<int64_t> mask : std::vector<std::vector<int64_t>>{{b, 1, 1, sk}, {1, 1, sq, sk}, {b, h, sq, sk}}) {
    QCase c = shape(b, sq, sk, h, 16, 16);
    c.mask_shape = mask;
    cases.push_back(c);
    c.causal = true;
    cases.push_back(c);
  }
  for (auto [sq2, sk2] : {std::pair<int64_t, int64_t>{17, 17}, {3, 70}, {70, 3}, {65, 65}}) {
    QCase c = shape(2, sq2, sk2, 2, 17, 8);
    c.causal = true;  // with a past (Sk > Sq), and rows that see no key (Sq > Sk)
    cases.push_back(c);
  }
  check_all(cases, "masks and causal");
}

TEST(CpuQAttention, RowProbabilities) {
  // exp(s - max) quantized and each output row divided by its sum (octet quantize --attention int8),
  // across tiles, task blocks, masks, causal rows and a tail of value channels.
  std::vector<QCase> cases;
  for (QCase c : {shape(1, 7, 197, 4, 8, 16), shape(2, 65, 130, 1, 8, 8), shape(1, 13, 13, 3, 17, 33)}) {
    c.row_probabilities = true;
    cases.push_back(c);
    c.causal = true;
    cases.push_back(c);
    c.causal = false;
    c.mask_shape = {c.batch, 1, 1, c.kv_len};
    cases.push_back(c);
  }
  check_all(cases, "row probabilities");
}

// The harness models' attention (64-channel heads, row_probabilities; with_u8_wide_p and
// with_s8_wide_p give the 4095-level P octet quantize writes) at odd lengths, 1..12 heads
// and batch 1..3, with and without a key mask: the VNNI task's 64-key score blocks and
// their 16-key tails, P byte rows across 64-byte chunks, the P >= 256 groups (every row's
// peak is 4095), the mask add and row maximum fused into the score blocks, and a mask
// broadcast along keys, which takes the separate passes.
TEST(CpuQAttention, ModelShapes) {
  std::vector<QCase> cases;
  for (auto [b, h, s] : {std::tuple<int64_t, int64_t, int64_t>{1, 6, 257}, {3, 1, 7}, {2, 12, 1}, {1, 12, 128},
                         {3, 2, 65}}) {
    QCase c = shape(b, s, s, h, 64, 64);
    c.row_probabilities = true;
    cases.push_back(c);
    c.mask_shape = {b, 1, 1, s};
    cases.push_back(c);
  }
  QCase c = shape(2, 9, 11, 3, 64, 64);
  c.mask_shape = {2, 1, 9, 1};
  cases.push_back(c);
  c.row_probabilities = true;
  cases.push_back(c);
  check_all(cases, "model shapes");
}

// P with 16-bit levels (int16 p zero point 0): P.V sums of 1/p_scale * |v - zp| per key
// can leave int32 on long rows. Here they would: Q = 0 makes every score equal (each key's
// P is 32767) and V saturates (|v - 127| = 128), so 700 keys sum to 2.9e9. Such runs go to
// the reference kernel (exact in int64); 300 keys fit and stay on the optimized tasks.
TEST(CpuQAttention, WideProbabilitiesTooLongForInt32TakeTheReference) {
  for (int64_t sk : {int64_t{300}, int64_t{700}}) {
    QCase c = with_u8(shape(1, 5, sk, 2, 8, 8));
    c.row_probabilities = true;
    c.p_int16 = true;
    c.zp[3] = 0;
    c.scale[3] = 1.0f / 32767;
    NamedTensors in = qattention_inputs(c);
    for (auto& [name, t] : in) {
      if (name != "q" && name != "v") continue;
      float* x = t.mutable_data<float>();
      for (int64_t i = 0; i < t.numel(); ++i) x[i] = name == "q" ? 0.0f : 2.5f;
    }
    const Totals t = check(c, in);
    EXPECT_EQ(t.loose, 0) << c.describe();
  }
}

// The AVX512-VNNI task against the plain AVX-512 one, as its header promises. Without
// row_probabilities, bit for bit: the same integers and float products, the same softmax
// floats and sums (its leaner exp, its mask add and row maximum fused into the score
// blocks), so the same outputs. The reference comparisons above allow P flips, so a change
// to either task's softmax that moves a last bit (a reordered sum, a different exp) would
// pass them; this does not. With row_probabilities the VNNI task computes P from its own
// exp2 (within ~1e-6 relative of exp(s - max) / p_scale): every output within
// compare_qattention's bound of the plain task's (float rounding, or one P quantum), and
// rows with a flipped P rare: exp2's error reaches a .5 boundary only for P within ~0.004
// of one. Edges: one key, odd and 16-key-tail lengths, one query, masks fused or not
// (broadcast along keys), causal rows (some see no key), both P forms and the three P types.
TEST(CpuQAttention, VnniTaskMatchesPlainAvx512) {
  if (!cpu::qattn::vnni_available()) GTEST_SKIP() << "no AVX512-VNNI";
  ScopedIsaLevel isa(IsaLevel::Avx512);
  if (active_isa() != IsaLevel::Avx512) GTEST_SKIP() << "no AVX-512";
  const std::vector<QCase> cases =
      p_forms_and_masks({{1, 1, 1, 2, 64}, {2, 1, 9, 3, 32}, {1, 7, 7, 2, 64}, {1, 17, 17, 1, 17}, {1, 33, 65, 2, 64},
                         {1, 128, 128, 12, 32}, {1, 257, 257, 2, 64}, {2, 9, 1, 3, 16}, {1, 5, 300, 1, 64},
                         {1, 3, 513, 1, 16}});
  Totals rows_total;
  for (const QCase& base : cases)
    for (auto with : {with_u8, with_u8_wide_p, with_s8_wide_p}) {
      const QCase c = with(base);
      const NamedTensors in = qattention_inputs(c);
      auto g = qattention_graph(c);
      Tensor got[2];
      for (bool vnni : {false, true}) {
        cpu::qattn::set_vnni_allowed(vnni);
        got[vnni] = Session(g, SessionOptions{}).run(in)[0].second;
      }
      cpu::qattn::set_vnni_allowed(true);
      ASSERT_EQ(got[0].shape(), got[1].shape());
      if (c.row_probabilities) {
        const QCompare r = compare_qattention(got[1], got[0], c, c.describe() + " vnni against plain");
        rows_total.elements += r.elements;
        rows_total.loose += r.loose;
        continue;
      }
      int64_t differ = 0;
      for (int64_t i = 0; i < got[0].numel(); ++i) differ += std::memcmp(got[0].data<float>() + i, got[1].data<float>() + i, 4) != 0;
      EXPECT_EQ(differ, 0) << c.describe();
    }
  std::printf("[ flips    ] vnni row probabilities: %lld of %lld outputs one P quantum off the plain task\n",
              (long long)rows_total.loose, (long long)rows_total.elements);
  EXPECT_GT(rows_total.elements, 0);
  EXPECT_LE(rows_total.loose * 1000, rows_total.elements);  // 0.02% when written
}

// The AMX task's P.V sums the VNNI task's P bytes against the same V bytes on TDPBUSD tiles
// (16 query rows x 16 channels, 64 keys per tile; the high bytes of 16-bit P in a second
// product), the same exact int32 with the same float steps after them, so every output must
// equal the VNNI task's bit for bit, both P forms included. Edges: key counts around the
// 64-key block and the 16-key tile (1, 15, 16, 17, 129, 257), query rows around the 16-row
// tile and the 64-row task (1, 5, 9, 16, 17, 33, 70, 128, 257), value channels from one
// partial 16-channel block (16, 17) through the 4-tile pass (32, 64) to a pass and a tail
// (100) and two passes (128), masks fused (broadcast along keys) or not (along queries),
// causal rows, batch and heads > 1, 8-bit and 16-bit P (its high bytes), 1 and 2 threads.
TEST(CpuQAttention, AmxTaskMatchesVnniBitForBit) {
  if (!cpu::qattn::amx_available()) GTEST_SKIP() << "no AMX-INT8 (or the OS did not grant tile state)";
  ScopedIsaLevel isa(IsaLevel::Avx512);
  if (active_isa() != IsaLevel::Avx512) GTEST_SKIP() << "no AVX-512";
  const std::vector<QCase> cases =
      p_forms_and_masks({{1, 1, 1, 2, 64}, {2, 5, 15, 3, 32}, {1, 16, 16, 2, 17}, {1, 17, 17, 1, 64},
                         {1, 33, 257, 2, 100}, {2, 70, 129, 2, 128}, {1, 128, 128, 12, 32}, {1, 257, 257, 2, 64},
                         {2, 9, 1, 3, 16}});
  int64_t compared = 0;
  for (const QCase& base : cases)
    for (auto with : {with_u8, with_s8_asym, with_u8_wide_p}) {
      const QCase c = with(base);
      const NamedTensors in = qattention_inputs(c);
      auto g = qattention_graph(c);
      for (int threads : {1, 2}) {
        SessionOptions opts;
        opts.threads = threads;
        Tensor got[2];
        for (bool amx : {false, true}) {
          cpu::qattn::set_amx_allowed(amx);
          got[amx] = Session(g, opts).run(in)[0].second;
        }
        cpu::qattn::set_amx_allowed(true);
        ASSERT_EQ(got[0].shape(), got[1].shape());
        int64_t differ = 0;
        for (int64_t i = 0; i < got[0].numel(); ++i)
          differ += std::memcmp(got[0].data<float>() + i, got[1].data<float>() + i, 4) != 0;
        EXPECT_EQ(differ, 0) << c.describe() << " threads " << threads;
        compared += got[0].numel();
      }
    }
  EXPECT_GT(compared, 0);
}

TEST(CpuQAttention, SeqFirst) {
  std::vector<QCase> cases;
  QCase c = shape(3, 11, 11, 4, 16, 16);
  c.seq_first = true;
  cases.push_back(c);
  c = shape(2, 5, 9, 2, 8, 17);
  c.seq_first = true, c.causal = true, c.mask_shape = {1, 1, 5, 9};
  cases.push_back(c);
  c = shape(2, 64, 197, 1, 64, 64);
  c.seq_first = true, c.mask_shape = {2, 1, 1, 197};
  cases.push_back(c);
  check_all(cases, "seq_first");
}

// Values within a few ulps of (k + 1/2) * scale: exact ties (round half to even) and the
// values where x * (1 / scale) rounds differently from x / scale, which the kernels must
// not use; |k| up to 160 also saturates, as do the infinities; NaN quantizes to the zero point.
Tensor near_boundaries(std::vector<int64_t> shape, float scale, uint32_t seed) {
  std::vector<float> cand = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f};
  for (int k = -160; k <= 160; ++k) {
    const float x = (static_cast<float>(k) + 0.5f) * scale;
    float lo = x, hi = x;
    cand.push_back(x);
    for (int u = 0; u < 2; ++u) {
      cand.push_back(lo = std::nextafter(lo, -INFINITY));
      cand.push_back(hi = std::nextafter(hi, INFINITY));
    }
  }
  Tensor t(DType::Float32, std::move(shape));
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = cand[(i * 7919 + seed * 131) % cand.size()];
  return t;
}

TEST(CpuQAttention, QuantizationRoundingBoundaries) {
  int64_t ties = 0, reciprocal_differs = 0;
  for (auto with : {with_u8, with_u8_pzp, with_s8, with_s8_asym}) {
    for (bool causal : {false, true}) {
      QCase c = with(shape(2, 33, 33, 2, 17, 16));
      c.causal = causal;
      NamedTensors in = qattention_inputs(c);
      for (int t = 0; t < 3; ++t) {
        in[t].second = near_boundaries(in[t].second.shape(), c.scale[t], t + 1);
        const float* x = in[t].second.data<float>();
        for (int64_t i = 0; i < in[t].second.numel(); ++i) {
          if (!std::isfinite(x[i])) continue;
          const float q = x[i] / c.scale[t];
          ties += q == std::floor(q) + 0.5f;
          reciprocal_differs += std::nearbyint(q) != std::nearbyint(x[i] * (1.0f / c.scale[t]));
        }
      }
      check(c, in);
    }
  }
  EXPECT_GT(ties, 1000);  // the inputs do exercise what they are meant to
  EXPECT_GT(reciprocal_differs, 10);
}

TEST(CpuQAttention, NonFloat32QFallsBackToReference) {
  QCase c = with_u8(shape(1, 4, 4, 2, 8, 8));
  auto g = qattention_graph(c);
  g->value("q")->type = TensorType(DType::Float16, DimVector{1, 4, 16});
  // (The rule rejects float16 Q, so a session never gets that far; prepare declines it.)
  const KernelDef* def = KernelRegistry::optimized().find_def("octet", "QAttention");
  ASSERT_NE(def, nullptr);
  std::unique_ptr<KernelState> state;
  EXPECT_FALSE(def->prepare(*g->nodes().at(0), state));
}

// channel_ranges: Q, K, V read from one packed tensor give exactly what the same
// QAttention gives on the ranges copied out (the integer math is the same), on the
// reference and on every optimized path.
TEST(CpuQAttention, ChannelRangesReadOnePackedTensorInPlace) {
  for (bool seq_first : {false, true}) {
    QCase c = with_u8_pzp(shape(2, 19, 19, 3, 8, 16));
    c.seq_first = seq_first;
    const int64_t qc = c.heads * c.head_k, vc = c.heads * c.head_v, channels = 3 + 2 * qc + 2 + vc + 4;
    const std::vector<int64_t> ranges = {3, 3 + qc, 3 + qc, 3 + 2 * qc, 5 + 2 * qc, 5 + 2 * qc + vc};
    const Tensor qkv = random_f32(lead_shape(c, c.q_len, channels), 77, -2.5f, 2.5f);
    NamedTensors split;
    const int64_t rows = c.batch * c.q_len;
    for (int i = 0; i < 3; ++i) {
      const int64_t b = ranges[2 * i], e = ranges[2 * i + 1];
      Tensor t(DType::Float32, lead_shape(c, c.q_len, e - b));
      for (int64_t r = 0; r < rows; ++r)
        std::copy(qkv.data<float>() + r * channels + b, qkv.data<float>() + r * channels + e,
                  t.mutable_data<float>() + r * (e - b));
      split.emplace_back(std::string(1, "qkv"[i]), std::move(t));
    }
    auto packed = std::make_shared<Graph>();
    packed->opset_imports[""] = 21;
    packed->opset_imports["octet"] = 1;
    const std::vector<int64_t> dims = lead_shape(c, c.q_len, channels);
    packed->add_input("qkv", TensorType(DType::Float32, DimVector(dims.begin(), dims.end())));
    std::vector<std::string> ins = {"qkv", "qkv", "qkv", ""};
    for (auto& [name, t] : qattention_params(c)) {
      packed->add_initializer(name, std::make_shared<Tensor>(t));
      ins.push_back(name);
    }
    std::vector<Attribute> attrs = qattention_attrs(c);
    attrs.push_back(Attribute::make_ints("channel_ranges", ranges));
    packed->add_node("QAttention", ins, {"y"}, attrs, "octet", "qattention");
    packed->mark_output(packed->value("y"));

    SessionOptions ref_opts;
    ref_opts.kernels = KernelChoice::Reference;
    const Tensor want = Session(qattention_graph(c), ref_opts).run(split)[0].second;
    const NamedTensors in = {{"qkv", qkv}};
    const Tensor ref_packed = Session(packed, ref_opts).run(in)[0].second;
    ASSERT_EQ(ref_packed.shape(), want.shape());
    for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(ref_packed.data<float>()[i], want.data<float>()[i]) << i;
    for (IsaLevel level : available_isas()) {
      ScopedIsaLevel isa(level);
      Session s(packed, SessionOptions{});
      ASSERT_EQ(s.optimized_nodes(), 1);
      compare_qattention(s.run(in)[0].second, want, c, c.describe() + " packed, isa " + isa_name(level));
    }
  }
}

// ---- timings (printed, never asserted)

// The fastest of `calls` single calls (a shared machine's preemptions land in the others).
double fastest_us(const Node& node, const std::vector<const Tensor*>& inputs, KernelFn fn, int threads, int calls) {
  double best = 1e30;
  for (int c = 0; c < calls; ++c) {
    KernelContext ctx(node, inputs);
    ctx.set_threads(threads);
    const auto start = std::chrono::steady_clock::now();
    fn(ctx);
    best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

TEST(CpuQAttentionBench, PrintOneThreadTimings) {
  for (auto [h, s, d] : {std::tuple<int64_t, int64_t, int64_t>{4, 128, 16}, {8, 128, 64}, {3, 197, 64}}) {
    const QCase c = with_u8(shape(1, s, s, h, d, d));
    auto qg = qattention_graph(c);
    const NamedTensors in = qattention_inputs(c);
    std::vector<const Tensor*> qin = {&in[0].second, &in[1].second, &in[2].second, nullptr};
    for (size_t i = 4; i < qg->nodes().at(0)->inputs().size(); ++i) qin.push_back(qg->nodes().at(0)->input(i)->constant().get());
    // octet.Attention on the same Q, K, V (scale 0.37 as the QAttention graph).
    auto fg = std::make_shared<Graph>();
    fg->opset_imports["octet"] = 1;
    for (const char* n : {"q", "k", "v"}) fg->add_input(n, qg->value(n)->type);
    fg->add_node("Attention", {"q", "k", "v"}, {"y"}, qattention_attrs(c), "octet");
    const std::vector<const Tensor*> fin = {&in[0].second, &in[1].second, &in[2].second};
    std::printf("[ timing   ] B1 H%lld S%lld D%lld, one thread:", (long long)h, (long long)s, (long long)d);
    for (IsaLevel level : available_isas()) {
      ScopedIsaLevel scoped(level);
      const bool both = level == IsaLevel::Avx512 && cpu::qattn::vnni_available();
      for (bool vnni : both ? std::vector<bool>{false, true} : std::vector<bool>{true}) {
        cpu::qattn::set_vnni_allowed(vnni);
        const double tq = best_us_per_call(*qg->nodes().at(0), qin, KernelRegistry::optimized().find("octet", "QAttention"), 20000);
        const double tf = best_us_per_call(*fg->nodes().at(0), fin, KernelRegistry::optimized().find("octet", "Attention"), 20000);
        std::printf(" | %s%s QAttention %.1f us, Attention %.1f us (%.2fx)", isa_name(level), both && vnni ? "+vnni" : "",
                    tq, tf, tf / tq);
      }
      cpu::qattn::set_vnni_allowed(true);
    }
    std::printf("\n");
  }
}

// The harness models' attention as octet quantize writes it (uint8 Q, K, V; P with 4095
// levels, row_probabilities): DINOv2-S (6 heads, 257 tokens), MiniLM (12 heads, a key
// mask) at 128 and 384 tokens, batch 1 and 8; fastest call on 1 and 2 threads.
TEST(CpuQAttentionBench, PrintModelShapeTimings) {
  struct Shape {
    const char* name;
    int64_t b, h, s, d;
    bool mask;
  };
  // MiniLM's heads have 32 channels; "minilm-d64" keeps the 64-channel timings of earlier sessions.
  for (const Shape& m : {Shape{"dinov2", 1, 6, 257, 64, false}, Shape{"dinov2", 8, 6, 257, 64, false},
                         Shape{"minilm", 1, 12, 128, 32, true}, Shape{"minilm", 8, 12, 128, 32, true},
                         Shape{"minilm", 1, 12, 384, 32, true}, Shape{"minilm-d64", 1, 12, 128, 64, true}}) {
    QCase c = with_u8_wide_p(shape(m.b, m.s, m.s, m.h, m.d, m.d));
    c.row_probabilities = true;
    if (m.mask) c.mask_shape = {m.b, 1, 1, m.s};
    auto g = qattention_graph(c, 0.125f);
    const NamedTensors in = qattention_inputs(c);
    std::vector<const Tensor*> qin = {&in[0].second, &in[1].second, &in[2].second, m.mask ? &in[3].second : nullptr};
    const Node& node = *g->nodes().at(0);
    for (size_t i = 4; i < node.inputs().size(); ++i) qin.push_back(node.input(i)->constant().get());
    const int calls = m.b > 1 ? 20 : 100;
    std::printf("[ timing   ] %s B%lld H%lld S%lld D%lld:", m.name, (long long)m.b, (long long)m.h, (long long)m.s,
                (long long)m.d);
    ScopedIsaLevel scoped(IsaLevel::Avx512);
    const bool both = cpu::qattn::vnni_available() && active_isa() == IsaLevel::Avx512;
    // 0 plain, 1 VNNI, 2 VNNI with AMX P.V.
    std::vector<int> tasks = {0};
    if (both) tasks = cpu::qattn::amx_available() ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 1};
    for (int task : tasks) {
      cpu::qattn::set_vnni_allowed(task >= 1);
      cpu::qattn::set_amx_allowed(task == 2);
      for (int threads : {1, 2}) {
        const double t = fastest_us(node, qin, KernelRegistry::optimized().find("octet", "QAttention"), threads, calls);
        std::printf(" | %s %d thread(s) %.1f us", task == 2 ? "avx512+vnni+amx" : task == 1 ? "avx512+vnni" : isa_name(active_isa()),
                    threads, t);
      }
    }
    cpu::qattn::set_vnni_allowed(true);
    cpu::qattn::set_amx_allowed(true);
    std::printf("\n");
  }
}

}  // namespace
}  // namespace octet::testing
