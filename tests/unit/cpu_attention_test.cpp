// The optimized octet.Attention kernel (kernels/cpu/attention.cpp) against its reference
// twin, on every ISA level the machine has: single rows and keys, lengths that are not
// multiples of the tiles (4x16; 8x32 under AVX-512, whose 16x16 transposes pack K^T and
// the queries) or the 64-row task blocks (whose leftover rows take tiles of 1, 2 or 4),
// head sizes 1 to 100, causal with
// Sq != Sk (rows with no visible key included), every mask shape the op accepts, rows
// whose keys are all masked, the seq-first layout, and several thread counts.
#include <gtest/gtest.h>

#include <sstream>

#include <cmath>
#include <limits>
#include <string>

#include "kernels/dispatch/cpu_features.h"
#include "runtime/session.h"

namespace octet {
namespace {

struct Case {
  int64_t batch, q_len, kv_len, heads, head_k, head_v;
  bool causal = false, seq_first = false;
  std::vector<int64_t> mask_shape = {};  // empty: no mask
  bool masked_rows = false;              // some mask rows hide every key (finfo.min)
  std::string describe() const {
    std::ostringstream o;  // a stream: GCC 12 warns (-Wrestrict, falsely) on long string + chains
    o << "B" << batch << " Sq" << q_len << " Sk" << kv_len << " H" << heads << " Dk" << head_k << " Dv" << head_v
      << (causal ? " causal" : "") << (seq_first ? " seq_first" : "") << " mask[";
    for (int64_t d : mask_shape) o << d << ",";
    o << "]" << (masked_rows ? " masked rows" : "");
    return o.str();
  }
};

Tensor values(std::vector<int64_t> shape, int seed) {
  Tensor t(DType::Float32, std::move(shape));
  float* p = t.mutable_data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = std::sin(0.71f * static_cast<float>(i) + 1.7f * seed) * 2.0f;
  return t;
}

std::shared_ptr<Graph> attention_graph(const Case& c) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 17;
  g->opset_imports["octet"] = 1;
  auto lead = [&](int64_t len) { return c.seq_first ? DimVector{len, c.batch} : DimVector{c.batch, len}; };
  auto add = [&](const std::string& name, DimVector dims, int64_t channels) {
    dims.push_back(channels);
    g->add_input(name, TensorType(DType::Float32, dims));
  };
  add("q", lead(c.q_len), c.heads * c.head_k);
  add("k", lead(c.kv_len), c.heads * c.head_k);
  add("v", lead(c.kv_len), c.heads * c.head_v);
  std::vector<std::string> ins = {"q", "k", "v"};
  if (!c.mask_shape.empty()) {
    g->add_input("mask", TensorType(DType::Float32, DimVector(c.mask_shape.begin(), c.mask_shape.end())));
    ins.push_back("mask");
  }
  g->add_node("Attention", ins, {"y"},
              {Attribute::make_int("num_heads", c.heads), Attribute::make_float("scale", 0.37f),
               Attribute::make_int("causal", c.causal), Attribute::make_int("seq_first", c.seq_first)},
              "octet", "attention");
  g->mark_output(g->value("y"));
  return g;
}

NamedTensors inputs(const Case& c) {
  auto shape = [&](int64_t len, int64_t ch) {
    return c.seq_first ? std::vector<int64_t>{len, c.batch, ch} : std::vector<int64_t>{c.batch, len, ch};
  };
  NamedTensors in = {{"q", values(shape(c.q_len, c.heads * c.head_k), 1)},
                     {"k", values(shape(c.kv_len, c.heads * c.head_k), 2)},
                     {"v", values(shape(c.kv_len, c.heads * c.head_v), 3)}};
  if (!c.mask_shape.empty()) {
    Tensor m = values(c.mask_shape, 4);
    float* p = m.mutable_data<float>();
    const int64_t row = c.mask_shape.back();
    for (int64_t i = 0; i < m.numel(); ++i) {
      // Padding-style entries (finfo.min) on some keys, or on every key of some rows.
      const bool hide = c.masked_rows ? (i / row) % 3 == 1 : (i % row) % 5 == 4;
      if (hide) p[i] = std::numeric_limits<float>::lowest();
    }
    in.emplace_back("mask", std::move(m));
  }
  return in;
}

void check(const Case& c) {
  auto g = attention_graph(c);
  const NamedTensors in = inputs(c);
  SessionOptions ref_opts;
  ref_opts.kernels = KernelChoice::Reference;
  const Tensor want = Session(g, ref_opts).run(in)[0].second;
  for (IsaLevel level : available_isas()) {
    ScopedIsaLevel isa(level);
    for (int threads : {1, 3}) {
      SessionOptions opts;
      opts.threads = threads;
      Session s(g, opts);
      ASSERT_EQ(s.optimized_nodes(), 1);
      const Tensor got = s.run(in)[0].second;
      ASSERT_EQ(got.shape(), want.shape()) << c.describe();
      const float *a = got.data<float>(), *b = want.data<float>();
      double worst = 0;
      for (int64_t i = 0; i < got.numel(); ++i) worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
      EXPECT_LE(worst, 2e-5) << c.describe() << " isa " << isa_name(level) << " threads " << threads;
    }
  }
}

TEST(CpuAttention, SingleQueryAndSingleKey) {
  check({1, 1, 1, 1, 8, 8});
  check({2, 1, 9, 4, 16, 16});
  check({2, 9, 1, 4, 16, 16});
  check({1, 1, 130, 2, 64, 64, true});
}

TEST(CpuAttention, HeadSizes) {
  // 32, 48, 96: AVX-512 tiles of 32 columns, with and without a 16-column tail.
  for (int64_t d : {1, 8, 16, 32, 48, 64, 80, 96}) check({2, 13, 13, 3, d, d});
  check({1, 7, 11, 2, 16, 80});  // Dk != Dv
  check({1, 7, 11, 2, 80, 1});
}

TEST(CpuAttention, OddLengthsAcrossTilesAndTaskBlocks) {
  for (int64_t s : {1, 2, 3, 5, 15, 16, 17, 31, 32, 33, 47, 48, 49, 63, 64, 65, 127, 128, 130}) check({1, s, s, 4, 16, 16});
  for (int64_t s : {31, 48, 49, 257}) check({1, s, s, 2, 64, 48});
  check({2, 65, 130, 2, 16, 16});
}

// A task block's leftover rows run through a tile of 1, 2, 4 or 8 rows (the next power of
// two): every leftover count, at the tiles' edges in Dk and Sk, with masks and causal.
TEST(CpuAttention, LeftoverRowsTakeSmallerTiles) {
  for (int64_t s : {65, 66, 67, 68, 69, 70, 71, 129}) check({2, s, 17, 2, 16, 16});
  for (int64_t d : {16, 17, 32, 64, 100}) check({2, 257, 257, 2, d, d});
  for (int64_t sk : {1, 15, 16, 17, 129}) check({2, 129, sk, 2, 17, 32});
  for (int64_t sq : {1, 15, 16, 17}) check({2, sq, 129, 2, 64, 64});
  check({2, 257, 257, 2, 64, 64, true});
  check({2, 129, 257, 2, 64, 64, true});
  check({2, 257, 257, 2, 64, 64, false, false, {2, 1, 1, 257}});
  check({2, 69, 71, 3, 32, 32, false, false, {2, 3, 69, 71}});
  check({2, 69, 71, 3, 32, 32, true, false, {2, 1, 69, 71}});
}

TEST(CpuAttention, CausalWithDifferentLengths) {
  check({2, 17, 17, 4, 16, 16, true});
  check({2, 3, 70, 2, 16, 16, true});   // decoding with a past: rows see Sk - Sq + i + 1 keys
  check({2, 70, 3, 2, 16, 16, true});   // more queries than keys: the first rows see none
  check({1, 130, 130, 1, 64, 64, true});
}

TEST(CpuAttention, MaskShapes) {
  const int64_t b = 2, h = 3, sq = 19, sk = 23;
  for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{
           {b, 1, 1, sk}, {b, 1, sq, sk}, {1, h, sq, sk}, {b, h, sq, sk}, {sk}, {sq, sk}, {1, 1, sk}}) {
    check({b, sq, sk, h, 8, 8, false, false, shape});
    check({b, sq, sk, h, 8, 8, true, false, shape});
  }
}

TEST(CpuAttention, FullyMaskedRowsAverageV) {
  check({2, 9, 9, 2, 16, 16, false, false, {2, 1, 9, 9}, true});
  check({2, 9, 9, 2, 16, 16, false, false, {2, 2, 9, 9}, true});
}

TEST(CpuAttention, SeqFirstLayout) {
  check({3, 11, 11, 4, 16, 16, false, true});
  check({2, 5, 9, 2, 8, 16, true, true, {5, 9}});
}

// channel_ranges: Q, K and V read from one packed tensor (with unused channels around and
// between them) give what the same attention gives on the three ranges copied out first.
TEST(CpuAttention, ChannelRangesReadOnePackedTensorInPlace) {
  const int64_t heads = 3, dk = 8, dv = 16, channels = 106;
  const std::vector<int64_t> ranges = {5, 5 + heads * dk, 5 + heads * dk, 5 + 2 * heads * dk, 56, 56 + heads * dv};
  for (bool seq_first : {false, true})
    for (int64_t len : {1, 13, 70}) {
      const int64_t batch = 2;
      const std::vector<int64_t> lead = seq_first ? std::vector<int64_t>{len, batch} : std::vector<int64_t>{batch, len};
      auto with_channels = [&](int64_t c) {
        std::vector<int64_t> d = lead;
        d.push_back(c);
        return d;
      };
      auto attention = [&](const std::vector<std::string>& ins, bool packed) {
        auto g = std::make_shared<Graph>();
        g->opset_imports[""] = 17;
        g->opset_imports["octet"] = 1;
        for (size_t i = 0; i < (packed ? 1 : 3); ++i) {
          const int64_t c = packed ? channels : ranges[2 * i + 1] - ranges[2 * i];
          const std::vector<int64_t> d = with_channels(c);
          g->add_input(ins[i], TensorType(DType::Float32, DimVector(d.begin(), d.end())));
        }
        std::vector<Attribute> attrs = {Attribute::make_int("num_heads", heads), Attribute::make_float("scale", 0.37f),
                                        Attribute::make_int("seq_first", seq_first)};
        if (packed) attrs.push_back(Attribute::make_ints("channel_ranges", ranges));
        g->add_node("Attention", packed ? std::vector<std::string>{ins[0], ins[0], ins[0]} : ins, {"y"}, attrs, "octet",
                    "attention");
        g->mark_output(g->value("y"));
        return g;
      };
      const Tensor qkv = values(with_channels(channels), 5);
      // The three ranges copied out, row by row.
      NamedTensors split;
      for (int i = 0; i < 3; ++i) {
        const int64_t b = ranges[2 * i], e = ranges[2 * i + 1], rows = batch * len;
        Tensor t(DType::Float32, with_channels(e - b));
        for (int64_t r = 0; r < rows; ++r)
          std::copy(qkv.data<float>() + r * channels + b, qkv.data<float>() + r * channels + e,
                    t.mutable_data<float>() + r * (e - b));
        split.emplace_back(std::string(1, "qkv"[i]), std::move(t));
      }
      SessionOptions ref_opts;
      ref_opts.kernels = KernelChoice::Reference;
      const Tensor want = Session(attention({"q", "k", "v"}, false), ref_opts).run(split)[0].second;
      auto packed = attention({"qkv"}, true);
      const NamedTensors in = {{"qkv", qkv}};
      auto max_diff = [&](const Tensor& got) {
        EXPECT_EQ(got.shape(), want.shape());
        double worst = 0;
        for (int64_t i = 0; i < got.numel(); ++i)
          worst = std::max(worst, std::fabs(double(got.data<float>()[i]) - want.data<float>()[i]));
        return worst;
      };
      EXPECT_LE(max_diff(Session(packed, ref_opts).run(in)[0].second), 1e-6) << "reference, len " << len;
      for (IsaLevel level : available_isas()) {
        ScopedIsaLevel isa(level);
        Session s(packed, SessionOptions{});
        ASSERT_EQ(s.optimized_nodes(), 1);
        EXPECT_LE(max_diff(s.run(in)[0].second), 2e-5) << isa_name(level) << " len " << len << " seq_first " << seq_first;
      }
    }
}

TEST(CpuAttention, ChannelRangesOutsideTheInputAreRejected) {
  for (std::vector<int64_t> bad : std::vector<std::vector<int64_t>>{
           {0, 8, 8, 16, 16, 40}, {0, 8, 8, 16, 16, 16}, {-1, 7, 8, 16, 16, 24}, {0, 8, 8, 12, 16, 24}}) {
    auto g = std::make_shared<Graph>();
    g->opset_imports["octet"] = 1;
    g->add_input("qkv", TensorType(DType::Float32, DimVector{1, 4, 32}));
    g->add_node("Attention", {"qkv", "qkv", "qkv"}, {"y"},
                {Attribute::make_int("num_heads", 2), Attribute::make_ints("channel_ranges", bad)}, "octet", "attn");
    g->mark_output(g->value("y"));
    try {
      Session s(g);
      s.run({{"qkv", values({1, 4, 32}, 1)}});
      ADD_FAILURE() << "accepted channel_ranges " << bad[0] << ".." << bad[5];
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("attn"), std::string::npos) << e.what();
    }
  }
}

TEST(CpuAttention, NonFloat32FallsBackToReference) {
  auto g = std::make_shared<Graph>();
  g->opset_imports["octet"] = 1;
  for (const char* n : {"q", "k", "v"}) g->add_input(n, TensorType(DType::Float16, DimVector{1, 2, 4}));
  g->add_node("Attention", {"q", "k", "v"}, {"y"}, {Attribute::make_int("num_heads", 2)}, "octet");
  g->mark_output(g->value("y"));
  EXPECT_EQ(Session(g).optimized_nodes(), 0);
}

}  // namespace
}  // namespace octet
