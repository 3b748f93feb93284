// octet.GroupedAttention / octet.CachedAttention: the reference kernel against a literal
// recomputation (K/V repeated per head, the fill, the mask, softmax), the cached form
// against the plain one on the concatenated cache, and the optimized kernel
// (kernels/cpu/grouped_attention.cpp) against the reference on every ISA level the machine
// has: one query token (the decode step) and chunks, past 0 and 1, odd lengths and head
// sizes, GQA and MHA, capacity above the length, every mask/keep broadcast, several
// threads. Bad inputs: heads not a multiple of the key/value heads, a cache too small.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "cpu_test_util.h"

namespace octet {
namespace {

using testing::CpuCall;
using testing::random_f32;

struct Case {
  int64_t batch, heads, groups, q_len, past, head_k, head_v;
  std::vector<int64_t> mask_shape = {}, keep_shape = {};  // empty: absent
  int threads = 1;
  int64_t capacity_extra = 3;  // cached form: capacity - (past + q_len)
};

std::string describe(const Case& c) {
  std::ostringstream o;  // a stream: GCC 12 warns (-Wrestrict, falsely) on long string + chains
  o << "B" << c.batch << " H" << c.heads << " G" << c.groups << " S" << c.q_len << " past" << c.past << " Dk"
    << c.head_k << " Dv" << c.head_v << " mask" << c.mask_shape.size() << " keep" << c.keep_shape.size()
    << " threads" << c.threads;
  return o.str();
}

Tensor keep_pattern(const std::vector<int64_t>& shape) {
  Tensor t(DType::Bool, shape);
  const int64_t row = shape.back();
  for (int64_t i = 0; i < t.numel(); ++i) t.mutable_raw()[i] = (i % row) % 4 != 1 || i % row == 0;
  return t;
}

Tensor mask_pattern(const std::vector<int64_t>& shape) {
  Tensor t = random_f32(shape, 9, -1, 1);
  const int64_t row = shape.back();
  for (int64_t i = 0; i < t.numel(); ++i)
    if ((i % row) % 5 == 3) t.mutable_data<float>()[i] = std::numeric_limits<float>::lowest();
  return t;
}

struct Inputs {
  Tensor q, k, v;  // k, v: all past + q_len rows
  std::optional<Tensor> mask, keep;
};

Inputs make_inputs(const Case& c) {
  const int64_t t = c.past + c.q_len;
  Inputs in{random_f32({c.batch, c.heads, c.q_len, c.head_k}, 1), random_f32({c.batch, c.groups, t, c.head_k}, 2),
            random_f32({c.batch, c.groups, t, c.head_v}, 3), std::nullopt, std::nullopt};
  if (!c.mask_shape.empty()) in.mask = mask_pattern(c.mask_shape);
  if (!c.keep_shape.empty()) in.keep = keep_pattern(c.keep_shape);
  return in;
}

std::vector<Attribute> attrs(const Case& c) {
  std::vector<Attribute> a = {Attribute::make_float("scale", 1.0f / std::sqrt(float(c.head_k)))};
  if (!c.keep_shape.empty()) a.push_back(Attribute::make_float("fill", std::numeric_limits<float>::lowest()));
  return a;
}

CpuCall grouped_call(const Case& c, const Inputs& in) {
  CpuCall call{"GroupedAttention", {in.q, in.k, in.v, in.mask, in.keep}, attrs(c), "octet"};
  if (!in.keep) call.inputs.pop_back();
  if (!in.keep && !in.mask) call.inputs.pop_back();
  call.threads = c.threads;
  return call;
}

// Copies rows [from, to) of [B, G, T, D] into a [B, G, to - from, D] tensor (at `cap` rows).
Tensor rows(const Tensor& x, int64_t from, int64_t to, int64_t cap) {
  const auto& s = x.shape();
  Tensor out(DType::Float32, {s[0], s[1], cap, s[3]});
  for (int64_t bg = 0; bg < s[0] * s[1]; ++bg)
    for (int64_t j = from; j < to; ++j)
      std::copy_n(x.data<float>() + (bg * s[2] + j) * s[3], s[3], out.mutable_data<float>() + (bg * cap + j - from) * s[3]);
  return out;
}

CpuCall cached_call(const Case& c, const Inputs& in, Tensor& kc, Tensor& vc) {
  const int64_t t = c.past + c.q_len, cap = t + c.capacity_extra;
  kc = rows(in.k, 0, c.past, cap);
  vc = rows(in.v, 0, c.past, cap);
  CpuCall call{"CachedAttention",
               {in.q, rows(in.k, c.past, t, c.q_len), rows(in.v, c.past, t, c.q_len), kc, vc,
                Tensor::from_vector<int64_t>({1}, {c.past}), in.mask, in.keep},
               attrs(c), "octet"};
  if (!in.keep) call.inputs.pop_back();
  if (!in.keep && !in.mask) call.inputs.pop_back();
  call.threads = c.threads;
  return call;
}

// One query row of the definition: the scores s_j = (q . k_j) * scale in double, rounded
// to float as the kernels keep them; K is shared by the heads of a group.
std::vector<double> literal_scores(const Case& c, const Tensor& q, const Tensor& k, int64_t b, int64_t h, int64_t i,
                                   double scale) {
  const int64_t t = c.past + c.q_len, g = h / (c.heads / c.groups);
  std::vector<double> s(t);
  for (int64_t j = 0; j < t; ++j) {
    double dot = 0;
    for (int64_t d = 0; d < c.head_k; ++d)
      dot += double(q.data<float>()[((b * c.heads + h) * c.q_len + i) * c.head_k + d]) *
             k.data<float>()[((b * c.groups + g) * t + j) * c.head_k + d];
    s[j] = float(dot * scale);
  }
  return s;
}

// y[b, i, h, :] = sum_j w_j v_j / divisor.
void literal_weighted_values(const Case& c, const Tensor& v, const std::vector<double>& w, double divisor, int64_t b,
                             int64_t h, int64_t i, Tensor& y) {
  const int64_t t = c.past + c.q_len, g = h / (c.heads / c.groups);
  for (int64_t d = 0; d < c.head_v; ++d) {
    double acc = 0;
    for (int64_t j = 0; j < t; ++j) acc += w[j] * v.data<float>()[((b * c.groups + g) * t + j) * c.head_v + d];
    y.mutable_data<float>()[(b * c.q_len + i) * c.heads * c.head_v + h * c.head_v + d] = float(acc / divisor);
  }
}

// exp(s - max) in place; returns the row sum.
double literal_exp(std::vector<double>& s) {
  const double mx = *std::max_element(s.begin(), s.end());
  double sum = 0;
  for (double& x : s) sum += x = std::exp(x - mx);
  return sum;
}

// The definition, literally: K/V repeated to H heads, scores in double, fill, mask, softmax.
Tensor literal(const Case& c, const Inputs& in) {
  Tensor y(DType::Float32, {c.batch, c.q_len, c.heads * c.head_v});
  auto at = [](const Tensor& m, int64_t b, int64_t h, int64_t i, int64_t j) -> int64_t {
    const auto& s = m.shape();
    int64_t idx[4] = {b, h, i, j}, off = 0;
    for (size_t a = 0; a < s.size(); ++a) off = off * s[a] + (s[a] == 1 ? 0 : idx[4 - s.size() + a]);
    return off;
  };
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.q_len; ++i) {
        std::vector<double> s = literal_scores(c, in.q, in.k, b, h, i, 1.0 / std::sqrt(double(c.head_k)));
        for (int64_t j = 0; j < int64_t(s.size()); ++j) {
          if (in.keep && !in.keep->raw()[at(*in.keep, b, h, i, j)]) s[j] = std::numeric_limits<float>::lowest();
          if (in.mask) s[j] = float(s[j] + in.mask->data<float>()[at(*in.mask, b, h, i, j)]);
        }
        const double sum = literal_exp(s);
        literal_weighted_values(c, in.v, s, sum, b, h, i, y);
      }
  return y;
}

std::vector<Case> cases() {
  return {
      {1, 9, 3, 1, 128, 64, 64, {1, 1, 1, 129}},          // SmolLM2's decode step
      {1, 9, 3, 1, 0, 64, 64, {1, 1, 1, 1}},              // past 0, one token
      {1, 4, 2, 1, 1, 16, 16},                            // past 1, no mask
      {2, 4, 2, 5, 7, 16, 16, {2, 1, 5, 12}},             // a prefill chunk after a past
      {2, 6, 3, 7, 0, 8, 5, {2, 1, 7, 7}, {}, 2},         // prompt, odd Dv, 2 threads
      {1, 4, 4, 3, 6, 13, 13, {1, 1, 1, 9}, {1, 1, 3, 9}},  // GPT-2: MHA, keep + padding mask
      {3, 2, 1, 1, 31, 7, 9, {}, {3, 1, 1, 32}},          // keep only, batch 3, odd sizes
      {1, 8, 2, 33, 100, 64, 64, {1, 1, 33, 133}, {}, 2},  // long chunk, threads
      // The AVX-512 group rows (head size 64 / 128, 1-4 heads per group), per-head masks:
      {2, 4, 2, 3, 5, 128, 128, {2, 4, 3, 8}, {2, 1, 3, 8}},  // D 128, 2 per group, mask + keep
      {1, 2, 2, 1, 40, 64, 64, {1, 2, 1, 41}},                  // MHA: 1 per group
      {1, 6, 3, 1, 20, 64, 64, {}, {1, 6, 1, 21}},              // 2 per group, keep per head
      {1, 3, 1, 2, 9, 128, 128, {1, 1, 2, 11}},                 // D 128, 3 per group: the generic rows
      // The group rows' 16-key score blocks: exactly one and two blocks, a block and one
      // key, a mask per head, a mask broadcast along the keys (the scalar mask path), batch 2.
      {1, 9, 3, 1, 15, 64, 64, {1, 1, 1, 16}},
      {1, 6, 2, 1, 31, 64, 64, {1, 6, 1, 32}},
      {2, 8, 4, 1, 16, 128, 128, {2, 1, 1, 17}, {}, 2},
      {1, 3, 3, 1, 46, 64, 64, {1, 1, 1, 1}},
  };
}

TEST(GroupedAttention, ReferenceIsTheDefinition) {
  for (const Case& c : cases()) {
    const Inputs in = make_inputs(c);
    const Tensor want = literal(c, in);
    const Tensor got = testing::run_call(grouped_call(c, in), KernelChoice::Reference).at(0);
    testing::expect_close(got, want, {1e-5, 1e-6}, describe(c));
  }
}

// The optimized kernel sums p * v over up to 133 keys in float (values in [-1, 1]); outputs
// near 0 come from cancellation, so the absolute error scales with the terms, not the result:
// n * eps * max|v| = 133 * 6e-8 ~ 8e-6. 2e-6 held at -O2 but not in the -O1 ASan build
// (2.5e-6 on one element of the 133-key case), so the bound is that sum's: 1e-5.
constexpr testing::Tolerance kFloatSum{2e-5, 1e-5};

TEST(GroupedAttention, OptimizedMatchesReferenceOnEveryIsa) {
  for (const Case& c : cases()) testing::expect_matches_reference(grouped_call(c, make_inputs(c)), kFloatSum, describe(c));
}

TEST(CachedAttention, EqualsGroupedAttentionOnTheConcatenatedCacheAndWritesTheNewRows) {
  for (const Case& c : cases()) {
    const Inputs in = make_inputs(c);
    const Tensor want = testing::run_call(grouped_call(c, in), KernelChoice::Reference).at(0);
    for (KernelChoice choice : {KernelChoice::Reference, KernelChoice::Optimized}) {
      Tensor kc, vc;
      const CpuCall call = cached_call(c, in, kc, vc);
      const Tensor got = testing::run_call(call, choice).at(0);
      testing::expect_close(got, want, kFloatSum, describe(c));
      // The caches now hold every row, past and new; the rows beyond stay as they were (0).
      const int64_t t = c.past + c.q_len;
      testing::expect_close(rows(kc, 0, t, t), in.k, testing::kExact, describe(c) + " K cache");
      testing::expect_close(rows(vc, 0, t, t), in.v, testing::kExact, describe(c) + " V cache");
      for (int64_t i = 0; i < kc.numel(); ++i) {
        if ((i / c.head_k) % kc.shape()[2] >= t) {
          ASSERT_EQ(kc.data<float>()[i], 0.0f) << describe(c);
        }
      }
    }
  }
  // The optimized kernel on every ISA path.
  for (const Case& c : cases()) {
    Tensor kc, vc;
    testing::expect_matches_reference(cached_call(c, make_inputs(c), kc, vc), kFloatSum, describe(c) + " cached");
  }
}

// Static int8 attention: the eight fake quantization inputs (Q uint8 with a zero point,
// K int8, V uint8, P uint8 at 1/255) and both probability forms.
struct Quant {
  bool rows;
  bool wide = false;  // the probabilities with 4095 levels in int16 (octet quantize's octet target)
  float p_step() const { return wide ? 1.0f / 4095 : 1.0f / 255; }
  std::vector<std::optional<Tensor>> inputs() const {
    if (wide)
      return {Tensor::scalar<float>(0.1f), Tensor::scalar<uint8_t>(uint8_t{128}), Tensor::scalar<float>(0.1f),
              Tensor::scalar<int8_t>(int8_t{0}), Tensor::scalar<float>(0.1f), Tensor::scalar<uint8_t>(uint8_t{120}),
              Tensor::scalar<float>(p_step()), Tensor::scalar<int16_t>(int16_t{0})};
    // coarse Q, K and V steps (0.1 on values in [-1, 1]) so the rounding shows in the output
    return {Tensor::scalar<float>(0.1f),       Tensor::scalar<uint8_t>(uint8_t{128}), Tensor::scalar<float>(0.1f),
            Tensor::scalar<int8_t>(int8_t{0}), Tensor::scalar<float>(0.1f),           Tensor::scalar<uint8_t>(uint8_t{120}),
            Tensor::scalar<float>(1.0f / 255), Tensor::scalar<uint8_t>(uint8_t{0})};
  }
};

float fq(float x, float scale, int zero, int lo, int hi) {
  const float q = std::nearbyint(x / scale);
  return (std::min(std::max(q + float(zero), float(lo)), float(hi)) - float(zero)) * scale;
}

CpuCall quantized(CpuCall call, const Quant& qz, size_t mask_at) {
  while (call.inputs.size() < mask_at + 2) call.inputs.push_back(std::nullopt);
  for (auto& t : qz.inputs()) call.inputs.push_back(t);
  call.attrs.push_back(Attribute::make_int("row_probabilities", qz.rows ? 1 : 0));
  return call;
}

// The definition with Q/DQ: Q, K, V rounded, scores, softmax, the probabilities rounded
// (per-row form: exp(s - max) rounded and the row sum dividing after the product).
Tensor literal_quantized(const Case& c, const Inputs& in, const Quant& qz) {
  Inputs r = in;  // shares the buffers: each rounded tensor is a copy
  auto round_all = [](Tensor& t, float scale, int zero, int lo, int hi) {
    t = Tensor::from_vector<float>(t.shape(), t.to_float_vector());
    for (int64_t i = 0; i < t.numel(); ++i) t.mutable_data<float>()[i] = fq(t.data<float>()[i], scale, zero, lo, hi);
  };
  round_all(r.q, 0.1f, 128, 0, 255);
  round_all(r.k, 0.1f, 0, -128, 127);
  round_all(r.v, 0.1f, 120, 0, 255);
  Tensor y(DType::Float32, {c.batch, c.q_len, c.heads * c.head_v});
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < c.q_len; ++i) {
        std::vector<double> s = literal_scores(c, r.q, r.k, b, h, i, double(1.0f / std::sqrt(float(c.head_k))));
        const double sum = literal_exp(s);
        for (double& x : s)
          x = qz.wide ? fq(float(qz.rows ? x : x / sum), qz.p_step(), 0, -32768, 32767)
                      : fq(float(qz.rows ? x : x / sum), qz.p_step(), 0, 0, 255);
        literal_weighted_values(c, r.v, s, qz.rows ? sum : 1.0, b, h, i, y);
      }
  return y;
}

// The optimized kernel against the reference. A probability on a rounding boundary may
// round one step (1/255) apart between the float kernel (its exp approximation) and the
// double reference, moving an output by up to 1/255 * max|fq(V)| (3) per such key: so
// nearly every output agrees to float rounding and a few (at most 1%, or one head's head_v
// outputs: a flipped probability moves its whole row of V) by a step or two. (Dv 128 on 16
// rows: one flip is 6% of the outputs; the ASan build's exp flips one the release build
// does not.)
void expect_optimized_matches(const CpuCall& call, int64_t head_v, const std::string& what) {
  const Tensor want = testing::run_call(call, KernelChoice::Reference).at(0);
  const Tensor got = testing::run_call(call, KernelChoice::Optimized).at(0);
  ASSERT_EQ(got.shape(), want.shape()) << what;
  int64_t off = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const float d = std::fabs(got.data<float>()[i] - want.data<float>()[i]);
    off += d > 1e-4f + 1e-4f * std::fabs(want.data<float>()[i]);
    ASSERT_LE(d, 2 * 3.0f / 255 + 1e-4f) << what << " element " << i;
  }
  EXPECT_LE(off, std::max(want.numel() / 100, head_v)) << what << ": " << off << " of " << want.numel()
                                                       << " outputs differ";
}

TEST(GroupedAttention, FakeQuantizedReferenceIsTheDefinitionAndOptimizedMatches) {
  for (bool rows : {true, false})
    for (bool wide : {false, true})
    for (Case c : cases()) {
      c.mask_shape.clear();  // the definition above has no mask; masks are covered below
      c.keep_shape.clear();
      const Quant qz{rows, wide};
      const Inputs in = make_inputs(c);
      const CpuCall call = quantized(grouped_call(c, in), qz, 3);
      const std::string what = describe(c) + (rows ? " rows" : " softmax") + (wide ? " wide" : "");
      const Tensor ref = testing::run_call(call, KernelChoice::Reference).at(0);
      testing::expect_close(ref, literal_quantized(c, in, qz), {1e-5, 1e-6}, what);
      // the rounding matters: a kernel that skipped it would be far outside kRoundingStep
      const Tensor plain = literal(c, in);
      float most = 0;
      for (int64_t i = 0; i < ref.numel(); ++i)
        most = std::max(most, std::fabs(ref.data<float>()[i] - plain.data<float>()[i]));
      EXPECT_GT(most, 0.03f) << what;
      expect_optimized_matches(call, c.head_v, what);
    }
  // with masks / keep, and the cached form against the plain one
  for (bool rows : {true, false})
    for (const Case& c : cases()) {
      const Quant qz{rows};
      const Inputs in = make_inputs(c);
      const std::string what = describe(c) + (rows ? " rows" : " softmax");
      expect_optimized_matches(quantized(grouped_call(c, in), qz, 3), c.head_v, what);
      const Tensor want = testing::run_call(quantized(grouped_call(c, in), qz, 3), KernelChoice::Reference).at(0);
      Tensor kc, vc;
      const Tensor got =
          testing::run_call(quantized(cached_call(c, in, kc, vc), qz, 6), KernelChoice::Reference).at(0);
      testing::expect_close(got, want, testing::kExact, what + " cached");
    }
}

TEST(GroupedAttention, RejectsHeadsNotAMultipleOfKeyValueHeads) {
  Case c{1, 5, 2, 1, 3, 8, 8};
  Case ok{1, 4, 2, 1, 3, 8, 8};
  Inputs in = make_inputs(ok);
  in.q = random_f32({1, 5, 1, 8}, 1);
  try {
    testing::run_call(grouped_call(c, in), KernelChoice::Reference);
    FAIL() << "accepted 5 heads over 2 key/value heads";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a multiple"), std::string::npos) << e.what();
  }
}

TEST(CachedAttention, RejectsACacheTooSmall) {
  Case c{1, 4, 2, 2, 3, 8, 8};
  c.capacity_extra = -1;
  const Inputs in = make_inputs(c);
  Tensor kc, vc;
  try {
    testing::run_call(cached_call(c, in, kc, vc), KernelChoice::Optimized);
    FAIL() << "wrote past the cache capacity";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("capacity"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace octet
