// The table of row-level float32 kernels one ISA level provides. Kept free of heavy
// headers because the per-ISA translation units include it: an inline std:: function
// instantiated there would be compiled with AVX-512 and could be the copy the linker keeps.
#pragma once

#include <cstdint>

namespace octet::cpu {

// GeluErfFast: the GeLU of octet.QMatMul's epilogue and of fp32 MatMulBias' gelu (a piecewise
// polynomial, |error| <= 4.1e-7; vec_impl.h), not an ONNX op's.
enum class UnaryOp : int { Exp, Tanh, Erf, Sigmoid, Sqrt, Relu, GeluErf, GeluTanh, GeluErfFast, kCount };
enum class BinaryOp : int { Add, Sub, Mul, Div, kCount };

constexpr int kUnaryOps = static_cast<int>(UnaryOp::kCount);
constexpr int kBinaryOps = static_cast<int>(BinaryOp::kCount);

using UnaryFn = void (*)(const float* x, float* y, int64_t n);
using BinaryFn = void (*)(const float* a, const float* b, float* y, int64_t n);
using BinaryScalarFn = void (*)(const float* a, float b, float* y, int64_t n);

// One output of VecTable::norm_row2: y = normalized x * gamma (+ beta; beta may be null).
struct NormOutput {
  const float* gamma;
  const float* beta;
  float* y;
};

struct VecTable {
  const char* name = nullptr;  // the ISA level of the last fill: "generic", "avx2", "avx512"

  float (*max)(const float* x, int64_t n) = nullptr;  // -inf for n == 0
  float (*sum)(const float* x, int64_t n) = nullptr;
  // y = x * s.
  void (*scale)(const float* x, float s, float* y, int64_t n) = nullptr;
  // y = exp(x * scale - shift), returns the sum of y. Softmax's core; scale > 0. Results
  // below exp(-87) are 0 and x * scale - shift is expected <= 0 (it saturates at exp(88)).
  float (*exp_sum)(const float* x, float scale, float shift, float* y, int64_t n) = nullptr;
  // y = softmax(x * scale) over one row of n; scale > 0. x and y may alias.
  void (*softmax_row)(const float* x, float* y, int64_t n, float scale) = nullptr;
  // y = (x - mean) / sqrt(var + eps) * gamma (+ beta) over one row (LayerNormalization);
  // with center false, y = x / sqrt(mean(x^2) + eps) * gamma (RMSNormalization).
  // beta may be null. x and y may alias.
  void (*norm_row)(const float* x, float* y, int64_t n, const float* gamma, const float* beta, float eps,
                   bool center) = nullptr;
  // LayerNormalization of one row into two affine forms (a LayerNorm whose quantized output
  // has its own gamma / beta, SmoothQuant's folded 1/s): the statistics once, each output
  // the same bits as norm_row with its gamma / beta. With mn / mx non-null also the first
  // output's range, as QuantTable::min_max reports it. A null second.y skips the second
  // output: norm_row's row with its range taken on the way.
  void (*norm_row2)(const float* x, int64_t n, float eps, const NormOutput& first, const NormOutput& second,
                    float* mn, float* mx) = nullptr;

  // y = (g * sigmoid(g)) * u (octet.SwiGLU), each product rounded to float as the Sigmoid,
  // Mul, Mul it replaces: the same sigmoid as unary[Sigmoid], so bit for bit their result.
  void (*swiglu)(const float* g, const float* u, float* y, int64_t n) = nullptr;

  UnaryFn unary[kUnaryOps] = {};
  BinaryFn binary[kBinaryOps] = {};          // y = a op b, elementwise
  BinaryScalarFn binary_rhs[kBinaryOps] = {};  // y = a[i] op b
  BinaryScalarFn binary_lhs[kBinaryOps] = {};  // y = b op a[i] (the scalar is the left operand)
};

// Each per-ISA translation unit overrides the entries it implements.
void fill_vec_table_generic(VecTable& t);
void fill_vec_table_avx2(VecTable& t);
void fill_vec_table_avx512(VecTable& t);

}  // namespace octet::cpu
