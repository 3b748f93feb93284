// ai.onnx ConvInteger on the shared int8 product (dnnl_int8_gemm.h): what onnxruntime's
// quantize_dynamic writes for a Conv (DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul),
// e.g. Whisper's Conv1d stem over 3000 frames, where the reference kernel took 3.4 s.
//
// im2col + GEMM, per batch item and group:
//   A[o, (c, kpos)] = X[n, g cpg + c, o * stride - pad + kpos * dilation]   (uint8)
//   B[(c, kpos), m] = W[g mpg + m, c, kpos]                                 (int8, packed once)
// and Y[n, g mpg + m, o] = sum_k (A[o,k] - zx)(B[k,m] - zw[m]), formed from oneDNN's raw sums
// with the same zero-point algebra as MatMulInteger (dnnl_qgemm_onnx.cpp):
//   acc = S - zx colsum[m] - zw[m] (rowsum[o] - K zx)
// A padded position is written as zx itself, so it contributes (zx - zx) = 0, which is
// what the reference does (padding is zero after the zero point is subtracted). int8 X is
// shifted by +128 into uint8 and uint8 W by -128 into int8, each zero point with its operand.
// int32 arithmetic wraps like the reference's int64 -> int32 cast: bit-identical results.
//
// Taken: constant W (uint8 or int8), X uint8 or int8 of rank 3..5, x_zero_point a scalar,
// w_zero_point a scalar or one per output channel, any strides / dilations / pads /
// auto_pad / group, K = C/group x kernel size up to kMaxInt8K. Anything else (a run-time W,
// other zero-point shapes, empty tensors) runs the reference kernel.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/dnnl_int8_gemm.h"
#include "kernels/cpu/dnnl_qmatmul.h"
#include "kernels/cpu/quant_ops.h"
#include "kernels/cpu/simd_kernels.h"

namespace octet::dnnl_cpu {
namespace {

using Shape = std::vector<int64_t>;

bool is_8bit(DType t) { return t == DType::UInt8 || t == DType::Int8; }

// Rows of A built and multiplied at once: bounds the im2col buffer (rows x K bytes) for
// large images while keeping each product big enough for oneDNN.
constexpr int64_t kRowBlock = 4096;

class ConvIntegerState : public KernelState {
 public:
  DType x_type = DType::UInt8, w_type = DType::Int8;
  int64_t maps = 0, group = 1, cpg = 0, mpg = 0;  // output channels, groups, channels / maps per group
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads [begin..., end...] as given
  std::string auto_pad;
  int64_t k = 0;  // cpg x kernel size: the product's K
  std::vector<std::unique_ptr<Int8Gemm>> gemms;  // one per group, B = W_g^T [K, mpg]
  mutable std::atomic<int64_t> reference_runs{0};
};

void run_reference(KernelContext& ctx, const ConvIntegerState& state) {
  ++state.reference_runs;
  cpu::count_int8_reference_run();
  run_reference_kernel(ctx);
}

// Output spatial dims and begin pads for input spatial dims `in` (the reference's rules).
// False when auto_pad is unknown (the reference kernel says so).
bool geometry(const ConvIntegerState& s, const Shape& in, Shape& out, std::vector<int64_t>& pad_begin) {
  const size_t sp = in.size();
  out.assign(sp, 0);
  pad_begin.assign(sp, 0);
  for (size_t d = 0; d < sp; ++d) {
    const int64_t span = s.dilations[d] * (s.kernel[d] - 1) + 1;
    if (s.auto_pad == "SAME_UPPER" || s.auto_pad == "SAME_LOWER") {
      out[d] = (in[d] + s.strides[d] - 1) / s.strides[d];
      const int64_t total = std::max<int64_t>(0, (out[d] - 1) * s.strides[d] + span - in[d]);
      pad_begin[d] = s.auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (s.auto_pad == "VALID" || s.auto_pad == "NOTSET") {
      const bool valid = s.auto_pad == "VALID";
      pad_begin[d] = valid ? 0 : s.pads[d];
      const int64_t padded = in[d] + (valid ? 0 : s.pads[d] + s.pads[d + sp]);
      out[d] = padded < span ? 0 : (padded - span) / s.strides[d] + 1;
    } else {
      return false;
    }
  }
  return true;
}

// Rows [o0, o1) of A for image `x` (this group's cpg channels, uint8 after the shift).
void im2col(const ConvIntegerState& s, const uint8_t* x, uint8_t flip, uint8_t zx, const Shape& in,
            const Shape& out, const std::vector<int64_t>& pad_begin, int64_t o0, int64_t o1, uint8_t* a) {
  const size_t sp = in.size();
  const int64_t in_size = shape_numel(in), k_size = shape_numel(s.kernel);
  std::vector<int64_t> opos(sp), kpos(sp), base(sp);
  for (int64_t o = o0; o < o1; ++o) {
    int64_t rest = o;
    for (size_t d = sp; d-- > 0;) {
      opos[d] = rest % out[d];
      rest /= out[d];
      base[d] = opos[d] * s.strides[d] - pad_begin[d];
    }
    uint8_t* row = a + (o - o0) * s.k;
    for (int64_t kk = 0; kk < k_size; ++kk) {
      int64_t r = kk, offset = 0;
      bool inside = true;
      for (size_t d = sp; d-- > 0;) {
        kpos[d] = r % s.kernel[d];
        r /= s.kernel[d];
      }
      for (size_t d = 0; d < sp; ++d) {
        const int64_t p = base[d] + kpos[d] * s.dilations[d];
        inside &= p >= 0 && p < in[d];
        offset = offset * in[d] + p;
      }
      if (!inside) {
        for (int64_t c = 0; c < s.cpg; ++c) row[c * k_size + kk] = zx;
      } else {
        for (int64_t c = 0; c < s.cpg; ++c) row[c * k_size + kk] = x[c * in_size + offset] ^ flip;
      }
    }
  }
}

void conv_integer_kernel(KernelContext& ctx) {
  const auto& s = ctx.state_as<ConvIntegerState>();
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const size_t sp = s.kernel.size();
  if (x.dtype() != s.x_type || w.dtype() != s.w_type || x.rank() != static_cast<int64_t>(sp) + 2 ||
      x.shape()[1] != s.cpg * s.group || x.numel() == 0)
    return run_reference(ctx, s);
  const Tensor* xz = ctx.optional_input(2);
  const Tensor* wz = ctx.optional_input(3);
  if ((xz && (xz->dtype() != s.x_type || xz->numel() != 1)) ||
      (wz && (wz->dtype() != s.w_type || (wz->numel() != 1 && !(wz->rank() == 1 && wz->numel() == s.maps)))))
    return run_reference(ctx, s);
  const Shape in(x.shape().begin() + 2, x.shape().end());
  Shape out;
  std::vector<int64_t> pad_begin;
  if (!geometry(s, in, out, pad_begin)) return run_reference(ctx, s);
  const int64_t batch = x.shape()[0], o_size = shape_numel(out), in_size = shape_numel(in);
  if (o_size == 0) return run_reference(ctx, s);

  // The integer domain: X as uint8, W as int8, each zero point shifted with its operand.
  const uint8_t flip = s.x_type == DType::Int8 ? 0x80 : 0;
  const auto zp_value = [](const Tensor* t, int64_t i) -> int32_t {
    if (!t) return 0;
    const int64_t j = t->numel() == 1 ? 0 : i;
    return t->dtype() == DType::Int8 ? t->data<int8_t>()[j] : t->data<uint8_t>()[j];
  };
  const uint8_t zx = static_cast<uint8_t>(static_cast<uint8_t>(zp_value(xz, 0)) ^ flip);
  const int32_t w_shift = s.w_type == DType::UInt8 ? -128 : 0;
  std::vector<uint32_t> zw(static_cast<size_t>(s.maps));
  bool any_zw = false;
  for (int64_t m = 0; m < s.maps; ++m) {
    zw[m] = static_cast<uint32_t>(zp_value(wz, m) + w_shift);
    any_zw |= zw[m] != 0;
  }

  Shape y_shape{batch, s.maps};
  y_shape.insert(y_shape.end(), out.begin(), out.end());
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Int32, y_shape);
  int32_t* py = y.mutable_data<int32_t>();
  const uint8_t* px = reinterpret_cast<const uint8_t*>(x.raw());  // int8 is read as bytes and flipped
  const int64_t rows_max = std::min(o_size, kRowBlock);
  uint8_t* a = thread_scratch_as<uint8_t>(Scratch::QuantizedA, rows_max * s.k);
  int32_t* acc = thread_scratch_as<int32_t>(Scratch::Sums, rows_max * s.mpg);
  std::vector<uint32_t> rowsum(static_cast<size_t>(rows_max));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t g = 0; g < s.group; ++g) {
      const uint8_t* xg = px + (n * s.cpg * s.group + g * s.cpg) * in_size;
      const Int8Gemm& gemm = *s.gemms[static_cast<size_t>(g)];
      const int32_t* colsum = gemm.colsum().data();
      for (int64_t o0 = 0; o0 < o_size; o0 += rows_max) {
        const int64_t rows = std::min(rows_max, o_size - o0);
        cpu::parallel_ranges(ctx, rows, rows * s.k, [&](int64_t r0, int64_t r1) {
          im2col(s, xg, flip, zx, in, out, pad_begin, o0 + r0, o0 + r1, a + r0 * s.k);
          if (any_zw)
            for (int64_t r = r0; r < r1; ++r) {
              uint32_t sum = 0;
              for (int64_t i = 0; i < s.k; ++i) sum += a[r * s.k + i];
              rowsum[r] = sum - static_cast<uint32_t>(s.k) * zx;
            }
        });
        if (!gemm.raw_sums(ctx, a, rows, nullptr, acc)) return run_reference(ctx, s);
        // acc [rows, mpg] -> Y[n, g mpg + m, o0 + r], corrected on the way (wrapping uint32).
        cpu::parallel_ranges(ctx, s.mpg, rows * s.mpg, [&](int64_t m0, int64_t m1) {
          for (int64_t m = m0; m < m1; ++m) {
            const uint32_t zwm = zw[g * s.mpg + m], cm = static_cast<uint32_t>(zx) * static_cast<uint32_t>(colsum[m]);
            int32_t* dst = py + ((n * s.maps + g * s.mpg + m) * o_size + o0);
            for (int64_t r = 0; r < rows; ++r) {
              uint32_t v = static_cast<uint32_t>(acc[r * s.mpg + m]) - cm;
              if (any_zw) v -= zwm * rowsum[r];
              dst[r] = static_cast<int32_t>(v);
            }
          }
        });
      }
    }
}

bool prepare_conv_integer(const Node& node, std::unique_ptr<KernelState>& out) {
  const Value* xv = node.input(0);
  const Value* wv = node.input(1);
  if (!xv || !wv || !is_8bit(xv->type.dtype) || !wv->constant() || wv->is_graph_input()) return false;
  const Tensor& w = *wv->constant();
  if (!is_8bit(w.dtype()) || w.rank() < 3 || w.rank() > 5 || w.numel() == 0) return false;
  auto s = std::make_unique<ConvIntegerState>();
  const size_t sp = static_cast<size_t>(w.rank() - 2);
  s->x_type = xv->type.dtype;
  s->w_type = w.dtype();
  s->maps = w.shape()[0];
  s->group = node.attr_int("group", 1);
  s->cpg = w.shape()[1];
  if (s->group <= 0 || s->maps % s->group != 0) return false;
  s->mpg = s->maps / s->group;
  s->kernel.assign(w.shape().begin() + 2, w.shape().end());
  if (node.has_attr("kernel_shape") && node.attr_ints("kernel_shape") != s->kernel) return false;
  s->strides = node.attr_ints("strides", std::vector<int64_t>(sp, 1));
  s->dilations = node.attr_ints("dilations", std::vector<int64_t>(sp, 1));
  s->pads = node.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  s->auto_pad = node.attr_string("auto_pad", "NOTSET");
  if (s->strides.size() != sp || s->dilations.size() != sp || s->pads.size() != 2 * sp) return false;
  for (size_t d = 0; d < sp; ++d)
    if (s->strides[d] <= 0 || s->dilations[d] <= 0 || s->pads[d] < 0 || s->pads[d + sp] < 0) return false;
  const int64_t k_size = shape_numel(s->kernel);
  s->k = s->cpg * k_size;
  if (s->k > kMaxInt8K) return false;
  // B_g[(c, kpos), m] = W[g mpg + m, c, kpos]: W's rows of this group, transposed, as int8.
  const uint8_t flip = s->w_type == DType::UInt8 ? 0x80 : 0;
  const uint8_t* pw = reinterpret_cast<const uint8_t*>(w.raw());
  std::vector<int8_t> b(static_cast<size_t>(s->k * s->mpg));
  try {
    for (int64_t g = 0; g < s->group; ++g) {
      for (int64_t m = 0; m < s->mpg; ++m)
        for (int64_t i = 0; i < s->k; ++i)
          b[i * s->mpg + m] = static_cast<int8_t>(pw[(g * s->mpg + m) * s->k + i] ^ flip);
      s->gemms.push_back(std::make_unique<Int8Gemm>(b.data(), s->k, s->mpg));
    }
  } catch (const dnnl::error&) {
    return false;
  }
  out = std::move(s);
  return true;
}

}  // namespace

void register_conv_integer(KernelRegistry& r) {
  r.add("", "ConvInteger", KernelDef{conv_integer_kernel, prepare_conv_integer});
}

}  // namespace octet::dnnl_cpu
