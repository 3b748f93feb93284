// Slice, and the ops that cut or join along one axis: Split, Concat, Pad.
//
// Slice on a symbolic dim aims for exact Dims rather than fresh symbols, because
// exporters slice shape tensors and causal-mask buffers with it:
//   [0:INT64_MAX] -> d, [1:] -> d - 1, [-1:] -> 1, [:-1] -> d - 1, [0:k] -> min(d, k),
//   [:seq] on a buffer of 128 -> min(seq, 128), steps != 1 -> ceil via floor_div.
// For a symbolic d, constant starts and symbolic indices are taken to lie within the
// dim (a start past the end is not something exporters emit); ends are clamped with
// Dim::min unless the clamp is decidable.
#include <algorithm>
#include <limits>

#include "ops/op_registry.h"
#include "ops/shape_helpers.h"

namespace octet {

using namespace shape_rules;

namespace {

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
// Bounds at or beyond INT32_MAX in magnitude mean "to the end" on a symbolic dim.
constexpr int64_t kToEnd = std::numeric_limits<int32_t>::max();

// Effective [start, end) per the spec for a known dim; returns the element count.
struct ConstSlice {
  int64_t start = 0, count = 0;
};
ConstSlice slice_const(int64_t d, int64_t s, int64_t e, int64_t step) {
  if (d <= 0) return {};
  if (s < 0) s += d;
  if (e < 0) e += d;
  int64_t span;
  if (step > 0) {
    s = std::clamp<int64_t>(s, 0, d);
    e = std::clamp<int64_t>(e, 0, d);
    span = e - s;
  } else {
    s = std::clamp<int64_t>(s, 0, d - 1);
    e = std::clamp<int64_t>(e, -1, d - 1);
    span = s - e;
  }
  if (span <= 0) return {s, 0};
  const int64_t q = step > 0 ? step : (step == kI64Min ? kI64Max : -step);
  return {s, (span - 1) / q + 1};
}

// Effective start or end index of a slice whose dim or bounds are symbolic; `forward`
// is the sign of the step. A known dim clamps known indices exactly; on a symbolic dim
// the rules in the file comment apply.
Dim slice_index(const Dim& d, const Dim& x, bool forward, bool is_start) {
  const Dim upper = forward ? d : d - 1;
  const int64_t lower = forward || is_start ? 0 : -1;
  auto c = x.constant();
  if (auto cd = d.constant(); c && cd) {
    int64_t v = *c < 0 ? *c + *cd : *c;
    return std::clamp<int64_t>(v, lower, forward ? *cd : *cd - 1);
  }
  if (c) {
    if (*c >= kToEnd) return upper;
    if (*c <= -kToEnd) return lower;
    if (*c < 0) return d + *c;
    // A known start on a symbolic dim is taken to be within it ([1:] -> d - 1).
    return forward && is_start ? x : clamp_upper(x, upper);
  }
  if (looks_negative(x)) return d + x;
  return forward && is_start ? x : clamp_upper(x, upper);
}

Dim slice_dim(const Dim& d, const Dim& s, const Dim& e, int64_t step) {
  auto cd = d.constant(), cs = s.constant(), ce = e.constant();
  if (cd && *cd <= 0) return 0;
  if (cd && cs && ce) return slice_const(*cd, *cs, *ce, step).count;
  const bool forward = step > 0;
  // Same-sign known bounds keep their order through the clamps: [3:3], [5:2] are empty
  // whatever d is.
  if (cs && ce && (*cs < 0) == (*ce < 0) && (forward ? *ce <= *cs : *cs <= *ce)) return 0;
  Dim span = forward ? slice_index(d, e, true, false) - slice_index(d, s, true, true)
                     : slice_index(d, s, false, true) - slice_index(d, e, false, false);
  const int64_t q = forward ? step : (step == kI64Min ? kI64Max : -step);
  if (auto c = span.constant()) return *c <= 0 ? 0 : (*c - 1) / q + 1;
  if (q >= kToEnd) return Dim::min(span, 1);
  return ceil_div(span, q);
}

// Reads a list argument of Slice as symbolic values (starts/ends may come from Shape).
std::optional<DimVector> slice_values(InferContext& ctx, const char* attr, size_t input) {
  IntList l = int_list_arg(ctx, attr, input, 10);
  if (l.source == ListSource::Known) return DimVector(l.values.begin(), l.values.end());
  if (l.source == ListSource::Unknown) return ctx.input_values(input);
  return std::nullopt;
}

void infer_slice(InferContext& ctx) {
  const int64_t opset = onnx_opset(ctx);
  if (opset >= 10 && (!ctx.has_input(1) || !ctx.has_input(2))) ctx.fail("needs starts and ends inputs");
  if (opset < 10 && (!ctx.node().has_attr("starts") || !ctx.node().has_attr("ends")))
    ctx.fail("needs starts and ends attributes before opset 10");
  auto starts = slice_values(ctx, "starts", 1);
  auto ends = slice_values(ctx, "ends", 2);
  IntList axes = int_list_arg(ctx, "axes", 3, 10);
  IntList steps = opset >= 10 ? int_list_arg(ctx, "steps", 4, 10) : IntList{};
  const auto& in = ctx.input_dims(0);
  if (!in) {
    ctx.set_output(0, moved_type(ctx, 0, std::nullopt));
    return;
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  std::optional<int64_t> n;
  if (starts) n = static_cast<int64_t>(starts->size());
  else n = opset >= 10 ? vector_length(ctx, 1, "starts") : std::nullopt;
  auto check_len = [&](std::optional<int64_t> len, const char* what) {
    if (len && n && *len != *n) ctx.fail(what, " has ", *len, " entries but starts has ", *n);
  };
  check_len(ends ? std::optional<int64_t>(ends->size()) : std::nullopt, "ends");
  if (axes.source == ListSource::Known) check_len(static_cast<int64_t>(axes.values.size()), "axes");
  if (steps.source == ListSource::Known) check_len(static_cast<int64_t>(steps.values.size()), "steps");

  DimVector out = *in;
  const auto id = identity_axis_map(rank);
  if (axes.source == ListSource::Unknown || !n) {
    // Which axes are cut is unknown: every dim may change, the rank does not.
    ctx.set_output(0, moved_type(ctx, 0, fresh_dims(rank, "slice"), id));
    return;
  }
  std::vector<int64_t> ax;
  if (axes.source == ListSource::Known) {
    ax = normalize_axes(ctx, axes.values, rank);
  } else {
    if (*n > rank) ctx.fail(*n, " starts for rank ", rank);
    for (int64_t i = 0; i < *n; ++i) ax.push_back(i);
  }
  for (size_t i = 0; i < ax.size(); ++i) {
    std::optional<int64_t> step = 1;
    if (steps.source == ListSource::Known) step = steps.values[i];
    else if (steps.source == ListSource::Unknown) step = std::nullopt;
    if (step && *step == 0) ctx.fail("step on axis ", ax[i], " is 0");
    if (!step || !starts || !ends) {
      out[ax[i]] = Dim::fresh("slice");
      continue;
    }
    out[ax[i]] = slice_dim((*in)[ax[i]], (*starts)[i], (*ends)[i], *step);
  }
  ctx.set_output(0, moved_type(ctx, 0, out, id));

  // Contents: slicing a shape vector with constant bounds.
  auto values = ctx.input_values(0);
  if (!values || rank != 1 || ax.size() != 1 || !starts || !ends) return;
  auto s = (*starts)[0].constant(), e = (*ends)[0].constant();
  int64_t step = steps.source == ListSource::Known ? steps.values[0] : 1;
  if (!s || !e || steps.source == ListSource::Unknown) return;
  ConstSlice cut = slice_const(static_cast<int64_t>(values->size()), *s, *e, step);
  DimVector picked;
  for (int64_t k = 0; k < cut.count; ++k) picked.push_back((*values)[cut.start + k * step]);
  ctx.set_output_values(0, std::move(picked));
}

void infer_split(InferContext& ctx) {
  const int64_t opset = onnx_opset(ctx);
  const size_t n_out = ctx.num_outputs();
  if (n_out == 0) ctx.fail("has no outputs");
  const bool has_num = opset >= 18 && ctx.node().has_attr("num_outputs");
  IntList split = int_list_arg(ctx, "split", 1, 13);
  if (has_num) {
    if (split.source != ListSource::Absent) ctx.fail("has both a split input and 'num_outputs'");
    int64_t num = ctx.node().attr_int("num_outputs", 0);
    if (num != static_cast<int64_t>(n_out))
      ctx.fail("num_outputs is ", num, " but the node has ", n_out, " outputs");
  }
  const auto& in = ctx.input_dims(0);
  if (!in) {
    for (size_t i = 0; i < n_out; ++i) ctx.set_output(i, moved_type(ctx, 0, std::nullopt));
    return;
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  const int64_t axis = normalize_axis(ctx, ctx.node().attr_int("axis", 0), rank);
  const Dim& d = (*in)[axis];
  auto cd = d.constant();
  DimVector sizes;
  if (split.source == ListSource::Known) {
    if (split.values.size() != n_out)
      ctx.fail("split ", ints_to_string(split.values), " has ", split.values.size(), " entries for ", n_out, " outputs");
    int64_t sum = 0;
    for (int64_t v : split.values) {
      if (v < 0) ctx.fail("negative size in split ", ints_to_string(split.values));
      sum += v;
      sizes.push_back(v);
    }
    if (cd && sum != *cd)
      ctx.fail("split ", ints_to_string(split.values), " sums to ", sum, " but axis ", axis, " of ",
               ctx.input_type(0).to_string(), " has ", *cd);
  } else if (split.source == ListSource::Unknown) {
    if (split.length && *split.length != static_cast<int64_t>(n_out))
      ctx.fail("split has ", *split.length, " entries for ", n_out, " outputs");
    sizes = fresh_dims(n_out, "split");
  } else if (has_num) {
    // Opset 18: ceil-sized chunks, the last one smaller.
    const int64_t k = static_cast<int64_t>(n_out);
    Dim chunk = ceil_div(d, k), last = d - chunk * (k - 1);
    if (auto c = last.constant(); c && *c < 0)
      ctx.fail("cannot split ", ctx.input_type(0).to_string(), " axis ", axis, " into ", k, " parts");
    sizes.assign(n_out, chunk);
    sizes.back() = last;
  } else {
    const int64_t k = static_cast<int64_t>(n_out);
    if (cd && *cd % k != 0)
      ctx.fail("cannot split axis ", axis, " of ", ctx.input_type(0).to_string(), " into ", k, " equal parts");
    sizes.assign(n_out, Dim::floor_div(d, k));
  }
  const auto id = identity_axis_map(rank);
  for (size_t i = 0; i < n_out; ++i) {
    DimVector out = *in;
    out[axis] = sizes[i];
    ctx.set_output(i, moved_type(ctx, 0, out, id));
  }
  auto values = ctx.input_values(0);
  if (!values || rank != 1) return;
  int64_t offset = 0;
  for (size_t i = 0; i < n_out; ++i) {
    auto c = sizes[i].constant();
    if (!c || offset + *c > static_cast<int64_t>(values->size())) return;
    ctx.set_output_values(i, DimVector(values->begin() + offset, values->begin() + offset + *c));
    offset += *c;
  }
}

bool same_quant(const TensorType& a, const TensorType& b) {
  if (a.quant == b.quant) return true;
  if (!a.quant || !b.quant) return false;
  return a.quant->scales == b.quant->scales && a.quant->zero_points == b.quant->zero_points &&
         a.quant->axis == b.quant->axis && a.quant->block_size == b.quant->block_size;
}

void infer_concat(InferContext& ctx) {
  const int64_t opset = onnx_opset(ctx);
  if (opset >= 4 && !ctx.node().has_attr("axis")) ctx.fail("needs an 'axis' attribute");
  const int64_t axis_attr = ctx.node().attr_int("axis", 1);
  if (ctx.num_inputs() == 0) ctx.fail("has no inputs");
  const TensorType& first = ctx.input_type(0);
  std::optional<int64_t> rank;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const TensorType& t = ctx.input_type(i);
    if (t.dtype != first.dtype)
      ctx.fail("input ", i, " is ", t.to_string(), " but input 0 is ", first.to_string());
    if (!t.dims) continue;
    if (rank && *rank != t.rank())
      ctx.fail("input ", i, " is ", t.to_string(), " but the inputs before it have rank ", *rank);
    rank = t.rank();
  }
  bool keep_quant = true;
  for (size_t i = 1; i < ctx.num_inputs(); ++i) keep_quant &= same_quant(first, ctx.input_type(i));
  auto typed = [&](std::optional<DimVector> dims) {
    TensorType t = moved_type(ctx, 0, std::move(dims), identity_axis_map(rank.value_or(0)));
    if (!keep_quant) t.quant.reset();
    return t;
  };
  if (!rank) {
    ctx.set_output(0, typed(std::nullopt));
    return;
  }
  if (*rank == 0) ctx.fail("cannot concatenate scalars");
  const int64_t axis = normalize_axis(ctx, axis_attr, *rank);
  DimVector out;
  Dim total = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const auto& dims = ctx.input_dims(i);
    if (!dims) {
      total = total + Dim::fresh("concat");
      continue;
    }
    if (out.empty()) out = *dims;
    for (int64_t j = 0; j < *rank; ++j)
      if (j != axis)
        out[j] = unify_dims(ctx, out[j], (*dims)[j],
                            "input " + std::to_string(i) + " dim " + std::to_string(j) + " differs from the other inputs");
    total = total + (*dims)[axis];
  }
  out[axis] = total;
  ctx.set_output(0, typed(out));
  if (*rank != 1) return;
  DimVector values;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    auto v = ctx.input_values(i);
    if (!v) return;
    values.insert(values.end(), v->begin(), v->end());
  }
  ctx.set_output_values(0, std::move(values));
}

void infer_pad(InferContext& ctx) {
  const int64_t opset = onnx_opset(ctx);
  std::optional<DimVector> pads;
  std::optional<int64_t> pads_len;
  if (opset < 11) {
    const char* name = ctx.node().has_attr("paddings") ? "paddings" : "pads";
    auto p = ctx.node().attr_ints(name);
    pads = DimVector(p.begin(), p.end());
  } else {
    if (ctx.node().has_attr("pads")) ctx.fail("'pads' is an input from opset 11, not an attribute");
    if (!ctx.has_input(1)) ctx.fail("needs a pads input");
    require_int64(ctx, 1, "pads");
    pads = ctx.input_values(1);
    pads_len = vector_length(ctx, 1, "pads");
  }
  if (pads) pads_len = static_cast<int64_t>(pads->size());
  IntList axes = opset >= 18 ? int_list_arg(ctx, "axes", 3, 18) : IntList{};
  const auto& in = ctx.input_dims(0);
  if (!in) {
    // Without axes, pads holds two entries per dim: that is the rank.
    std::optional<DimVector> dims;
    if (axes.source == ListSource::Absent && pads_len && *pads_len % 2 == 0)
      dims = fresh_dims(*pads_len / 2, "pad");
    ctx.set_output(0, moved_type(ctx, 0, dims));
    return;
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  const auto id = identity_axis_map(rank);
  std::vector<int64_t> ax;
  if (axes.source == ListSource::Known) ax = normalize_axes(ctx, axes.values, rank);
  else if (axes.source == ListSource::Absent) ax = id;
  if (axes.source == ListSource::Unknown) {
    ctx.set_output(0, moved_type(ctx, 0, fresh_dims(rank, "pad"), id));
    return;
  }
  if (pads_len && *pads_len != 2 * static_cast<int64_t>(ax.size()))
    ctx.fail("pads has ", *pads_len, " entries; expected ", 2 * ax.size(), " (begin and end for each of ",
             ax.size(), " axes)");
  DimVector out = *in;
  const size_t n = ax.size();
  for (size_t i = 0; i < n; ++i) {
    if (!pads) {
      out[ax[i]] = Dim::fresh("pad");
      continue;
    }
    out[ax[i]] = (*in)[ax[i]] + (*pads)[i] + (*pads)[i + n];
    if (auto c = out[ax[i]].constant(); c && *c < 0)
      ctx.fail("pads ", dims_to_string(*pads), " crop axis ", ax[i], " of ", ctx.input_type(0).to_string(),
               " below zero");
  }
  ctx.set_output(0, moved_type(ctx, 0, out, id));
}

}  // namespace

namespace shape_rules {
void register_shape_slice_ops(OpRegistry& r) {
  add_rule<infer_slice>(r, "Slice");
  add_rule<infer_split>(r, "Split");
  add_rule<infer_concat>(r, "Concat");
  add_rule<infer_pad>(r, "Pad");
}
}  // namespace shape_rules

}  // namespace octet
