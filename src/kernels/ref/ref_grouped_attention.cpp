// Reference kernel for octet.GroupedAttention and octet.CachedAttention (semantics in
// src/ops/octet_grouped_attention.cpp), and the checks every kernel of the two ops shares.
//
// Scalar and literal: for each (batch, head, query row) the scores in double, the keep
// fill, the mask, a max-subtracted softmax and the weighted sum of V, rounded once to
// float32. The oracle for kernels/cpu/grouped_attention.cpp.
#include "kernels/ref/ref_grouped_attention.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "core/sizes.h"
#include "kernels/ref/ref_families.h"

namespace octet {
namespace {

// Strides of `t` (rank <= 4) broadcast right-aligned against [B, H, S, T]; 0 on the
// axes it repeats along. Errors name the node.
void broadcast_strides(const KernelContext& ctx, const Tensor& t, const char* what, const int64_t (&full)[4],
                       int64_t (&str)[4]) {
  const auto& s = t.shape();
  if (s.size() > 4) ctx.fail(what, " ", t.describe(), " must have rank <= 4");
  int64_t stride = 1;
  for (int axis = 3; axis >= 0; --axis) {
    const int ti = static_cast<int>(s.size()) - (4 - axis);
    const int64_t dim = ti >= 0 ? s[ti] : 1;
    if (dim != 1 && dim != full[axis])
      ctx.fail(what, " ", t.describe(), " does not broadcast to [B, H, S, T] = [", full[0], ", ", full[1], ", ",
               full[2], ", ", full[3], "]");
    str[axis] = dim == 1 ? 0 : stride;
    stride *= dim;
  }
}

void require_f32_rank4(const KernelContext& ctx, const Tensor& t, const char* what) {
  if (t.dtype() != DType::Float32 || t.rank() != 4) ctx.fail(what, " ", t.describe(), " must be float32 of rank 4");
}

// The cached form: checks the caches and the new rows, then copies the new rows in.
void write_cache(const KernelContext& ctx, GroupedAttentionCall& c) {
  const Tensor &kn = ctx.input(1), &vn = ctx.input(2), &kc = ctx.input(3), &vc = ctx.input(4);
  const Tensor& past = ctx.input(5);
  require_f32_rank4(ctx, kn, "K_new");
  require_f32_rank4(ctx, vn, "V_new");
  if (past.dtype() != DType::Int64 || past.numel() != 1) ctx.fail("past_length ", past.describe(), " must be one int64");
  const int64_t p = past.data<int64_t>()[0];
  const int64_t cap = kc.shape()[2], s = kn.shape()[2];
  if (kn.shape()[0] != c.batch || kn.shape()[1] != c.groups || kn.shape()[3] != c.head_k || s != c.q_len ||
      vn.shape()[0] != c.batch || vn.shape()[1] != c.groups || vn.shape()[2] != s || vn.shape()[3] != c.head_v)
    ctx.fail("K_new ", kn.describe(), " and V_new ", vn.describe(), " do not match Q and the caches ", kc.describe(),
             ", ", vc.describe());
  if (vc.shape()[2] != cap) ctx.fail("K_cache ", kc.describe(), " and V_cache ", vc.describe(), " differ in capacity");
  if (p < 0 || p > cap - s)
    ctx.fail("past_length ", p, " + ", s, " new tokens do not fit the cache capacity ", cap);
  if (!kc.buffer() || !kc.buffer()->writable() || !vc.buffer() || !vc.buffer()->writable())
    ctx.fail("the caches must be writable buffers the runner owns");
  // The op's documented side effect: the caches are the runner's, written in place.
  float* kd = const_cast<Tensor&>(kc).mutable_data<float>();
  float* vd = const_cast<Tensor&>(vc).mutable_data<float>();
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t g = 0; g < c.groups; ++g) {
      std::memcpy(kd + b * c.k_b + g * c.k_g + p * c.head_k, kn.data<float>() + ((b * c.groups + g) * s) * c.head_k,
                  sizeof(float) * s * c.head_k);
      std::memcpy(vd + b * c.v_b + g * c.v_g + p * c.head_v, vn.data<float>() + ((b * c.groups + g) * s) * c.head_v,
                  sizeof(float) * s * c.head_v);
    }
  c.kv_len = p + s;
}

}  // namespace

GroupedAttentionCall grouped_attention_call(const KernelContext& ctx) {
  const Node& node = ctx.node();
  const bool cached = node.op_type() == "CachedAttention";
  const size_t ki = cached ? 3 : 1, vi = cached ? 4 : 2, mi = cached ? 6 : 3;
  const Tensor &q = ctx.input(0), &k = ctx.input(ki), &v = ctx.input(vi);
  require_f32_rank4(ctx, q, "Q");
  require_f32_rank4(ctx, k, cached ? "K_cache" : "K");
  require_f32_rank4(ctx, v, cached ? "V_cache" : "V");
  GroupedAttentionCall c;
  c.batch = q.shape()[0];
  c.heads = q.shape()[1];
  c.q_len = q.shape()[2];
  c.head_k = q.shape()[3];
  c.groups = k.shape()[1];
  c.kv_len = k.shape()[2];
  c.head_v = v.shape()[3];
  if (k.shape()[0] != c.batch || v.shape()[0] != c.batch || v.shape()[1] != c.groups || k.shape()[3] != c.head_k ||
      v.shape()[2] != c.kv_len)
    ctx.fail("Q ", q.describe(), ", K ", k.describe(), " and V ", v.describe(), " do not fit together");
  if (c.groups < 1 || c.heads % c.groups != 0)
    ctx.fail("Q's ", c.heads, " heads are not a multiple of the ", c.groups, " key/value heads of ", k.describe());
  const Attribute* scale = node.find_attr("scale");
  if (!scale) ctx.fail("the scale attribute is required");
  c.scale = node.attr_float("scale", 1.0f);
  c.k_g = c.kv_len * c.head_k;
  c.k_b = c.groups * c.k_g;
  c.v_g = c.kv_len * c.head_v;
  c.v_b = c.groups * c.v_g;
  if (cached) write_cache(ctx, c);
  c.q = q.data<float>();
  c.k = k.data<float>();
  c.v = v.data<float>();
  const int64_t full[4] = {c.batch, c.heads, c.q_len, c.kv_len};
  if (const Tensor* m = ctx.optional_input(mi)) {
    if (m->dtype() != DType::Float32) ctx.fail("mask ", m->describe(), " must be float32");
    broadcast_strides(ctx, *m, "mask", full, c.m_str);
    c.mask = m->data<float>();
  }
  if (const Tensor* keep = ctx.optional_input(mi + 1)) {
    if (keep->dtype() != DType::Bool) ctx.fail("keep ", keep->describe(), " must be bool");
    if (!node.has_attr("fill")) ctx.fail("a keep input needs the fill attribute");
    broadcast_strides(ctx, *keep, "keep", full, c.k_str);
    c.keep = keep->raw();  // bool: one byte each, 0 or 1
    c.fill = node.attr_float("fill", 0.0f);
  }
  if (const Tensor* qs = ctx.optional_input(mi + 2)) {
    (void)qs;
    c.quantized = true;
    c.row_probabilities = node.attr_int("row_probabilities", 0) != 0;
    FakeQuantParams* fq[4] = {&c.fq_q, &c.fq_k, &c.fq_v, &c.fq_p};
    const char* names[4] = {"q", "k", "v", "p"};
    for (int i = 0; i < 4; ++i) {
      const Tensor* scale = ctx.optional_input(mi + 2 + 2 * i);
      const Tensor* zero = ctx.optional_input(mi + 3 + 2 * i);
      if (!scale || scale->dtype() != DType::Float32 || scale->numel() != 1)
        ctx.fail(names[i], "_scale ", scale ? scale->describe() : "(absent)", " must be one float32");
      fq[i]->scale = scale->data<float>()[0];
      if (!(fq[i]->scale > 0) || !std::isfinite(fq[i]->scale))
        ctx.fail(names[i], "_scale ", fq[i]->scale, " must be positive and finite");
      if (zero) {
        const bool p_int16 = i == 3 && zero->dtype() == DType::Int16;  // probabilities with 16-bit levels
        if (zero->numel() != 1 || (zero->dtype() != DType::Int8 && zero->dtype() != DType::UInt8 && !p_int16))
          ctx.fail(names[i], "_zero_point ", zero->describe(), " must be one int8 or uint8 (int16 for p)");
        const bool s8 = zero->dtype() == DType::Int8;
        fq[i]->zero = p_int16 ? zero->data<int16_t>()[0] : s8 ? zero->data<int8_t>()[0] : zero->data<uint8_t>()[0];
        fq[i]->lo = p_int16 ? -32768 : s8 ? -128 : 0;
        fq[i]->hi = p_int16 ? 32767 : s8 ? 127 : 255;
      }
    }
  }
  c.out_shape = {c.batch, c.q_len, checked_numel({c.heads, c.head_v}, "GroupedAttention output channels")};
  return c;
}

namespace {

void grouped_attention_kernel(KernelContext& ctx) {
  const GroupedAttentionCall c = grouped_attention_call(ctx);
  float* y = ctx.allocate_output_uninitialized(0, DType::Float32, c.out_shape).mutable_data<float>();
  std::vector<double> s(static_cast<size_t>(c.kv_len));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t g = c.group_of(h);
      const float* kh = c.k + b * c.k_b + g * c.k_g;
      const float* vh = c.v + b * c.v_b + g * c.v_g;
      for (int64_t i = 0; i < c.q_len; ++i) {
        const float* qi = c.q + ((b * c.heads + h) * c.q_len + i) * c.head_k;
        // Fake quantization (static int8): Q, K and V as their Q/DQ pairs give them.
        auto fq = [&](const FakeQuantParams& f, float x) { return c.quantized ? f(x) : x; };
        double mx = -INFINITY;
        for (int64_t j = 0; j < c.kv_len; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.head_k; ++d) dot += double(fq(c.fq_q, qi[d])) * fq(c.fq_k, kh[j * c.head_k + d]);
          float sj = static_cast<float>(dot * c.scale);
          if (c.keep && !c.keep[b * c.k_str[0] + h * c.k_str[1] + i * c.k_str[2] + j * c.k_str[3]]) sj = c.fill;
          if (c.mask) sj += c.mask[b * c.m_str[0] + h * c.m_str[1] + i * c.m_str[2] + j * c.m_str[3]];
          s[j] = sj;
          if (s[j] > mx) mx = s[j];
        }
        double sum = 0;
        for (int64_t j = 0; j < c.kv_len; ++j) sum += s[j] = std::exp(s[j] - mx);
        // The weights of V: the probabilities, rounded as the graph's Q/DQ rounds them
        // (softmax form: p = e / sum, then rounded, no division after; row form: e rounded,
        // the sum divides after the product).
        double divide = sum;
        if (c.quantized) {
          for (int64_t j = 0; j < c.kv_len; ++j)
            s[j] = c.fq_p(static_cast<float>(c.row_probabilities ? s[j] : s[j] / sum));
          if (!c.row_probabilities) divide = 1;
        }
        float* yi = y + (b * c.q_len + i) * c.heads * c.head_v + h * c.head_v;
        for (int64_t d = 0; d < c.head_v; ++d) {
          double acc = 0;
          for (int64_t j = 0; j < c.kv_len; ++j) acc += s[j] * fq(c.fq_v, vh[j * c.head_v + d]);
          yi[d] = static_cast<float>(acc / divide);
        }
      }
    }
}

}  // namespace

void register_ref_grouped_attention(KernelRegistry& r) {
  r.add("octet", "GroupedAttention", grouped_attention_kernel);
  r.add("octet", "CachedAttention", grouped_attention_kernel);
}

}  // namespace octet
