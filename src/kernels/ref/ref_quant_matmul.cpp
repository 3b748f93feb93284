// Reference kernels: integer matrix products and convolution (MatMulInteger,
// QLinearMatMul, ConvInteger) and com.microsoft MatMulNBits (block-quantized weights).
//
// Integer products subtract the zero points first and accumulate exactly in 64 bits;
// MatMulInteger and ConvInteger then wrap to int32 (the spec says the accumulation may
// overflow only in 32 bits, i.e. it wraps like int32 arithmetic).
#include <algorithm>
#include <cmath>

#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_math_quant.h"

namespace octet::ref {
namespace {

// numpy.matmul shapes: 1-D operands are promoted ([K] -> [1, K] for A, [K, 1] for B) and
// the promoted dim is dropped from the result; leading (batch) dims broadcast.
struct MatmulPlan {
  Shape a, b;                     // promoted shapes (rank >= 2)
  int64_t M = 0, K = 0, N = 0;
  Shape out;                      // result shape
  int64_t batches = 1;
  std::vector<int64_t> a_batch, b_batch;  // per output batch: matrix index into A and B
};

MatmulPlan plan_matmul(const KernelContext& ctx, const Shape& a_in, const Shape& b_in) {
  if (a_in.empty() || b_in.empty()) ctx.fail("matmul inputs must have rank >= 1");
  MatmulPlan p;
  p.a = a_in.size() == 1 ? Shape{1, a_in[0]} : a_in;
  p.b = b_in.size() == 1 ? Shape{b_in[0], 1} : b_in;
  p.M = p.a[p.a.size() - 2];
  p.K = p.a.back();
  p.N = p.b.back();
  if (p.b[p.b.size() - 2] != p.K)
    ctx.fail("matmul inner dimensions differ: A ", shape_to_string(a_in), " and B ", shape_to_string(b_in));
  const Shape a_batch(p.a.begin(), p.a.end() - 2), b_batch(p.b.begin(), p.b.end() - 2);
  auto batch = broadcast_shapes({&a_batch, &b_batch});
  if (!batch) ctx.fail("cannot broadcast batch dims of A ", shape_to_string(a_in), " and B ", shape_to_string(b_in));
  p.out = *batch;
  if (a_in.size() > 1) p.out.push_back(p.M);
  if (b_in.size() > 1) p.out.push_back(p.N);
  p.batches = shape_numel(*batch);
  BroadcastWalker w(*batch, {&a_batch, &b_batch});
  for (int64_t i = 0; i < p.batches; ++i, w.next()) {
    p.a_batch.push_back(w.offset(0));
    p.b_batch.push_back(w.offset(1));
  }
  return p;
}

// The quantized operand minus its zero point, as int32 with the operand's promoted shape.
// A per-row zero point of A ([M]) becomes [M, 1]; any other zero point must broadcast to
// the operand (a scalar, [N] per column of B, [..., M, 1], [..., 1, N]).
std::vector<int32_t> centered(const KernelContext& ctx, const Tensor& q, const Shape& shape,
                              const Tensor* zp, bool per_row, const char* what) {
  const bool is_8bit = q.dtype() == DType::Int8 || q.dtype() == DType::UInt8;
  if (!is_8bit) ctx.fail(what, " has dtype ", dtype_name(q.dtype()), "; only int8 and uint8 are supported");
  std::vector<int32_t> out(static_cast<size_t>(q.numel()));
  for (int64_t i = 0; i < q.numel(); ++i) out[i] = static_cast<int32_t>(element_as_double(q, i));
  if (!zp) return out;
  if (zp->dtype() != q.dtype())
    ctx.fail(what, " zero point is ", dtype_name(zp->dtype()), " but ", what, " is ", dtype_name(q.dtype()));
  Shape zshape = zp->shape();
  if (zp->numel() == 1) zshape = {};
  else if (per_row && zshape.size() == 1) zshape = {zshape[0], 1};
  auto b = broadcast_shapes({&zshape, &shape});
  if (!b || *b != shape)
    ctx.fail(what, " zero point shape ", shape_to_string(zp->shape()), " does not fit ", what, " shape ",
             shape_to_string(shape));
  BroadcastWalker w(shape, {&zshape});
  for (int64_t i = 0; i < q.numel(); ++i, w.next())
    out[i] -= static_cast<int32_t>(element_as_double(*zp, w.offset(0)));
  return out;
}

// C[batch, m, n] = sum_k A[m, k] * B[k, n], exact in 64 bits.
std::vector<int64_t> int_matmul(const MatmulPlan& p, const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  std::vector<int64_t> c(static_cast<size_t>(p.batches * p.M * p.N), 0);
  for (int64_t t = 0; t < p.batches; ++t) {
    const int32_t* pa = a.data() + p.a_batch[t] * p.M * p.K;
    const int32_t* pb = b.data() + p.b_batch[t] * p.K * p.N;
    int64_t* pc = c.data() + t * p.M * p.N;
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t k = 0; k < p.K; ++k) {
        const int64_t av = pa[m * p.K + k];
        for (int64_t n = 0; n < p.N; ++n) pc[m * p.N + n] += av * pb[k * p.N + n];
      }
  }
  return c;
}

void matmul_integer_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const MatmulPlan p = plan_matmul(ctx, a.shape(), b.shape());
  const auto ca = centered(ctx, a, p.a, ctx.optional_input(2), true, "A");
  const auto cb = centered(ctx, b, p.b, ctx.optional_input(3), false, "B");
  const auto c = int_matmul(p, ca, cb);
  Tensor& y = ctx.allocate_output(0, DType::Int32, p.out);
  int32_t* py = y.mutable_data<int32_t>();
  for (size_t i = 0; i < c.size(); ++i) py[i] = static_cast<int32_t>(c[i]);  // wraps like int32
}

// A scale that is a scalar or a 1-D vector of `len` (per row of A / per column of B).
std::vector<double> vector_scale(const KernelContext& ctx, const Tensor& s, int64_t len, const char* what) {
  dispatch<Types<float, Float16, BFloat16>>(ctx, s.dtype(), what, [](auto) {});
  if (s.numel() == 1) return std::vector<double>(static_cast<size_t>(len), element_as_double(s, 0));
  if (s.rank() != 1 || s.numel() != len)
    ctx.fail(what, " must be a scalar or 1-D of length ", len, ", got shape ", shape_to_string(s.shape()));
  std::vector<double> out;
  for (int64_t i = 0; i < len; ++i) out.push_back(element_as_double(s, i));
  return out;
}

// QLinearMatMul: y = saturate(round_half_even(acc * (a_scale * b_scale / y_scale)) + y_zp),
// acc the exact integer product of the centered inputs. The multiplier is formed in
// float32 like the ONNX reference and onnxruntime do; the product acc * multiplier in
// double.
void qlinear_matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const Tensor* y_zp = ctx.optional_input(7);
  const MatmulPlan p = plan_matmul(ctx, a.shape(), b.shape());
  const auto ca = centered(ctx, a, p.a, ctx.optional_input(2), true, "a");
  const auto cb = centered(ctx, b, p.b, ctx.optional_input(5), false, "b");
  const auto a_scale = vector_scale(ctx, ctx.input(1), p.M, "a_scale");
  const auto b_scale = vector_scale(ctx, ctx.input(4), p.N, "b_scale");
  const auto y_scale = vector_scale(ctx, ctx.input(6), p.N, "y_scale");
  const DType out_type = y_zp ? y_zp->dtype() : a.dtype();
  int64_t lo, hi;
  if (out_type != DType::Int8 && out_type != DType::UInt8)
    ctx.fail("y_zero_point has dtype ", dtype_name(out_type), "; only int8 and uint8 are supported");
  quant_int_range(out_type, lo, hi);
  std::vector<double> y_zero(static_cast<size_t>(p.N), 0.0);
  if (y_zp) {
    if (y_zp->numel() != 1 && y_zp->numel() != p.N)
      ctx.fail("y_zero_point must be a scalar or 1-D of length ", p.N);
    for (int64_t n = 0; n < p.N; ++n) y_zero[n] = element_as_double(*y_zp, y_zp->numel() == 1 ? 0 : n);
  }
  const auto c = int_matmul(p, ca, cb);
  Tensor& y = ctx.allocate_output(0, out_type, p.out);
  for (int64_t t = 0; t < p.batches; ++t)
    for (int64_t m = 0; m < p.M; ++m)
      for (int64_t n = 0; n < p.N; ++n) {
        const float multiplier = static_cast<float>(a_scale[m]) * static_cast<float>(b_scale[n]) /
                                 static_cast<float>(y_scale[n]);
        const int64_t i = (t * p.M + m) * p.N + n;
        const double v = std::nearbyint(static_cast<double>(c[i]) * multiplier) + y_zero[n];
        const int64_t q = static_cast<int64_t>(std::clamp(v, double(lo), double(hi)));
        y.mutable_raw()[i] = static_cast<uint8_t>(q);
      }
}

// Row-major coordinates of flat index `i` in `dims`.
void unravel(int64_t i, const Shape& dims, std::vector<int64_t>& pos) {
  for (size_t d = dims.size(); d-- > 0;) {
    pos[d] = i % dims[d];
    i /= dims[d];
  }
}

// ConvInteger: N-D convolution of (x - x_zero_point) and (w - w_zero_point), int32 output.
// Padding contributes zero after the zero point is subtracted.
void conv_integer_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Node& node = ctx.node();
  if (x.rank() < 3 || w.rank() != x.rank())
    ctx.fail("X must be [N, C, spatial...] and W [M, C/group, kernel...] of the same rank; got ",
             shape_to_string(x.shape()), " and ", shape_to_string(w.shape()));
  const size_t sp = static_cast<size_t>(x.rank() - 2);
  const int64_t batch = x.shape()[0], channels = x.shape()[1], maps = w.shape()[0];
  const int64_t group = node.attr_int("group", 1);
  if (group <= 0 || channels % group != 0 || maps % group != 0 || w.shape()[1] * group != channels)
    ctx.fail("channels ", channels, " and W shape ", shape_to_string(w.shape()), " do not fit group ", group);
  const Shape in_sp(x.shape().begin() + 2, x.shape().end());
  const Shape kernel(w.shape().begin() + 2, w.shape().end());
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != kernel)
    ctx.fail("kernel_shape attribute differs from W's spatial shape ", shape_to_string(kernel));
  const std::vector<int64_t> strides = node.attr_ints("strides", std::vector<int64_t>(sp, 1));
  const std::vector<int64_t> dil = node.attr_ints("dilations", std::vector<int64_t>(sp, 1));
  std::vector<int64_t> pads = node.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  if (strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp)
    ctx.fail("strides, dilations and pads must have ", sp, ", ", sp, " and ", 2 * sp, " values");
  const std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  Shape out_sp(sp);
  for (size_t d = 0; d < sp; ++d) {
    const int64_t span = dil[d] * (kernel[d] - 1) + 1;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out_sp[d] = (in_sp[d] + strides[d] - 1) / strides[d];
      const int64_t total = std::max<int64_t>(0, (out_sp[d] - 1) * strides[d] + span - in_sp[d]);
      pads[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[d + sp] = total - pads[d];
    } else {
      if (auto_pad == "VALID") pads[d] = pads[d + sp] = 0;
      else if (auto_pad != "NOTSET") ctx.fail("unknown auto_pad \"", auto_pad, "\"");
      const int64_t padded = in_sp[d] + pads[d] + pads[d + sp];
      out_sp[d] = padded < span ? 0 : (padded - span) / strides[d] + 1;
    }
  }
  if (ctx.has_input(2) && ctx.input(2).numel() != 1) ctx.fail("x_zero_point must be a scalar");
  const auto cx = centered(ctx, x, x.shape(), ctx.optional_input(2), false, "x");
  // w_zero_point is a scalar or one value per output channel [M].
  std::vector<int32_t> cw(static_cast<size_t>(w.numel()));
  const Tensor* wzp = ctx.optional_input(3);
  if (wzp && wzp->numel() != 1 && wzp->numel() != maps)
    ctx.fail("w_zero_point must be a scalar or have one value per output channel (", maps, ")");
  const auto wraw = centered(ctx, w, w.shape(), nullptr, false, "w");
  const int64_t per_map = w.numel() / std::max<int64_t>(maps, 1);
  for (int64_t i = 0; i < w.numel(); ++i) {
    const int64_t m = i / per_map;
    cw[i] = wraw[i] - (wzp ? static_cast<int32_t>(element_as_double(*wzp, wzp->numel() == 1 ? 0 : m)) : 0);
  }

  Shape out_shape{batch, maps};
  out_shape.insert(out_shape.end(), out_sp.begin(), out_sp.end());
  Tensor& y = ctx.allocate_output(0, DType::Int32, out_shape);
  int32_t* py = y.mutable_data<int32_t>();
  const int64_t in_size = shape_numel(in_sp), out_size = shape_numel(out_sp), k_size = shape_numel(kernel);
  const int64_t cpg = channels / group, mpg = maps / group;
  std::vector<int64_t> opos(sp), kpos(sp);
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < maps; ++m) {
      const int64_t g = m / mpg;
      for (int64_t o = 0; o < out_size; ++o) {
        unravel(o, out_sp, opos);
        int64_t acc = 0;
        for (int64_t kk = 0; kk < k_size; ++kk) {
          int64_t in_off = 0;
          bool inside = true;
          unravel(kk, kernel, kpos);
          for (size_t d = 0; d < sp && inside; ++d) {
            const int64_t at = opos[d] * strides[d] - pads[d] + kpos[d] * dil[d];
            inside = at >= 0 && at < in_sp[d];
            in_off = in_off * in_sp[d] + at;
          }
          if (!inside) continue;
          for (int64_t c = 0; c < cpg; ++c) {
            const int64_t xc = g * cpg + c;
            acc += static_cast<int64_t>(cx[(n * channels + xc) * in_size + in_off]) *
                   cw[(m * cpg + c) * k_size + kk];
          }
        }
        py[(n * maps + m) * out_size + o] = static_cast<int32_t>(acc);
      }
    }
}

// com.microsoft MatMulNBits: Y = A @ dequant(B)^T (+ bias), B [N, k_blocks, blob] holding
// `bits`-bit values packed LSB-first along K; dequant = (q - zero_point) * scale per block.
// Zero points: packed uint8 (same packing, one row of ceil(k_blocks * bits / 8) bytes per
// n), or unpacked in A's float type; default 2^(bits - 1). accuracy_level is ignored: the
// oracle computes in double and rounds once.
void matmul_nbits_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const Tensor& scales = ctx.input(2);
  const Tensor* zp = ctx.optional_input(3);
  const Tensor* bias = ctx.optional_input(5);
  const Node& node = ctx.node();
  if (ctx.has_input(4)) ctx.fail("g_idx (input 4) is deprecated and not supported");
  const int64_t K = node.attr_int("K", -1), N = node.attr_int("N", -1);
  const int64_t bits = node.attr_int("bits", 4), block = node.attr_int("block_size", -1);
  if (K <= 0 || N <= 0 || block <= 0) ctx.fail("attributes K, N and block_size are required and positive");
  if (bits != 2 && bits != 4 && bits != 8) ctx.fail("bits=", bits, " is not supported (2, 4 or 8)");
  if (a.rank() < 1 || a.shape().back() != K)
    ctx.fail("A's last dim must be K=", K, ", got shape ", shape_to_string(a.shape()));
  const int64_t k_blocks = (K + block - 1) / block;
  const int64_t blob = block * bits / 8;
  if (b.dtype() != DType::UInt8 || b.numel() != N * k_blocks * blob)
    ctx.fail("B must be uint8 [N, k_blocks, blob] = [", N, ", ", k_blocks, ", ", blob, "], got ", b.describe());
  if (scales.dtype() != a.dtype() || scales.numel() != N * k_blocks)
    ctx.fail("scales must be ", dtype_name(a.dtype()), " with ", N * k_blocks, " values, got ", scales.describe());
  const int64_t zp_row = (k_blocks * bits + 7) / 8;
  if (zp) {
    const bool packed = zp->dtype() == DType::UInt8 && zp->numel() == N * zp_row;
    const bool unpacked = zp->dtype() == a.dtype() && zp->numel() == N * k_blocks;
    if (!packed && !unpacked)
      ctx.fail("zero_points must be packed uint8 with ", N * zp_row, " values or ", dtype_name(a.dtype()),
               " with ", N * k_blocks, " values, got ", zp->describe());
  }
  if (bias && (bias->dtype() != a.dtype() || bias->numel() != N))
    ctx.fail("bias must be ", dtype_name(a.dtype()), " [", N, "], got ", bias->describe());

  // Dequantize B once: W[n][k].
  const uint8_t* pb = b.raw();
  const int mask = (1 << bits) - 1;
  std::vector<double> wt(static_cast<size_t>(N * K));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t kb = 0; kb < k_blocks; ++kb) {
      const int64_t s = n * k_blocks + kb;
      const double scale = element_as_double(scales, s);
      double zero = static_cast<double>(1 << (bits - 1));
      if (zp && zp->dtype() == DType::UInt8) {
        const int64_t bit = kb * bits;
        zero = (zp->raw()[n * zp_row + bit / 8] >> (bit % 8)) & mask;
      } else if (zp) {
        zero = element_as_double(*zp, s);
      }
      const uint8_t* blk = pb + (n * k_blocks + kb) * blob;
      for (int64_t j = 0; j < block && kb * block + j < K; ++j) {
        const int64_t bit = j * bits;
        const int q = (blk[bit / 8] >> (bit % 8)) & mask;
        wt[n * K + kb * block + j] = (q - zero) * scale;
      }
    }

  Shape out_shape = a.shape();
  out_shape.back() = N;
  const int64_t rows = a.numel() / K;
  dispatch<Types<float, Float16, BFloat16>>(ctx, a.dtype(), "A", [&](auto tag) {
    using S = typename decltype(tag)::type;
    Tensor& y = ctx.allocate_output(0, a.dtype(), out_shape);
    const S* pa = data_as<S>(a);
    S* py = data_as<S>(y);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t n = 0; n < N; ++n) {
        double acc = bias ? element_as_double(*bias, n) : 0.0;
        for (int64_t k = 0; k < K; ++k) acc += static_cast<double>(load(pa[r * K + k])) * wt[n * K + k];
        py[r * N + n] = store_double<S>(acc);
      }
  });
}

}  // namespace

void register_quant_matmul(KernelRegistry& r) {
  r.add("", "MatMulInteger", matmul_integer_kernel);
  r.add("", "QLinearMatMul", qlinear_matmul_kernel);
  r.add("", "ConvInteger", conv_integer_kernel);
  r.add("com.microsoft", "MatMulNBits", matmul_nbits_kernel);
}

}  // namespace octet::ref
