#include "ops/shape_helpers.h"

#include <algorithm>
#include <set>

namespace octet {
namespace shape_rules {

DimVector fresh_dims(size_t n, const std::string& hint) {
  DimVector out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(Dim::fresh(hint));
  return out;
}

Dim ceil_div(const Dim& a, int64_t b) {
  OCTET_ASSERT(b > 0, "ceil_div by ", b);
  if (b == 1) return a;
  return Dim::floor_div(a + (b - 1), b);
}

Dim clamp_upper(const Dim& x, const Dim& bound) {
  if (auto diff = (x - bound).constant()) return *diff <= 0 ? x : bound;
  return Dim::min(x, bound);
}

bool looks_negative(const Dim& d) {
  if (auto c = d.constant()) return *c < 0;
  // Dim::to_string() prints a canonical sum, the first term signed ("-seq - 1") and the
  // others joined by " + " or " - ". Every top-level term is negative exactly when the
  // text starts with '-' and has no top-level " + " (atoms print their operands inside
  // parentheses, which are skipped).
  const std::string s = d.to_string();
  if (s.empty() || s[0] != '-') return false;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')') --depth;
    if (depth == 0 && s.compare(i, 3, " + ") == 0) return false;
  }
  return true;
}

Dim unify_dims(const InferContext& ctx, const Dim& a, const Dim& b, const std::string& what) {
  if (a == b) return a;
  auto ca = a.constant(), cb = b.constant();
  if (ca && cb) ctx.fail(what, ": ", *ca, " vs ", *cb);
  if (ca) return a;
  if (cb) return b;
  bool anon_a = a.is_symbol() && Dim::is_anonymous_name(a.symbol_name());
  bool anon_b = b.is_symbol() && Dim::is_anonymous_name(b.symbol_name());
  if (anon_a && !anon_b) return b;
  return a;
}

void require_rank(const InferContext& ctx, size_t input, int64_t rank, const std::string& what) {
  const auto& dims = ctx.input_dims(input);
  if (dims && static_cast<int64_t>(dims->size()) != rank)
    ctx.fail(what, " must have rank ", rank, ", got ", ctx.input_type(input).to_string());
}

bool is_index_dtype(DType t) { return t == DType::Int32 || t == DType::Int64; }

void require_index_dtype(const InferContext& ctx, size_t i, const std::string& what) {
  if (!ctx.has_input(i)) return;
  DType t = ctx.input_dtype(i);
  if (!is_index_dtype(t)) ctx.fail(what, " must be int32 or int64, got ", dtype_name(t));
}

void require_int64(const InferContext& ctx, size_t i, const std::string& what) {
  if (!ctx.has_input(i)) return;
  DType t = ctx.input_dtype(i);
  if (t != DType::Int64) ctx.fail(what, " must be int64, got ", dtype_name(t));
}

std::optional<int64_t> vector_length(const InferContext& ctx, size_t i, const std::string& what,
                                     bool allow_scalar) {
  if (!ctx.has_input(i)) return std::nullopt;
  if (auto values = ctx.input_values(i)) return static_cast<int64_t>(values->size());
  const auto& dims = ctx.input_dims(i);
  if (!dims) return std::nullopt;
  if (dims->empty() && allow_scalar) return 1;
  if (dims->size() != 1)
    ctx.fail(what, " must be a 1-D tensor, got ", ctx.input_type(i).to_string());
  return (*dims)[0].constant();
}

IntList int_list_arg(const InferContext& ctx, const std::string& attr, size_t input,
                     int64_t input_since_opset) {
  IntList out;
  const bool from_input = onnx_opset(ctx) >= input_since_opset;
  const bool has_attr = ctx.node().has_attr(attr);
  const bool has_input = ctx.has_input(input);
  if (from_input) {
    if (has_attr)
      ctx.fail("'", attr, "' is an input from opset ", input_since_opset,
               ", not an attribute (model opset ", onnx_opset(ctx), ")");
    if (!has_input) return out;
    require_index_dtype(ctx, input, "'" + attr + "'");
    if (auto ints = ctx.input_ints(input)) {
      out.source = ListSource::Known;
      out.values = *ints;
    } else {
      out.source = ListSource::Unknown;
      out.length = vector_length(ctx, input, "'" + attr + "'");
    }
    return out;
  }
  if (has_input)
    ctx.fail("'", attr, "' is an attribute before opset ", input_since_opset,
             ", not an input (model opset ", onnx_opset(ctx), ")");
  if (!has_attr) return out;
  out.source = ListSource::Known;
  out.values = ctx.node().attr_ints(attr);
  return out;
}

std::string ints_to_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

TensorType moved_type(const InferContext& ctx, size_t input, std::optional<DimVector> dims,
                      const std::vector<int64_t>& axis_map) {
  const TensorType& in = ctx.input_type(input);
  TensorType out(in.dtype, std::move(dims));
  if (!in.quant) return out;
  if (in.quant->axis < 0) {
    out.quant = in.quant;
    return out;
  }
  int64_t axis = in.quant->axis;
  if (axis < static_cast<int64_t>(axis_map.size()) && axis_map[axis] >= 0) {
    if (axis_map[axis] == axis) {
      out.quant = in.quant;
    } else {
      auto q = std::make_shared<QuantParams>(*in.quant);
      q->axis = axis_map[axis];
      out.quant = std::move(q);
    }
  } else {
    ctx.warn("per-axis quantization on axis " + std::to_string(axis) +
             " does not survive this op; the output type carries none");
  }
  return out;
}

std::vector<int64_t> identity_axis_map(int64_t rank) {
  std::vector<int64_t> m(rank > 0 ? rank : 0);
  for (int64_t i = 0; i < rank; ++i) m[i] = i;
  return m;
}

bool is_value_dtype(DType t) { return dtype_is_integer(t) && dtype_bits(t) >= 8; }

}  // namespace shape_rules
}  // namespace octet
