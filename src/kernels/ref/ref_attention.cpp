// Reference kernel for octet.Attention (semantics in src/ops/octet_attention.cpp), and
// the shape checks every Attention kernel shares (ref_attention.h).
//
// Scalar and literal: for each (batch, head, query row) the scores, the mask, the causal
// fill, a max-subtracted softmax and the weighted sum of V, all in double (as the
// reference MatMul and Softmax kernels compute), rounded once to the output type. It is
// the oracle for the optimized kernel (kernels/cpu/attention.cpp).
#include "kernels/ref/ref_attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_dtype.h"

namespace octet {

double attention_lowest(DType t) {
  switch (t) {
    case DType::Float16: return -65504.0;
    case DType::BFloat16: return -3.3895313892515355e38;  // 0xFF7F
    case DType::Float64: return std::numeric_limits<double>::lowest();
    default: return std::numeric_limits<float>::lowest();
  }
}

AttentionShape attention_shape(const KernelContext& ctx) {
  const Node& node = ctx.node();
  AttentionShape a;
  a.heads = node.attr_int("num_heads", 0);
  if (a.heads < 1) ctx.fail("num_heads must be >= 1, got ", a.heads);
  const int64_t causal = node.attr_int("causal", 0), seq_first = node.attr_int("seq_first", 0);
  if ((causal != 0 && causal != 1) || (seq_first != 0 && seq_first != 1))
    ctx.fail("causal and seq_first must be 0 or 1, got ", causal, " and ", seq_first);
  a.causal = causal == 1;
  a.seq_first = seq_first == 1;

  const Tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  const char* names[] = {"Q", "K", "V"};
  const Tensor* qkv[] = {&q, &k, &v};
  for (int i = 0; i < 3; ++i) {
    if (qkv[i]->rank() != 3) ctx.fail(names[i], " ", qkv[i]->describe(), " must have rank 3");
    if (qkv[i]->dtype() != q.dtype()) ctx.fail(names[i], " is ", qkv[i]->describe(), " but Q is ", q.describe());
  }
  const int bi = a.seq_first ? 1 : 0, si = a.seq_first ? 0 : 1;
  a.batch = q.shape()[bi];
  a.q_len = q.shape()[si];
  a.kv_len = k.shape()[si];
  if (k.shape()[bi] != a.batch || v.shape()[bi] != a.batch)
    ctx.fail("batch sizes differ: Q ", q.describe(), ", K ", k.describe(), ", V ", v.describe());
  if (v.shape()[si] != a.kv_len) ctx.fail("K ", k.describe(), " and V ", v.describe(), " differ in length");
  // The channels each of Q, K, V uses: [begin, end) of its last axis.
  int64_t ranges[6] = {0, q.shape()[2], 0, k.shape()[2], 0, v.shape()[2]};
  if (const Attribute* r = node.find_attr("channel_ranges")) {
    if (r->kind != Attribute::Kind::Ints || r->ints.size() != 6)
      ctx.fail("channel_ranges must be 6 ints [q_begin, q_end, k_begin, k_end, v_begin, v_end]");
    for (int i = 0; i < 3; ++i) {
      const int64_t b = r->ints[2 * i], e = r->ints[2 * i + 1];
      if (b < 0 || e <= b || e > qkv[i]->shape()[2])
        ctx.fail("channel_ranges: [", b, ", ", e, ") is not a range of the channels of ", names[i], " ",
                 qkv[i]->describe());
      ranges[2 * i] = b;
      ranges[2 * i + 1] = e;
    }
  }
  const int64_t qc = ranges[1] - ranges[0], kc = ranges[3] - ranges[2], vc = ranges[5] - ranges[4];
  if (kc != qc) ctx.fail("Q ", q.describe(), " and K ", k.describe(), " differ in channels (", qc, " vs ", kc, ")");
  if (qc % a.heads != 0 || vc % a.heads != 0)
    ctx.fail("Q ", q.describe(), " or V ", v.describe(), " does not split into ", a.heads, " heads");
  a.head_k = qc / a.heads;
  a.head_v = vc / a.heads;
  a.q_off = ranges[0];
  a.k_off = ranges[2];
  a.v_off = ranges[4];
  a.scale = node.has_attr("scale") ? node.attr_float("scale", 1.0f)
                                   : 1.0 / std::sqrt(static_cast<double>(a.head_k > 0 ? a.head_k : 1));

  // Row strides: channels are contiguous, the two leading axes are (B, S) or (S, B).
  auto strides = [&](const Tensor& t, int64_t len, int64_t& sb, int64_t& ss) {
    const int64_t c = t.shape()[2];
    sb = a.seq_first ? c : len * c;
    ss = a.seq_first ? a.batch * c : c;
  };
  strides(q, a.q_len, a.q_b, a.q_s);
  strides(k, a.kv_len, a.k_b, a.k_s);
  strides(v, a.kv_len, a.v_b, a.v_s);
  const int64_t yc = a.heads * a.head_v;
  a.y_b = a.seq_first ? yc : a.q_len * yc;
  a.y_s = a.seq_first ? a.batch * yc : yc;
  a.out_shape = a.seq_first ? std::vector<int64_t>{a.q_len, a.batch, yc} : std::vector<int64_t>{a.batch, a.q_len, yc};

  if (const Tensor* m = ctx.optional_input(3)) {
    if (m->dtype() != q.dtype()) ctx.fail("mask is ", m->describe(), " but Q is ", q.describe());
    if (m->rank() > 4) ctx.fail("mask ", m->describe(), " must have rank <= 4");
    const int64_t full[4] = {a.batch, a.heads, a.q_len, a.kv_len};
    int64_t st[4] = {0, 0, 0, 0};
    int64_t stride = 1;
    for (int64_t i = 0; i < m->rank(); ++i) {
      const int64_t d = m->shape()[m->rank() - 1 - i];
      const int64_t axis = 3 - i;
      if (d != 1 && d != full[axis])
        ctx.fail("mask ", m->describe(), " does not broadcast to [B, H, Sq, Sk] = [", full[0], ", ", full[1],
                 ", ", full[2], ", ", full[3], "]");
      st[axis] = d == 1 ? 0 : stride;
      stride *= d;
    }
    a.has_mask = true;
    a.m_b = st[0];
    a.m_h = st[1];
    a.m_q = st[2];
    a.m_k = st[3];
  }
  return a;
}

namespace {

void attention_kernel(KernelContext& ctx) {
  const AttentionShape a = attention_shape(ctx);
  const Tensor &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  const Tensor* mask = ctx.optional_input(3);
  Tensor& y = ctx.allocate_output(0, q.dtype(), a.out_shape);
  const double lowest = attention_lowest(q.dtype());
  ref::dispatch<ref::FloatTypes>(ctx, q.dtype(), "Q", [&](auto tag) {
    using S = typename decltype(tag)::type;
    const S *pq = ref::data_as<S>(q) + a.q_off, *pk = ref::data_as<S>(k) + a.k_off, *pv = ref::data_as<S>(v) + a.v_off;
    const S* pm = mask ? ref::data_as<S>(*mask) : nullptr;
    S* py = ref::data_as<S>(y);
    std::vector<double> s(static_cast<size_t>(a.kv_len));
    for (int64_t b = 0; b < a.batch; ++b) {
      for (int64_t h = 0; h < a.heads; ++h) {
        for (int64_t i = 0; i < a.q_len; ++i) {
          const S* qi = pq + b * a.q_b + i * a.q_s + h * a.head_k;
          for (int64_t j = 0; j < a.kv_len; ++j) {
            const S* kj = pk + b * a.k_b + j * a.k_s + h * a.head_k;
            double dot = 0;
            for (int64_t d = 0; d < a.head_k; ++d)
              dot += static_cast<double>(ref::load(qi[d])) * static_cast<double>(ref::load(kj[d]));
            s[j] = a.scale * dot;
            if (pm) s[j] += static_cast<double>(ref::load(pm[b * a.m_b + h * a.m_h + i * a.m_q + j * a.m_k]));
            if (a.causal && j > a.last_key(i)) s[j] = lowest;
          }
          double mx = -INFINITY;
          for (double x : s) mx = std::max(mx, x);
          double sum = 0;
          for (double& x : s) sum += (x = std::exp(x - mx));
          S* yi = py + b * a.y_b + i * a.y_s + h * a.head_v;
          for (int64_t d = 0; d < a.head_v; ++d) {
            double acc = 0;
            for (int64_t j = 0; j < a.kv_len; ++j)
              acc += s[j] / sum * static_cast<double>(ref::load(pv[b * a.v_b + j * a.v_s + h * a.head_v + d]));
            yi[d] = ref::store_double<S>(acc);
          }
        }
      }
    }
  });
}

}  // namespace

void register_ref_attention(KernelRegistry& r) {
  r.add("octet", "Attention", attention_kernel);
  register_ref_qattention(r);
}

}  // namespace octet
