// QMatMulState: what a QMatMul node fixes at session creation (B packed, scales, the
// folded bias), the quantization pass, the epilogue and the fused primitive. See
// dnnl_qmatmul.h for which path runs when.
#include <cmath>

#include "kernels/cpu/dnnl_qmatmul.h"
#include "kernels/cpu/quant_ops.h"
#include "kernels/cpu/thread_scratch.h"
#include "kernels/cpu/vec_ops.h"

namespace octet::dnnl_cpu {
namespace {

// Input i's data when it is a constant the session cannot override.
const Tensor* constant_input(const Node& node, size_t i) {
  const Value* v = node.input(i);
  return v && v->constant() && !v->is_graph_input() ? v->constant().get() : nullptr;
}

bool one_element(const Tensor& t) { return t.numel() == 1 && t.rank() <= 1; }

}  // namespace

std::unique_ptr<QMatMulState> QMatMulState::create(const Node& node) {
  std::unique_ptr<QMatMulState> s(new QMatMulState());
  const Value* a = node.input(0);
  if (!a || node.inputs().size() > 16) return nullptr;
  // A already quantized (octet.LayerNormQuantize wrote it): the static parameters below
  // must describe it (a_zero_point of A's type, no a_channel_scale).
  s->quantized_a_ = a->type.dtype == DType::UInt8 || a->type.dtype == DType::Int8;
  if (!s->quantized_a_ && a->type.dtype != DType::Float32) return nullptr;
  // Quantized per row (an int32 a_zero_point; LayerNormQuantize with dynamic_type): the
  // run's a_scale / a_zero_point tensors are the rows' parameters, so it runs as a dynamic
  // node (raw sums + the per-row epilogue) without a quantization pass.
  s->per_row_a_ = s->quantized_a_ && node.input(2) && node.input(2)->type.dtype == DType::Int32;
  if (s->per_row_a_ && (a->type.dtype != DType::UInt8 || !node.input(1) || node.input(8) ||
                        node.input(1)->type.dtype != DType::Float32))
    return nullptr;
  if (s->quantized_a_ && !s->per_row_a_ &&
      (!node.input(1) || node.input(8) || (node.input(2) ? node.input(2)->type.dtype : DType::UInt8) != a->type.dtype))
    return nullptr;
  const Tensor* b = constant_input(node, 3);
  if (!b || b->dtype() != DType::Int8 || b->rank() != 2) return nullptr;
  const int64_t k = b->shape()[0], n = b->shape()[1];
  if (k > kMaxInt8K) return nullptr;  // sums could leave int32

  // Weights: b_scale per tensor or per column; a zero point must be 0 (the folded bias
  // and the epilogue assume symmetric weights; the quantizer writes nothing else).
  const Tensor* sb = constant_input(node, 4);
  if (!sb || sb->dtype() != DType::Float32 || sb->rank() > 1 || (sb->numel() != 1 && sb->numel() != n)) return nullptr;
  s->per_column_ = sb->numel() != 1;
  for (int64_t i = 0; i < n; ++i) s->sb_.push_back(sb->data<float>()[s->per_column_ ? i : 0]);
  if (node.input(5)) {
    const Tensor* zb = constant_input(node, 5);
    if (!zb || zb->dtype() != DType::Int8 || zb->numel() != sb->numel()) return nullptr;
    for (int64_t i = 0; i < zb->numel(); ++i)
      if (zb->data<int8_t>()[i] != 0) return nullptr;
  }
  if (node.input(6)) {
    const Tensor* bias = constant_input(node, 6);
    if (!bias || bias->dtype() != DType::Float32 || bias->rank() != 1 || bias->numel() != n) return nullptr;
    s->bias_.assign(bias->data<float>(), bias->data<float>() + n);
  }
  if (node.input(7)) {
    if (node.input(7)->type.dtype != DType::Float32) return nullptr;
    s->residual_ = true;
  }
  if (node.input(8)) {
    const Tensor* c = constant_input(node, 8);
    if (!c || c->dtype() != DType::Float32 || c->rank() != 1 || c->numel() != k) return nullptr;
    s->channel_scale_.assign(c->data<float>(), c->data<float>() + k);
  }
  if (node.input(9)) {
    const Tensor* os = constant_input(node, 9);
    if (!os || os->dtype() != DType::Float32 || os->rank() > 1 || (os->numel() != 1 && os->numel() != n))
      return nullptr;
    for (int64_t i = 0; i < n; ++i) s->out_scale_.push_back(os->data<float>()[os->numel() == 1 ? 0 : i]);
  }
  if (node.input(10)) {  // Y quantized for the QMatMuls that read it
    const Tensor* ys = constant_input(node, 10);
    if (!ys || ys->dtype() != DType::Float32 || !one_element(*ys)) return nullptr;
    s->y_scale_ = ys->data<float>()[0];
    s->quantized_y_ = true;
    if (node.input(11)) {
      const Tensor* yz = constant_input(node, 11);
      if (!yz || !one_element(*yz) || (yz->dtype() != DType::UInt8 && yz->dtype() != DType::Int8)) return nullptr;
      s->int8_y_ = yz->dtype() == DType::Int8;
      s->y_zero_ = s->int8_y_ ? yz->data<int8_t>()[0] : yz->data<uint8_t>()[0];
    }
  } else if (node.input(11)) {
    return nullptr;
  }
  if (node.has_attr("y_dynamic_type")) {  // Y quantized per row for per-token readers
    const std::string dyn = node.attr_string("y_dynamic_type", "uint8");
    if ((dyn != "uint8" && dyn != "int8") || s->quantized_y_ || node.outputs().size() != 3) return nullptr;
    s->per_row_y_ = true;
    s->int8_row_y_ = dyn == "int8";
  } else if (node.has_attr("norm_dynamic_type")) {  // the LayerNorm epilogue (see the header)
    const std::string dyn = node.attr_string("norm_dynamic_type", "uint8");
    if ((dyn != "uint8" && dyn != "int8") || s->quantized_y_ || node.outputs().size() < 4 ||
        node.outputs().size() > 5)
      return nullptr;
    s->norm_ = true;
    s->norm_int8_ = dyn == "int8";
    s->norm_eps_ = node.attr_float("epsilon", 1e-5f);
    const auto param = [&](size_t i, std::vector<float>& to) {
      if (!node.input(i)) return true;
      const Tensor* t = constant_input(node, i);
      if (!t || t->dtype() != DType::Float32 || t->rank() != 1 || t->numel() != n) return false;
      to.assign(t->data<float>(), t->data<float>() + n);
      return true;
    };
    if (!node.input(12) || !param(12, s->norm_g_) || !param(13, s->norm_b_) || !param(14, s->norm_qg_) ||
        !param(15, s->norm_qb_) || (node.input(15) && !node.input(14)))
      return nullptr;
    if (!node.input(14)) {  // Q from the same parameters as the normalized Y
      s->norm_qg_ = s->norm_g_;
      s->norm_qb_ = s->norm_b_;
    }
  } else if (node.outputs().size() != 1) {
    return nullptr;
  }
  for (size_t i = 12; i < node.inputs().size(); ++i)
    if (node.input(i) && !s->norm_) return nullptr;
  const std::string act = node.attr_string("activation", "");
  if (act == "gelu") s->activation_ = Activation::GeluErf;
  else if (act == "gelu_tanh") s->activation_ = Activation::GeluTanh;
  else if (!act.empty()) return nullptr;  // the reference kernel reports it

  // Activations: static parameters are constants; dynamic nodes name their type.
  s->static_ = node.input(1) != nullptr && !s->per_row_a_;
  if (s->per_row_a_) {
    // nothing fixed: each run reads the rows' parameters
  } else if (s->static_) {
    const Tensor* sa = constant_input(node, 1);
    if (!sa || sa->dtype() != DType::Float32 || !one_element(*sa) || node.has_attr("dynamic_type")) return nullptr;
    s->sa_ = sa->data<float>()[0];
    if (node.input(2)) {
      const Tensor* za = constant_input(node, 2);
      if (!za || !one_element(*za) || (za->dtype() != DType::UInt8 && za->dtype() != DType::Int8)) return nullptr;
      s->int8_activation_ = za->dtype() == DType::Int8;
      s->za_ = s->int8_activation_ ? za->data<int8_t>()[0] + 128 : za->data<uint8_t>()[0];
    }
  } else {
    if (node.input(2)) return nullptr;
    const std::string dyn = node.attr_string("dynamic_type", "uint8");
    if (dyn != "uint8" && dyn != "int8") return nullptr;
    s->int8_activation_ = dyn == "int8";
  }

  s->gemm_ = std::make_unique<Int8Gemm>(b->data<int8_t>(), k, n);

  // The fused static primitive computes scale * (acc + bias') (oneDNN 2.6 adds the bias
  // before the output scales), so bias' = bias / scale - za colsum needs every scale
  // finite and nonzero.
  if (s->static_ && int8_gemm_exact()) {
    bool ok = true;
    for (int64_t i = 0; i < n && ok; ++i) {
      const float scale = s->sa_ * s->sb_[i];
      const float folded = (s->bias_.empty() ? 0.0f : s->bias_[i] / scale) -
                           static_cast<float>(s->za_) * static_cast<float>(s->gemm_->colsum()[i]);
      ok = std::isfinite(scale) && scale != 0 && std::isfinite(folded);
      s->scales_.push_back(scale);
      s->bias_acc_.push_back(folded);
    }
    s->fused_ = ok && !s->norm_;
    if (!s->per_column_) s->scales_.resize(1);
  }
  return s;
}

void QMatMulState::quantize_rows(const float* a, int64_t begin, int64_t end, uint8_t* qa, float* sa,
                                 int32_t* za) const {
  const cpu::QuantTable& q = cpu::quant_ops();
  const int64_t k = gemm_->k();
  // A smoothing Mul folded in (a_channel_scale): each row is scaled in a buffer that stays
  // in cache, instead of a whole-tensor pass before the matmul.
  float* scaled = channel_scale_.empty() ? nullptr : cpu::thread_scratch_as<float>(cpu::Scratch::ScaledA, k);
  for (int64_t m = begin; m < end; ++m) {
    const float* x = a + m * k;
    if (!channel_scale_.empty()) {
      cpu::binary(cpu::BinaryOp::Mul, x, channel_scale_.data(), scaled, k);
      x = scaled;
    }
    cpu::RowParams p{sa_, za_};
    if (static_) q.quantize(x, k, p.scale, p.zero_point, 0, 255, qa + m * k);
    else p = cpu::quantize_row_dynamic(q, x, k, int8_activation_, qa + m * k);
    sa[m] = p.scale;
    za[m] = p.zero_point;
  }
}

void QMatMulState::shift_rows(const int8_t* a, int64_t begin, int64_t end, uint8_t* qa, float* sa,
                              int32_t* za) const {
  const int64_t k = gemm_->k();
  for (int64_t m = begin; m < end; ++m) {
    for (int64_t i = 0; i < k; ++i) qa[m * k + i] = static_cast<uint8_t>(static_cast<uint8_t>(a[m * k + i]) ^ 0x80u);
    sa[m] = sa_;
    za[m] = za_;
  }
}

void QMatMulState::epilogue_rows(const int32_t* sums, const float* sa, const int32_t* za, const float* residual,
                                 int64_t begin, int64_t end, const Output& out) const {
  const cpu::QuantTable& q = cpu::quant_ops();
  const int64_t n = gemm_->n();
  // A quantized Y (or one nobody reads): each float row is formed in a buffer that stays
  // in cache, then quantized (normalized).
  const bool buffered = quantized_y_ || per_row_y_ || !out.y;
  float* buffer = buffered ? cpu::thread_scratch_as<float>(cpu::Scratch::EpilogueRow, n) : nullptr;
  float* normalized = norm_ ? cpu::thread_scratch_as<float>(cpu::Scratch::EpilogueNormalized, n) : nullptr;
  const cpu::VecTable& t = cpu::vec_ops();
  // One pass per row from the sums to the finished float row (scale, bias, GeLU(erf) as the
  // fused primitive's post-op approximates it (vec_impl.h gelu_erf_fast), output_scale,
  // residual): the same operations as those row kernels in turn, without storing and
  // reloading the row between them. A uint8 per-row Y gets the row's range on the way.
  cpu::EpilogueRow e{nullptr, gemm_->colsum().data(), 0, 0, sb_.data()};
  e.bias = bias_.empty() ? nullptr : bias_.data();
  e.activation = activation_ == Activation::GeluErf ? 1 : activation_ == Activation::GeluTanh ? 2 : 0;
  e.out_scale = out_scale_.empty() ? nullptr : out_scale_.data();
  const bool row_range = per_row_y_ && !int8_row_y_;
  for (int64_t m = begin; m < end; ++m) {
    float* row = buffered ? buffer : static_cast<float*>(out.y) + m * n;
    e.acc = sums + (m - begin) * n;
    e.za = za[m];
    e.row_scale = sa[m];
    e.residual = residual ? residual + m * n : nullptr;
    float mn = 0, mx = 0;
    q.epilogue_row(e, row, n, row_range ? &mn : nullptr, row_range ? &mx : nullptr);
    if (norm_) {
      // LayerNormQuantize's per-row mode on the finished row: the same numbers as that node
      // reading Y. One pass of statistics (norm_row2) gives the quantized form (norm_row's
      // row), the float output when it is read, and a uint8 Q's range on the way (no
      // min_max pass over it).
      const cpu::NormOutput quantized{norm_qg_.data(), norm_qb_.empty() ? nullptr : norm_qb_.data(), normalized};
      const cpu::NormOutput plain{norm_g_.data(), norm_b_.empty() ? nullptr : norm_b_.data(),
                                  out.norm_y ? out.norm_y + m * n : nullptr};
      float nmn = 0, nmx = 0;
      t.norm_row2(row, n, norm_eps_, quantized, plain, norm_int8_ ? nullptr : &nmn, norm_int8_ ? nullptr : &nmx);
      const cpu::RowParams p = norm_int8_ ? cpu::quantize_row_dynamic(q, normalized, n, true, out.norm_q + m * n)
                                          : cpu::quantize_row_in_range(q, normalized, n, nmn, nmx, out.norm_q + m * n);
      out.norm_scale[m] = p.scale;
      out.norm_zero[m] = p.zero_point;
    }
    if (quantized_y_) {
      uint8_t* qy = static_cast<uint8_t*>(out.y) + m * n;
      q.quantize(row, n, y_scale_, y_zero_, int8_y_ ? -128 : 0, int8_y_ ? 127 : 255, qy);
    } else if (per_row_y_) {
      uint8_t* qy = static_cast<uint8_t*>(out.y) + m * n;
      const cpu::RowParams p = row_range ? cpu::quantize_row_in_range(q, row, n, mn, mx, qy)
                                         : cpu::quantize_row_dynamic(q, row, n, int8_row_y_, qy);
      out.row_scale[m] = p.scale;
      out.row_zero[m] = p.zero_point;
    }
  }
}

void QMatMulState::quantize_output_rows(const float* y, int64_t begin, int64_t end, const Output& out) const {
  const cpu::QuantTable& q = cpu::quant_ops();
  const int64_t n = gemm_->n();
  for (int64_t m = begin; m < end; ++m) {
    const cpu::RowParams p =
        cpu::quantize_row_dynamic(q, y + m * n, n, int8_row_y_, static_cast<uint8_t*>(out.y) + m * n);
    out.row_scale[m] = p.scale;
    out.row_zero[m] = p.zero_point;
  }
}

std::shared_ptr<const Int8Gemm::Entry> QMatMulState::fused_primitive(int64_t m, int threads) const {
  auto entry = fused_cache_.get({m, threads}, [&] {
    dnnl::primitive_attr attr;
    attr.set_output_scales(per_column_ ? 1 << 1 : 0, scales_);
    dnnl::post_ops ops;
    if (activation_ == Activation::GeluErf) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_erf, 0, 0);
    if (activation_ == Activation::GeluTanh) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_tanh, 0, 0);
    if (!out_scale_.empty()) ops.append_binary(dnnl::algorithm::binary_mul, f32_desc({1, gemm_->n()}));
    if (residual_) ops.append_binary(dnnl::algorithm::binary_add, f32_desc({m, gemm_->n()}));
    // A quantized Y, as QuantizeLinear computes it: y / y_scale (a float32 division, not
    // a multiply by the reciprocal), rounded half to even, + y_zero_point (exact on
    // integers), saturated by the conversion to the 8-bit dst. The same numbers as the
    // float output quantized by the reader.
    if (quantized_y_) {
      ops.append_binary(dnnl::algorithm::binary_div, f32_desc({1, 1}));
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_round, 0.0f, 0.0f);
      if (y_zero_ != 0) ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, 1.0f, static_cast<float>(y_zero_));
    }
    attr.set_post_ops(ops);
    return gemm_->create(m, y_type(), attr, /*with_bias=*/true);
  });
  return entry->usable ? entry : nullptr;
}

dnnl::memory::data_type QMatMulState::y_type() const {
  using dt = dnnl::memory::data_type;
  return !quantized_y_ ? dt::f32 : int8_y_ ? dt::s8 : dt::u8;
}

void QMatMulState::run_fused(const KernelContext& ctx, const Int8Gemm::Entry& entry, const uint8_t* qa, int64_t m,
                             const float* residual, void* y) const {
  const int64_t n = gemm_->n();
  std::unordered_map<int, dnnl::memory> args;
  args[DNNL_ARG_DST] = wrap(dnnl::memory::desc({m, n}, y_type(), dnnl::memory::format_tag::ab), y);
  args[DNNL_ARG_BIAS] = wrap(f32_desc({1, n}), bias_acc_.data());
  // Post-op positions: the activation (if any), output_scale (if any), the residual (if
  // any), then y_scale (a quantized Y).
  int position = activation_ != Activation::None ? 1 : 0;
  if (!out_scale_.empty())
    args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(position++) | DNNL_ARG_SRC_1] = wrap(f32_desc({1, n}), out_scale_.data());
  if (residual_) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(position++) | DNNL_ARG_SRC_1] = wrap(f32_desc({m, n}), residual);
  if (quantized_y_) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(position) | DNNL_ARG_SRC_1] = wrap(f32_desc({1, 1}), &y_scale_);
  gemm_->execute(ctx, entry, qa, m, nullptr, args);
}

std::vector<std::string> QMatMulState::implementations() const {
  std::vector<std::string> out = gemm_->implementations();
  fused_cache_.for_each([&](const Int8Gemm::Entry& e) { out.push_back(e.usable ? e.impl + (e.uses_packed ? "" : " (plain B)") : "octet reference"); });
  return out;
}

}  // namespace octet::dnnl_cpu
