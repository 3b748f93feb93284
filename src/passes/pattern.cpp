#include "passes/pattern.h"

#include <cstring>

#include <algorithm>
#include <cmath>

namespace octet::passes {

const Tensor* constant_value(const Value* v) {
  if (!v) return nullptr;
  if (v->constant()) return v->is_graph_input() ? nullptr : v->constant().get();
  const Node* p = v->producer();
  if (p && is_op(p, "Constant") && p->find_attr("value")) {
    const Attribute* a = p->find_attr("value");
    return a->kind == Attribute::Kind::Tensor ? a->t.get() : nullptr;
  }
  return nullptr;
}

std::optional<double> scalar_constant(const Value* v) {
  const Tensor* t = constant_value(v);
  if (!t || t->numel() != 1) return std::nullopt;
  const DType d = t->dtype();
  if (d == DType::Float64) return t->data<double>()[0];
  if (d != DType::Float32 && d != DType::Float16 && d != DType::BFloat16) return std::nullopt;
  return static_cast<double>(t->to_float_vector()[0]);
}

double constant_tolerance(DType t, double rel_tol) {
  // One unit in the last place: the rounding error of a constant written in this type.
  if (t == DType::Float16) return std::max(rel_tol, std::ldexp(1.0, -10));
  if (t == DType::BFloat16) return std::max(rel_tol, std::ldexp(1.0, -7));
  return rel_tol;
}

bool is_scalar(const Value* v, double expected, const Value* other, double rel_tol) {
  auto c = scalar_constant(v);
  if (!c) return false;
  if (std::fabs(*c - expected) > constant_tolerance(v->type.dtype, rel_tol) * std::fabs(expected)) return false;
  if (!other || !other->type.has_rank() || !v->type.has_rank()) return false;
  return v->type.rank() <= other->type.rank() && v->type.dtype == other->type.dtype;
}

bool is_op(const Node* n, const char* op_type) { return n && n->domain().empty() && n->op_type() == op_type; }

bool is_add(const Node* n) {
  return is_op(n, "Add") || (is_op(n, "Sum") && n->inputs().size() == 2);
}

Node* producer(const Value* v, const char* op_type) {
  Node* p = v ? v->producer() : nullptr;
  return is_op(p, op_type) ? p : nullptr;
}

Node* sole_consumer(const Value* v) {
  if (!v || v->is_graph_output() || v->uses().size() != 1 || v->uses()[0].implicit) return nullptr;
  return v->uses()[0].node;
}

bool single_use(const Value* v) { return sole_consumer(v) != nullptr; }

bool read_by_subgraph(const Value* v) {
  for (const Use& u : v->uses())
    if (u.implicit) return true;
  return false;
}

bool can_replace(const Value* from, const Value* to) {
  if (!from || !to || from == to || read_by_subgraph(from)) return false;
  if (from->type.known() && to->type.known() && from->type.dtype != to->type.dtype) return false;
  return !(from->type.has_rank() && to->type.has_rank() && from->type.rank() != to->type.rank());
}

Value* other_input(const Node* n, const Value* one) {
  if (!n || n->inputs().size() != 2) return nullptr;
  if (n->input(0) == one) return n->input(1);
  if (n->input(1) == one) return n->input(0);
  return nullptr;
}

std::vector<int64_t> last_axis_split_sizes(const Node* split, std::optional<int64_t> n) {
  const Value* x = split->input(0);
  if (!x || !x->type.known() || !x->type.dims || x->type.dims->empty()) return {};
  const int64_t rank = static_cast<int64_t>(x->type.dims->size());
  int64_t axis = split->attr_int("axis", 0);
  if (axis < 0) axis += rank;
  if (axis != rank - 1) return {};
  const int64_t parts = static_cast<int64_t>(split->outputs().size());
  std::vector<int64_t> sizes;
  if (split->inputs().size() > 1 && split->input(1)) {
    const Tensor* t = constant_value(split->input(1));
    if (!t || t->dtype() != DType::Int64 || t->numel() != parts) return {};
    sizes.assign(t->data<int64_t>(), t->data<int64_t>() + parts);
  } else if (split->has_attr("split")) {
    sizes = split->attr_ints("split");
  } else if (n && parts > 0 && *n % parts == 0) {
    sizes.assign(static_cast<size_t>(parts), *n / parts);
  }
  if (static_cast<int64_t>(sizes.size()) != parts) return {};
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s <= 0) return {};
    total += s;
  }
  if (n && total != *n) return {};
  return sizes;
}

std::optional<int64_t> trailing_reduce_axis(const Node* reduce) {
  if (!reduce || reduce->attr_int("keepdims", 1) != 1) return std::nullopt;
  const Value* x = reduce->input(0);
  if (!x || !x->type.has_rank()) return std::nullopt;
  const int64_t rank = x->type.rank();
  std::vector<int64_t> axes;
  if (reduce->opset() != 0 && reduce->opset() < 18) {
    axes = reduce->attr_ints("axes");
  } else if (const Value* a = reduce->input(1)) {
    const Tensor* t = constant_value(a);
    if (!t || t->dtype() != DType::Int64) return std::nullopt;
    axes = t->to_int64_vector();
  }
  if (axes.empty()) return std::nullopt;  // all axes, or none with noop_with_empty_axes: not a norm
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) return std::nullopt;
    if (a < 0) a += rank;
  }
  std::sort(axes.begin(), axes.end());
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] != rank - static_cast<int64_t>(axes.size()) + static_cast<int64_t>(i)) return std::nullopt;
  return axes.front();
}

bool is_norm_param(const Value* p, const Value* x, int64_t k) {
  if (!p || !x || p->type.dtype != x->type.dtype || !p->type.dims || !x->type.dims) return false;
  const DimVector& pd = *p->type.dims;
  const DimVector& xd = *x->type.dims;
  if (pd.size() > xd.size()) return false;
  if (dims_product(pd) == Dim(1)) return true;
  // Covering every normalized axis keeps its element count the normalized size, which
  // LayerNormalization's inference checks.
  if (static_cast<int64_t>(pd.size()) < static_cast<int64_t>(xd.size()) - k) return false;
  const size_t offset = xd.size() - pd.size();
  for (size_t i = 0; i < pd.size(); ++i) {
    const int64_t axis = static_cast<int64_t>(offset + i);
    if (axis < k ? pd[i] != Dim(1) : pd[i] != xd[offset + i]) return false;
  }
  return true;
}

const Tensor* last_axis_vector(const Value* v, std::optional<int64_t> n) {
  const Tensor* t = constant_value(v);
  if (!t || t->rank() < 1 || t->numel() != t->shape().back()) return nullptr;
  return !n || t->numel() == *n ? t : nullptr;
}

Value* as_1d_vector(GraphPatch& patch, Value* v) {
  const Tensor* t = constant_value(v);
  if (t->rank() == 1) return v;
  return patch.add_initializer(v->name() + "_1d", Tensor(t->dtype(), {t->numel()}, t->buffer()));
}

std::optional<ChannelFactorMul> channel_factor_mul(const Node* mul, std::optional<int64_t> n) {
  if (!is_op(mul, "Mul") || mul->inputs().size() != 2) return std::nullopt;
  for (size_t slot = 0; slot < 2; ++slot) {
    Value* c = mul->input(slot);
    Value* x = mul->input(1 - slot);
    const Tensor* factor = last_axis_vector(c, n);
    if (!factor || factor->dtype() != DType::Float32) continue;
    if (!x || constant_value(x) || x->type.dtype != DType::Float32) continue;
    return ChannelFactorMul{x, c};
  }
  return std::nullopt;
}

Tensor int64s(const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>({static_cast<int64_t>(values.size())}, values);
}

Tensor filled(DType t, const std::vector<int64_t>& shape, double v) {
  Tensor out(t, shape);
  const int64_t n = out.numel();
  switch (t) {
    case DType::Float32: std::fill_n(out.mutable_data<float>(), n, static_cast<float>(v)); break;
    case DType::Float64: std::fill_n(out.mutable_data<double>(), n, v); break;
    case DType::Float16:
    case DType::BFloat16: {
      const uint16_t bits = t == DType::Float16 ? float_to_half(static_cast<float>(v))
                                                : float_to_bfloat16(static_cast<float>(v));
      std::fill_n(reinterpret_cast<uint16_t*>(out.mutable_raw()), n, bits);
      break;
    }
    default: fail("internal error: filled() needs a float type, got ", dtype_name(t));
  }
  return out;
}

void import_octet_domain(Graph& g) {
  if (!g.opset_imports.count("octet")) g.opset_imports["octet"] = 1;
}

bool onnx_opset_at_least(const Graph& g, int64_t version) {
  const int64_t v = g.opset_version("");
  return v == 0 || v >= version;
}

namespace {

// Two optional one-element constants that hold the same number (or are both absent).
bool same_scalar_constant(const Value* a, const Value* b) {
  if (a == b) return true;
  const Tensor* ta = constant_value(a);
  const Tensor* tb = constant_value(b);
  if (!ta || !tb || ta->dtype() != tb->dtype() || ta->numel() != 1 || tb->numel() != 1) return false;
  return std::memcmp(ta->raw(), tb->raw(), ta->bytes()) == 0;
}

}  // namespace

std::optional<FakeQuant> fake_quant_of(const Value* v, bool allow_int16) {
  Node* dq = producer(v, "DequantizeLinear");
  if (!dq) return std::nullopt;
  Node* q = producer(dq->input(0), "QuantizeLinear");
  if (!q || !q->input(0) || !q->input(0)->type.known() || q->input(0)->type.dtype != DType::Float32) return std::nullopt;
  const Tensor* scale = constant_value(q->input(1));
  if (!scale || scale->dtype() != DType::Float32 || scale->numel() != 1) return std::nullopt;
  if (q->input(2)) {
    const Tensor* zp = constant_value(q->input(2));
    if (!zp || zp->numel() != 1) return std::nullopt;
    const bool int16_zero = allow_int16 && zp->dtype() == DType::Int16 && zp->data<int16_t>()[0] == 0;
    if (zp->dtype() != DType::UInt8 && zp->dtype() != DType::Int8 && !int16_zero) return std::nullopt;
  }
  if (!same_scalar_constant(q->input(1), dq->input(1)) || !same_scalar_constant(q->input(2), dq->input(2)))
    return std::nullopt;
  // A saturate or output_dtype attribute (opset 19+/21+) would change the integer type.
  if (q->has_attr("output_dtype") || q->has_attr("block_size")) return std::nullopt;
  return FakeQuant{q->input(0), q->input(1), q->input(2), q, dq};
}

}  // namespace octet::passes
