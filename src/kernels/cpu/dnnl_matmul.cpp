// The MatMul, Gemm and octet.MatMulBias kernels: each run turns the concrete tensors into
// a MatMulProblem (oneDNN's view of the product) or, when oneDNN cannot take them, hands
// the node to its reference kernel. See dnnl_matmul.h.
#include "kernels/cpu/dnnl_matmul.h"

#include <cmath>
#include <numeric>

#include "kernels/cpu/cpu_data_movement.h"
#include "kernels/cpu/dnnl_common.h"

namespace octet::dnnl_cpu {
namespace {

using dims = dnnl::memory::dims;

// oneDNN's limit on tensor rank (DNNL_MAX_NDIMS).
constexpr int64_t kMaxRank = DNNL_MAX_NDIMS;

bool is_f32(const Tensor* t) { return t && t->dtype() == DType::Float32; }

// `r` right-aligned against `out` and padded with leading 1s, when it broadcasts into
// `out` without changing it (a residual may not grow the output); nullopt otherwise.
std::optional<std::vector<int64_t>> broadcast_into(const std::vector<int64_t>& r, const std::vector<int64_t>& out) {
  if (r.size() > out.size()) return std::nullopt;
  std::vector<int64_t> padded(out.size() - r.size(), 1);
  padded.insert(padded.end(), r.begin(), r.end());
  for (size_t i = 0; i < out.size(); ++i)
    if (padded[i] != out[i] && padded[i] != 1) return std::nullopt;
  return padded;
}

// B's shape: the state's when it owns B (the graph's copy may be gone), else the input's;
// nullptr when B is not float32.
const std::vector<int64_t>* b_shape(const KernelContext& ctx, const MatMulState& state) {
  if (state.owns_input(1)) return &state.packed_b_shape();
  const Tensor& b = ctx.input(1);
  return is_f32(&b) ? &b.shape() : nullptr;
}

// MatMul and octet.MatMulBias. A 2-D B flattens A to [M, K] (the Linear layer); any
// other B runs as a batch of equal-rank operands with numpy broadcasting.
std::optional<MatMulProblem> matmul_problem(const KernelContext& ctx, const MatMulState& state) {
  const MatMulSpec& spec = state.spec();
  const Tensor& a = ctx.input(0);
  const std::vector<int64_t>* b = b_shape(ctx, state);
  if (!is_f32(&a) || !b || a.rank() == 0 || b->empty() || a.numel() == 0 || shape_numel(*b) == 0)
    return std::nullopt;
  MatMulProblem p;
  bool flattened = false;
  if (b->size() == 2) {
    const int64_t k = (*b)[0], n = (*b)[1];
    if (a.shape().back() != k) return std::nullopt;
    p.src = {a.numel() / k, k};
    p.wei = {k, n};
    p.dst = {p.src[0], n};
    p.out_shape.assign(a.shape().begin(), a.shape().end() - 1);
    p.out_shape.push_back(n);
    flattened = true;
  } else {
    std::vector<int64_t> as = a.shape(), bs = *b;
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    const size_t rank = std::max(as.size(), bs.size());
    if (static_cast<int64_t>(rank) > kMaxRank) return std::nullopt;
    as.insert(as.begin(), rank - as.size(), 1);
    bs.insert(bs.begin(), rank - bs.size(), 1);
    if (as[rank - 1] != bs[rank - 2]) return std::nullopt;
    p.src = dims(as.begin(), as.end());
    p.wei = dims(bs.begin(), bs.end());
    for (size_t d = 0; d + 2 < rank; ++d) {
      if (as[d] != bs[d] && as[d] != 1 && bs[d] != 1) return std::nullopt;
      p.dst.push_back(std::max(as[d], bs[d]));
    }
    p.out_shape.assign(p.dst.begin(), p.dst.end());
    if (a.rank() > 1) p.out_shape.push_back(as[rank - 2]);
    if (b->size() > 1) p.out_shape.push_back(bs[rank - 1]);
    p.dst.push_back(as[rank - 2]);
    p.dst.push_back(bs[rank - 1]);
  }
  const int64_t n = p.dst.back();

  if (spec.bias_input >= 0) {
    const Tensor& bias = ctx.input(spec.bias_input);
    if (!is_f32(&bias) || bias.rank() != 1 || bias.shape()[0] != n) return std::nullopt;
    p.bias = dims(p.dst.size(), 1);
    p.bias.back() = n;
    p.bias_from = spec.bias_input;
  }
  const Tensor* r = spec.residual_input >= 0 ? ctx.optional_input(spec.residual_input) : nullptr;
  if (r) {
    auto padded = broadcast_into(r->shape(), p.out_shape);
    if (!is_f32(r) || !padded || r->numel() == 0) return std::nullopt;
    if (flattened) {
      // [M, N] covers a residual of the output's shape or one that repeats over all rows.
      bool rows_broadcast = true;
      for (size_t i = 0; i + 1 < padded->size(); ++i) rows_broadcast &= (*padded)[i] == 1;
      if (*padded == p.out_shape) p.addend = p.dst;
      else if (rows_broadcast) p.addend = {1, padded->back()};
      else return std::nullopt;
    } else {
      if (p.out_shape.size() != p.dst.size()) return std::nullopt;  // a 1-D operand dropped a dim
      p.addend = dims(padded->begin(), padded->end());
    }
    p.addend_from = spec.residual_input;
  }
  return p;
}

// Gemm: 2-D operands, transposes as strides, C as bias or as an added tensor.
std::optional<MatMulProblem> gemm_problem(const KernelContext& ctx, const MatMulState& state) {
  const MatMulSpec& spec = state.spec();
  const Tensor& a = ctx.input(0);
  const std::vector<int64_t>* b = b_shape(ctx, state);
  if (!is_f32(&a) || !b || a.rank() != 2 || b->size() != 2 || a.numel() == 0 || shape_numel(*b) == 0)
    return std::nullopt;
  const int64_t m = spec.trans_a ? a.shape()[1] : a.shape()[0], k = spec.trans_a ? a.shape()[0] : a.shape()[1];
  const int64_t kb = spec.trans_b ? (*b)[1] : (*b)[0], n = spec.trans_b ? (*b)[0] : (*b)[1];
  if (k != kb) return std::nullopt;
  MatMulProblem p;
  p.src = {m, k};
  if (spec.trans_a) p.src_strides = {1, m};
  p.wei = {k, n};
  if (spec.trans_b) p.wei_strides = {1, k};
  p.dst = {m, n};
  p.out_shape = {m, n};
  const Tensor* c = spec.c_input >= 0 ? ctx.optional_input(spec.c_input) : nullptr;
  if (c) {
    // Checked even when beta = 0, where C is not read: the reference kernel rejects it too.
    if (!is_f32(c) || c->rank() > 2 || c->numel() == 0) return std::nullopt;
    const int64_t cm = c->rank() == 2 ? c->shape()[0] : 1, cn = c->rank() >= 1 ? c->shape().back() : 1;
    if ((cm != m && cm != 1) || (cn != n && cn != 1)) return std::nullopt;
    if (spec.beta == 0.0f) return p;  // checked, never read
    if (spec.alpha == 1.0f && spec.beta == 1.0f && cm == 1) {
      p.bias = {1, cn};  // the common Linear form: one bias row
      p.bias_from = spec.c_input;
    } else {
      p.addend = {cm, cn};
      p.addend_scale = spec.beta;
      p.addend_from = spec.c_input;
    }
  }
  return p;
}

// The reference kernel on the same inputs; B unpacked from the state when the state owns
// it (the graph's copy may have been released).
void run_reference(KernelContext& ctx, const MatMulState& state) {
  state.count_reference_run();
  if (!state.owns_input(1)) return run_reference_kernel(ctx);
  const Tensor b = state.unpack_b();
  run_reference_kernel(ctx, 1, &b);
}

// octet.MatMulBias with `split`: the parts, allocated, as run_gemv's destinations.
std::vector<GemvPart> allocate_parts(KernelContext& ctx, const std::vector<int64_t>& split, std::vector<int64_t> shape) {
  std::vector<GemvPart> parts;
  int64_t col0 = 0;
  for (size_t i = 0; i < split.size(); ++i) {
    shape.back() = split[i];
    parts.push_back({ctx.allocate_output_uninitialized(i, DType::Float32, shape).mutable_data<float>(), col0, split[i]});
    col0 += split[i];
  }
  return parts;
}

void matmul_kernel(KernelContext& ctx) {
  const auto& state = ctx.state_as<MatMulState>();
  const std::vector<int64_t>& split = state.spec().split;
  std::optional<MatMulProblem> p = state.spec().gemm ? gemm_problem(ctx, state) : matmul_problem(ctx, state);
  if (p && !split.empty() && p->dst.back() != std::accumulate(split.begin(), split.end(), int64_t{0}))
    p.reset();  // parts that do not cover N: the reference kernel reports it
  if (p && gemv_applies(state, *p)) {  // decode: dnnl_matmul_gemv.cpp
    if (!split.empty()) return run_gemv(ctx, state, *p, allocate_parts(ctx, split, p->out_shape));
    Tensor& out = ctx.allocate_output_uninitialized(0, DType::Float32, p->out_shape);
    return run_gemv(ctx, state, *p, {GemvPart{out.mutable_data<float>(), 0, p->dst.back()}});
  }
  if (p && panel_gemm_applies(state, *p)) {  // more rows: dnnl_matmul_panel_gemm.cpp
    if (!split.empty()) return run_panel_gemm(ctx, state, *p, allocate_parts(ctx, split, p->out_shape));
    Tensor& out = ctx.allocate_output_uninitialized(0, DType::Float32, p->out_shape);
    return run_panel_gemm(ctx, state, *p, {GemvPart{out.mutable_data<float>(), 0, p->dst.back()}});
  }
  std::shared_ptr<const MatMulState::Entry> entry = p ? state.primitive_for(*p, ctx.threads()) : nullptr;
  if (!entry) return run_reference(ctx, state);
  if (split.empty()) {
    Tensor& out = ctx.allocate_output_uninitialized(0, DType::Float32, p->out_shape);
    return state.execute(ctx, *p, *entry, out);
  }
  // Prefill with `split`: oneDNN writes Y whole, its rows then copied into the parts (what
  // the Split node this replaced did at more than one row).
  Tensor y(DType::Float32, p->out_shape);
  state.execute(ctx, *p, *entry, y);
  const int64_t n = p->dst.back(), rows = y.numel() / n;
  for (const GemvPart& part : allocate_parts(ctx, split, p->out_shape))
    cpu::copy_columns(ctx, y.data<float>(), rows, n, part.col0, part.width, part.y);
}

// ---- session creation: which nodes the kernels take ----

bool is_f32(const Value* v) { return v && v->type.dtype == DType::Float32; }

bool make_state(const Node& node, const MatMulSpec& spec, std::unique_ptr<KernelState>& state) {
  try {
    state = std::make_unique<MatMulState>(node, spec);
    return true;
  } catch (const dnnl::error&) {
    return false;  // oneDNN could not even prepack: leave the node to the reference kernel
  }
}

bool too_many_dims(const Value* v) { return v->type.rank() > kMaxRank; }

bool prepare_matmul(const Node& node, std::unique_ptr<KernelState>& state) {
  if (!is_f32(node.input(0)) || !is_f32(node.input(1))) return false;
  if (too_many_dims(node.input(0)) || too_many_dims(node.input(1))) return false;
  return make_state(node, MatMulSpec{}, state);
}

bool prepare_matmul_bias(const Node& node, std::unique_ptr<KernelState>& state) {
  if (!is_f32(node.input(0)) || !is_f32(node.input(1))) return false;
  if (node.input(2) && !is_f32(node.input(2))) return false;
  if (too_many_dims(node.input(0)) || too_many_dims(node.input(1))) return false;
  MatMulSpec spec;
  if (node.input(2)) spec.bias_input = 2;  // absent: a bias-free Linear layer with a residual
  const std::string act = node.attr_string("activation", "");
  if (act == "gelu") spec.activation = Activation::GeluErf;
  else if (act == "gelu_tanh") spec.activation = Activation::GeluTanh;
  else if (!act.empty()) return false;  // the reference kernel reports it
  if (node.input(3)) {
    if (!is_f32(node.input(3))) return false;
    spec.residual_input = 3;
  }
  spec.split = node.attr_ints("split", {});
  if (spec.split.empty() ? node.outputs().size() != 1 : spec.split.size() != node.outputs().size()) return false;
  for (int64_t part : spec.split)
    if (part <= 0) return false;  // the reference kernel reports it
  for (const Value* v : node.outputs())
    if (!v) return false;  // a part nobody reads: left to the reference kernel
  return make_state(node, spec, state);
}

bool prepare_gemm(const Node& node, std::unique_ptr<KernelState>& state) {
  if (!is_f32(node.input(0)) || !is_f32(node.input(1))) return false;
  MatMulSpec spec;
  spec.gemm = true;
  spec.trans_a = node.attr_int("transA", 0) != 0;
  spec.trans_b = node.attr_int("transB", 0) != 0;
  spec.alpha = node.attr_float("alpha", 1.0f);
  spec.beta = node.attr_float("beta", 1.0f);
  if (!std::isfinite(spec.alpha) || !std::isfinite(spec.beta)) return false;
  if (node.input(2)) {
    if (!is_f32(node.input(2))) return false;
    // beta * C runs as beta * (alpha / beta * acc + C) (see MatMulState::attributes).
    if (spec.beta != 0.0f && !std::isfinite(spec.alpha / spec.beta)) return false;
    spec.c_input = 2;
  }
  return make_state(node, spec, state);
}

}  // namespace

void register_matmul(KernelRegistry& r) {
  r.add("", "MatMul", KernelDef{matmul_kernel, prepare_matmul});
  r.add("", "Gemm", KernelDef{matmul_kernel, prepare_gemm});
  r.add("octet", "MatMulBias", KernelDef{matmul_kernel, prepare_matmul_bias});
}

}  // namespace octet::dnnl_cpu
