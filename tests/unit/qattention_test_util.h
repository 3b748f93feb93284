// Shared by the octet.QAttention tests (ops_octet_qattention_test.cpp, cpu_qattention_test.cpp):
// a case description, its one-node graph and inputs, the fake-quant graph of standard ONNX
// ops it stands for, and the comparison that allows for P quantization flips.
//
// Why flips: two correct kernels compute the softmax with different last bits (double vs a
// vectorized float exp; a float MatMul of dequantized values vs exact integers), and a
// p_j / p_scale that lies within those bits of a .5 boundary rounds to neighbouring
// quanta. Each such flip moves y_i by p_scale * v_scale * |vq[j] - v_zp| <= one p quantum
// times max|v| in one row; everything else agrees to float rounding.
#pragma once

#include <array>
#include <limits>
#include <string>

#include "cpu_test_util.h"

namespace octet::testing {

struct QCase {
  int64_t batch = 1, q_len = 1, kv_len = 1, heads = 1, head_k = 8, head_v = 8;
  bool causal = false, seq_first = false;
  bool row_probabilities = false;        // p quantizes exp(s - max), outputs divided by the sums
  std::vector<int64_t> mask_shape = {};  // empty: no mask
  DType zp_type = DType::UInt8;          // the four zero points' type
  bool p_int16 = false;                  // p's zero point int16 0 instead (more than 255 levels)
  std::array<int, 4> zp = {0, 0, 0, 0};  // q, k, v, p zero points
  std::array<float, 4> scale = {4.0f / 255, 4.0f / 255, 4.0f / 255, 1.0f / 255};
  uint32_t seed = 0;

  std::string describe() const {
    std::string m;
    for (int64_t d : mask_shape) m += std::to_string(d) + ",";
    return "B" + std::to_string(batch) + " Sq" + std::to_string(q_len) + " Sk" + std::to_string(kv_len) + " H" +
           std::to_string(heads) + " Dk" + std::to_string(head_k) + " Dv" + std::to_string(head_v) +
           (causal ? " causal" : "") + (seq_first ? " seq_first" : "") +
           (row_probabilities ? " rows" : "") + " mask[" + m + "] " +
           dtype_name(zp_type) + " zp " + std::to_string(zp[0]) + "," + std::to_string(zp[1]) + "," +
           std::to_string(zp[2]) + "," + std::to_string(zp[3]) + (p_int16 ? " p int16" : "");
  }
};

// Typical parameter sets: uint8 asymmetric activations (p in [0, 1] with zero point 0),
// the same with a nonzero p zero point, int8 symmetric (p over the full int8 range), and
// int8 with nonzero zero points everywhere.
inline QCase with_u8(QCase c) { c.zp_type = DType::UInt8; c.zp = {131, 118, 127, 0}; return c; }
inline QCase with_u8_pzp(QCase c) { c.zp_type = DType::UInt8; c.zp = {128, 140, 100, 9}; return c; }
inline QCase with_s8(QCase c) {
  c.zp_type = DType::Int8;
  c.zp = {0, 0, 0, -128};
  c.scale = {2.0f / 127, 2.0f / 127, 2.0f / 127, 1.0f / 255};
  return c;
}
// P with 4095 levels in int16 (what octet quantize writes for the octet target), Q, K and V
// as with_u8 / with_s8_asym.
inline QCase with_u8_wide_p(QCase c) {
  c = with_u8(c);
  c.p_int16 = true;
  c.zp[3] = 0;
  c.scale[3] = 1.0f / 4095;
  return c;
}
inline QCase with_s8_wide_p(QCase c);
inline QCase with_s8_asym(QCase c) {
  c.zp_type = DType::Int8;
  c.zp = {-5, 7, -3, -100};
  c.scale = {4.0f / 255, 3.0f / 255, 4.0f / 255, 1.0f / 200};
  return c;
}

inline QCase with_s8_wide_p(QCase c) {
  c = with_s8_asym(c);
  c.p_int16 = true;
  c.zp[3] = 0;
  c.scale[3] = 1.0f / 4095;
  return c;
}

inline std::vector<int64_t> lead_shape(const QCase& c, int64_t len, int64_t channels) {
  return c.seq_first ? std::vector<int64_t>{len, c.batch, channels} : std::vector<int64_t>{c.batch, len, channels};
}

// The 8 scalar quantization inputs: scale, zero point for q, k, v, p.
inline std::vector<std::pair<std::string, Tensor>> qattention_params(const QCase& c) {
  std::vector<std::pair<std::string, Tensor>> out;
  const char* names[] = {"q", "k", "v", "p"};
  for (int t = 0; t < 4; ++t) {
    out.emplace_back(std::string(names[t]) + "_scale", Tensor::from_vector<float>({}, {c.scale[t]}));
    if (t == 3 && c.p_int16) {
      out.emplace_back("p_zp", Tensor::from_vector<int16_t>({}, {0}));
      continue;
    }
    out.emplace_back(std::string(names[t]) + "_zp", c.zp_type == DType::Int8
                                                        ? Tensor::from_vector<int8_t>({}, {static_cast<int8_t>(c.zp[t])})
                                                        : Tensor::from_vector<uint8_t>({}, {static_cast<uint8_t>(c.zp[t])}));
  }
  return out;
}

inline std::vector<Attribute> qattention_attrs(const QCase& c, float scale = 0.37f) {
  return {Attribute::make_int("num_heads", c.heads), Attribute::make_float("scale", scale),
          Attribute::make_int("causal", c.causal), Attribute::make_int("seq_first", c.seq_first),
          Attribute::make_int("row_probabilities", c.row_probabilities)};
}

// octet.QAttention(q, k, v, mask?, 8 constant parameters) -> y.
inline std::shared_ptr<Graph> qattention_graph(const QCase& c, float scale = 0.37f) {
  auto g = std::make_shared<Graph>();
  g->opset_imports[""] = 21;
  g->opset_imports["octet"] = 1;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    g->add_input(name, TensorType(DType::Float32, DimVector(shape.begin(), shape.end())));
  };
  add("q", lead_shape(c, c.q_len, c.heads * c.head_k));
  add("k", lead_shape(c, c.kv_len, c.heads * c.head_k));
  add("v", lead_shape(c, c.kv_len, c.heads * c.head_v));
  std::vector<std::string> ins = {"q", "k", "v", ""};
  if (!c.mask_shape.empty()) {
    add("mask", c.mask_shape);
    ins[3] = "mask";
  }
  for (auto& [name, t] : qattention_params(c)) {
    g->add_initializer(name, std::make_shared<Tensor>(t));
    ins.push_back(name);
  }
  g->add_node("QAttention", ins, {"y"}, qattention_attrs(c, scale), "octet", "qattention");
  g->mark_output(g->value("y"));
  return g;
}

// Q, K, V in [-2.5, 2.5] (some saturate at the scales above); the mask in [-1, 1] with
// finfo.min (padding) on every fifth key.
inline NamedTensors qattention_inputs(const QCase& c) {
  NamedTensors in = {{"q", random_f32(lead_shape(c, c.q_len, c.heads * c.head_k), 10 * c.seed + 1, -2.5f, 2.5f)},
                     {"k", random_f32(lead_shape(c, c.kv_len, c.heads * c.head_k), 10 * c.seed + 2, -2.5f, 2.5f)},
                     {"v", random_f32(lead_shape(c, c.kv_len, c.heads * c.head_v), 10 * c.seed + 3, -2.5f, 2.5f)}};
  if (!c.mask_shape.empty()) {
    Tensor m = random_f32(c.mask_shape, 10 * c.seed + 4, -1.0f, 1.0f);
    float* p = m.mutable_data<float>();
    const int64_t row = c.mask_shape.back();
    for (int64_t i = 0; i < m.numel(); ++i)
      if ((i % row) % 5 == 4) p[i] = std::numeric_limits<float>::lowest();
    in.emplace_back("mask", std::move(m));
  }
  return in;
}

// How far one P flip can move an output: one p quantum times the largest |dequantized v|.
inline double flip_bound(const QCase& c) {
  const double lo = c.zp_type == DType::Int8 ? -128 : 0, hi = lo + 255;
  const double vmax = std::max(hi - c.zp[2], c.zp[2] - lo) * c.scale[2];
  return c.scale[3] * vmax;
}

struct QCompare {
  int64_t elements = 0, loose = 0;  // loose: outside 1e-5 but within flip_bound
};

// Each element within 1e-5 absolute + 1e-5 relative of the reference, or (a P flip) within
// flip_bound(c); anything else fails. Returns the counts so callers can bound the flips.
inline QCompare compare_qattention(const Tensor& got, const Tensor& want, const QCase& c, const std::string& what) {
  QCompare r;
  EXPECT_EQ(got.shape(), want.shape()) << what;
  if (got.shape() != want.shape()) return r;
  const float *a = got.data<float>(), *b = want.data<float>();
  const double loose = flip_bound(c) * 1.0001 + 1e-5;
  int reported = 0;
  for (int64_t i = 0; i < got.numel(); ++i, ++r.elements) {
    const double err = std::fabs(double(a[i]) - b[i]);
    if (err <= 1e-5 + 1e-5 * std::fabs(b[i])) continue;
    ++r.loose;
    if (err > loose && reported++ < 5)
      ADD_FAILURE() << what << ": element " << i << " is " << a[i] << ", reference " << b[i] << " (flip bound "
                    << flip_bound(c) << ")";
  }
  return r;
}

}  // namespace octet::testing
