// Shared pieces of the shape-manipulation and linear-algebra inference rules: reading
// axes/ints from an attribute or an input depending on the opset, checking index
// dtypes, unifying dims that must be equal, carrying quantization through data
// movement, and the per-file registration hooks that register_shape_ops() calls.
//
// Conventions every rule here follows:
// - an unknown rank gives an unknown-rank output, never a crash;
// - a dim inference cannot know becomes a fresh symbol, never an error;
// - an impossible input (two known sizes that must agree but differ, a bad axis) is
//   ctx.fail(...), which names the node;
// - integer outputs of rank 0/1 get their symbolic contents (set_output_values) when
//   every element is known, so Shape->Gather->Concat->Reshape chains fold.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ops/op_registry.h"

namespace octet {
namespace shape_rules {

// Stale symbolic contents are cleared by infer_node before any rule runs.
template <void (*Rule)(InferContext&)>
void add_rule(OpRegistry& r, const char* op_type, const char* domain = "") {
  r.add(OpDef{domain, op_type, Rule});
}

// Per-file registration, called by register_shape_ops / register_linalg_ops.
void register_shape_basic_ops(OpRegistry& r);    // Shape, Size, Constant, ConstantOfShape, Range
void register_shape_reshape_ops(OpRegistry& r);  // Reshape, Flatten, Squeeze, Unsqueeze, Transpose
void register_shape_slice_ops(OpRegistry& r);    // Slice, Split, Concat, Pad
void register_shape_gather_ops(OpRegistry& r);   // Gather, GatherElements, GatherND, Expand, Tile
void register_shape_scatter_ops(OpRegistry& r);  // ScatterND, ScatterElements, Scatter
void register_linalg_conv_ops(OpRegistry& r);    // Conv, ConvTranspose
void register_linalg_einsum_ops(OpRegistry& r);  // Einsum

// ---- dims ----
DimVector fresh_dims(size_t n, const std::string& hint);
// ceil(a / b) for b > 0.
Dim ceil_div(const Dim& a, int64_t b);
// min(x, bound) where x is an index assumed >= 0: exact when their difference is a
// known constant, Dim::min otherwise.
Dim clamp_upper(const Dim& x, const Dim& bound);
// True for a symbolic value whose every coefficient is negative (-seq, -seq - 1): the
// only symbolic values treated as negative indices.
bool looks_negative(const Dim& d);
// Two dims that must be equal: a known size wins over a symbol, a named symbol over an
// anonymous one; two different known sizes are an error naming the node and `what`.
Dim unify_dims(const InferContext& ctx, const Dim& a, const Dim& b, const std::string& what);
// Dims of the input when rank is known and equals `rank`; fails naming `what` when the
// rank is known and differs.
void require_rank(const InferContext& ctx, size_t input, int64_t rank, const std::string& what);

// ---- integer inputs and attributes ----
bool is_index_dtype(DType t);  // int32 or int64
// Fails unless input `i` (when present) has one of the index dtypes.
void require_index_dtype(const InferContext& ctx, size_t i, const std::string& what);
void require_int64(const InferContext& ctx, size_t i, const std::string& what);
// Length of a 1-D input when its single dim is a known constant; nullopt otherwise.
// Fails when the input's rank is known and is not 1 (or not 0/1 with allow_scalar).
std::optional<int64_t> vector_length(const InferContext& ctx, size_t i, const std::string& what,
                                     bool allow_scalar = false);

// Where an op's list argument (axes, split, pads, starts) lives at this opset.
enum class ListSource { Absent, Known, Unknown };
struct IntList {
  ListSource source = ListSource::Absent;
  std::vector<int64_t> values;        // when Known
  std::optional<int64_t> length;      // when Unknown but the length is known
};
// Reads `attr` below `input_since_opset`, input `input` from it on; the other place
// holding it is an error (the model does not match its declared opset).
IntList int_list_arg(const InferContext& ctx, const std::string& attr, size_t input,
                     int64_t input_since_opset);

std::string ints_to_string(const std::vector<int64_t>& v);

// ---- quantization through data movement ----
// The output type for a pure data-movement op: the input's dtype and quant params with
// `dims`. Per-tensor params always carry over; per-axis params carry over when
// `axis_map` maps the quantized axis to an output axis (-1: it does not survive, the
// params are dropped with a warning).
TensorType moved_type(const InferContext& ctx, size_t input, std::optional<DimVector> dims,
                      const std::vector<int64_t>& axis_map = {});
// axis_map for ops that keep every axis in place (Slice, Expand, Tile, Pad, Split...).
std::vector<int64_t> identity_axis_map(int64_t rank);

// ---- small helpers on values ----
// Values of an integer input only when every one of them is a known integer.
inline std::optional<std::vector<int64_t>> known_ints(const InferContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return std::nullopt;
  return ctx.input_ints(i);
}
bool is_value_dtype(DType t);  // integer types whose contents shape math tracks

}  // namespace shape_rules
}  // namespace octet
