// Helpers for the octet.QMatMul tests: random operands of the shapes and parameter kinds a
// test asks for (static/dynamic, uint8/int8 activations, per-tensor/per-column weights,
// bias, GeLU, residual), one-node graphs with the weights as constants, and a comparison
// at the tolerance docs/quantization.md gives (1e-5 relative / 1e-5 absolute on outputs
// of magnitude ~1; the operands here are scaled so outputs are).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cpu_matmul_test_util.h"

namespace octet::testing::qmm {

using mm::Operand;

// Deterministic int8 values over the whole range [-128, 127].
inline Tensor rand_int8(std::vector<int64_t> shape, uint64_t seed) {
  Tensor t(DType::Int8, std::move(shape));
  uint64_t s = seed * 2862933555777941757ull + 3037000493ull;
  int8_t* p = t.mutable_data<int8_t>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = static_cast<int8_t>(static_cast<int>(s >> 56) - 128);
  }
  return t;
}

// Deterministic bytes over the whole range of `t` (Int8 or UInt8): the same bits as rand_int8.
inline Tensor rand_bytes(DType t, std::vector<int64_t> shape, uint64_t seed) {
  Tensor r = rand_int8(std::move(shape), seed);
  return Tensor(t, r.shape(), r.buffer());
}

// A zero point of type `t` (Int8 or UInt8): a scalar, or n values base, base + step, ...
// (wrapping in 8 bits).
inline Tensor scalar_of(DType t, int v) {
  return t == DType::Int8 ? Tensor::scalar<int8_t>(static_cast<int8_t>(v)) : Tensor::scalar<uint8_t>(static_cast<uint8_t>(v));
}
inline Tensor vector_of(DType t, int64_t n, int base, int step) {
  Tensor z(t, {n});
  for (int64_t i = 0; i < n; ++i) z.mutable_raw()[i] = static_cast<uint8_t>(base + step * i);
  return z;
}

struct QCase {
  std::vector<int64_t> a_shape;  // [..., K]
  int64_t n = 1;
  bool is_static = true;
  DType act = DType::UInt8;  // static: a_zero_point's type; dynamic: dynamic_type
  bool per_column = true;
  bool b_zero_point = false;  // an explicit all-zero b_zero_point
  int8_t b_zero_value = 0;    // its value (nonzero: the kernels may hand the node to the reference)
  bool bias = true;
  std::string activation;
  bool residual = false;
  bool channel_scale = false;  // a_channel_scale (a folded smoothing Mul), values in [0.25, 1.75]
  bool output_scale = false;   // output_scale per column (a folded LayerScale Mul), signs mixed
  uint64_t seed = 1;

  int64_t k() const { return a_shape.back(); }
  std::vector<int64_t> out_shape() const {
    std::vector<int64_t> s(a_shape.begin(), a_shape.end() - 1);
    s.push_back(n);
    return s;
  }
  std::string label() const {
    std::ostringstream o;
    o << "A " << shape_to_string(a_shape) << " N " << n << (is_static ? " static " : " dynamic ")
      << dtype_name(act) << (per_column ? " per-column" : " per-tensor") << (bias ? " bias" : "")
      << (activation.empty() ? "" : " " + activation) << (residual ? " residual" : "")
      << (channel_scale ? " channel-scale" : "") << (output_scale ? " output-scale" : "");
    if (b_zero_point) o << " zb " << static_cast<int>(b_zero_value);
    return o.str();
  }
};

// The variant a test index stands for: cycles static/dynamic, the activation type, the
// weights' granularity, bias, activation, residual, a_channel_scale (unless
// `channel_scale` is false) and output_scale independently.
inline QCase cycled_variant(std::vector<int64_t> a_shape, int64_t n, int i, bool channel_scale = true) {
  QCase c;
  c.a_shape = std::move(a_shape);
  c.n = n;
  c.is_static = i % 2 == 0;
  c.act = (i / 2) % 2 == 0 ? DType::UInt8 : DType::Int8;
  c.per_column = (i / 4) % 2 == 0;
  c.bias = i % 3 != 2;
  c.activation = i % 5 == 1 ? "gelu" : (i % 5 == 3 ? "gelu_tanh" : "");
  c.residual = i % 7 >= 4;
  c.channel_scale = channel_scale && i % 11 >= 6;
  c.output_scale = i % 13 >= 7;
  c.seed = static_cast<uint64_t>(i + 1);
  return c;
}

// Operands in QMatMul's input order; A (and the residual) are graph inputs, the rest
// constants. Activations in [-1, 1]; b_scale ~ 1 / (127 sqrt(K)) so outputs are ~1.
inline std::vector<std::optional<Operand>> operands(const QCase& c) {
  const int64_t k = c.k(), n = c.n;
  std::vector<std::optional<Operand>> ins(10);
  ins[0] = Operand{mm::rand(c.a_shape, c.seed)};
  if (c.is_static) {
    // Asymmetric uint8 range a little narrower than A's, so some values saturate.
    if (c.act == DType::UInt8) {
      ins[1] = Operand{Tensor::scalar<float>(1.9f / 255.0f), true};
      ins[2] = Operand{Tensor::scalar<uint8_t>(131), true};
    } else {
      ins[1] = Operand{Tensor::scalar<float>(0.95f / 127.0f), true};
      ins[2] = Operand{Tensor::scalar<int8_t>(-3), true};
    }
  }
  ins[3] = Operand{rand_int8({k, n}, c.seed + 1), true};
  const float base = 1.0f / (127.0f * std::sqrt(static_cast<float>(std::max<int64_t>(k, 1))));
  Tensor sb = c.per_column ? Tensor(DType::Float32, {n}) : Tensor::scalar<float>(0);
  Tensor r = mm::rand({std::max<int64_t>(n, 1)}, c.seed + 2);
  for (int64_t i = 0; i < sb.numel(); ++i) sb.mutable_data<float>()[i] = base * (1.0f + 0.5f * r.data<float>()[i]);
  ins[4] = Operand{sb, true};
  if (c.b_zero_point) {
    Tensor zb = c.per_column ? Tensor(DType::Int8, {n}) : Tensor(DType::Int8, {});
    for (int64_t i = 0; i < zb.numel(); ++i) zb.mutable_data<int8_t>()[i] = c.b_zero_value;
    ins[5] = Operand{zb, true};
  }
  if (c.bias) ins[6] = Operand{mm::rand({n}, c.seed + 3), true};
  if (c.residual) ins[7] = Operand{mm::rand(c.out_shape(), c.seed + 4)};
  if (c.channel_scale) {
    Tensor cs = mm::rand({k}, c.seed + 5);
    for (int64_t i = 0; i < k; ++i) cs.mutable_data<float>()[i] = 1.0f + 0.75f * cs.data<float>()[i];
    ins[8] = Operand{cs, true};
  }
  if (c.output_scale) ins[9] = Operand{mm::rand({n}, c.seed + 6), true};
  while (!ins.empty() && !ins.back()) ins.pop_back();
  return ins;
}

inline std::vector<Attribute> attributes(const QCase& c) {
  std::vector<Attribute> a;
  if (!c.activation.empty()) a.push_back(Attribute::make_string("activation", c.activation));
  if (!c.is_static) a.push_back(Attribute::make_string("dynamic_type", c.act == DType::Int8 ? "int8" : "uint8"));
  return a;
}

inline std::shared_ptr<Graph> graph(const QCase& c) {
  return mm::one_node("QMatMul", operands(c), attributes(c), "octet");
}

// |got - want| <= 1e-5 (1 + |want|) elementwise: float rounding of the scaling, bias and
// epilogue on outputs of magnitude ~1 (docs/quantization.md §2).
inline void expect_close(const Tensor& got, const Tensor& want, const std::string& what, double tol = 1e-5) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  std::vector<float> g = got.to_float_vector(), w = want.to_float_vector();
  int reported = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double err = std::fabs(static_cast<double>(g[i]) - w[i]);
    if (!(err <= tol * (1.0 + std::fabs(w[i])))) {
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", expected " << w[i];
      if (++reported == 5) return;
    }
  }
}

}  // namespace octet::testing::qmm
