// Small matchers shared by the rewrites: constants, single-use values, commutative
// operands, reduction axes.
//
// The rules every fusion follows, and these helpers make cheap to state:
// - an intermediate value a fusion swallows has exactly one use and is not a graph
//   output (a value read elsewhere must survive, so the pattern does not match);
// - a constant is an initializer that is not also a graph input (those are defaults a
//   caller may override) or the output of a Constant node;
// - a constant operand of a matched Mul/Add/Div has one element and no more dims than the
//   other operand, so it cannot change the result's shape by broadcasting;
// - constants are compared with a relative tolerance of 1e-6, widened to the precision of
//   float16/bfloat16 constants (0.044715 is not representable in either).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "ir/graph.h"
#include "ir/patch.h"

namespace octet::passes {

// Nodes that applied matches removed during a sweep over a snapshot of g.nodes(). Their
// memory is freed by the patch, so a sweep compares pointers against this set and never
// dereferences a removed node.
class RemovedNodes {
 public:
  bool contains(const Node* n) const { return nodes_.count(n) > 0; }
  void add(const std::vector<Node*>& nodes) { nodes_.insert(nodes.begin(), nodes.end()); }
  bool any() const { return !nodes_.empty(); }

 private:
  std::unordered_set<const Node*> nodes_;
};

// The constant contents of `v`, or nullptr (see above).
const Tensor* constant_value(const Value* v);
// A one-element floating-point constant, widened to double.
std::optional<double> scalar_constant(const Value* v);
// True when `v` is a one-element float constant within `rel_tol` of `expected` (rel_tol
// widened for 16-bit floats), that broadcasting against `other` leaves `other`'s shape.
bool is_scalar(const Value* v, double expected, const Value* other, double rel_tol = 1e-6);
// The relative tolerance for a constant of this type: max(rel_tol, its precision).
double constant_tolerance(DType t, double rel_tol);

// The constant of `v` when it holds n values along its last axis and nothing else (rank
// >= 1, leading dims 1: a bias or a per-channel factor as exporters write it, [N] or
// [1, .., N]); without n, any length. nullptr otherwise. Callers check the dtype.
const Tensor* last_axis_vector(const Value* v, std::optional<int64_t> n = std::nullopt);
// Such a vector as a 1-D value, what the fused ops take: `v` itself when it is 1-D, else
// a new [N] initializer named after it (the original may be read elsewhere).
Value* as_1d_vector(GraphPatch& patch, Value* v);
// A Mul of a non-constant float32 x by a float32 constant c along the last axis
// (last_axis_vector, n values when given), in either order: SmoothQuant's per-channel
// factor on a linear layer's input. Its operands, or nullopt.
struct ChannelFactorMul {
  Value* x = nullptr;
  Value* c = nullptr;
};
std::optional<ChannelFactorMul> channel_factor_mul(const Node* mul, std::optional<int64_t> n = std::nullopt);

// The node that produces `v` when it is the ai.onnx op `op_type`; nullptr otherwise.
Node* producer(const Value* v, const char* op_type);
bool is_op(const Node* n, const char* op_type);  // ai.onnx domain
// One sweep of a rewrite over a snapshot of g.nodes(): at each node that no applied
// rewrite of this sweep removed (and, unless `anchor_op` is nullptr, that is that ai.onnx
// op), `try_at(node, removed)` matches and applies; it returns the nodes its applied
// rewrite removed (empty when it did not apply) and reads `removed` to skip a match that
// reaches a node already gone. True when any rewrite applied. The loop every pass repeated.
template <class TryAt>
bool sweep_rewrites(Graph& g, const char* anchor_op, TryAt try_at) {
  RemovedNodes removed;
  for (Node* n : g.nodes()) {
    if (removed.contains(n) || (anchor_op && !is_op(n, anchor_op))) continue;
    const std::vector<Node*> gone = try_at(n, static_cast<const RemovedNodes&>(removed));
    removed.add(gone);
  }
  return removed.any();
}

// Add, or a two-input Sum (ONNX's own function bodies, e.g. Gelu's, write 1 + erf as Sum).
bool is_add(const Node* n);
// The one node reading `v` when `v` has exactly one use and is not a graph output.
Node* sole_consumer(const Value* v);
bool single_use(const Value* v);
// True when GraphPatch::replace_uses(from, to) accepts the pair (same element type and
// rank wherever both are known) and `from` is not read by a subgraph: subgraph bodies
// name the outer values they read, so such a value must keep its name and producer.
bool can_replace(const Value* from, const Value* to);
// True when a subgraph (If/Loop/Scan body) reads `v` from the enclosing scope.
bool read_by_subgraph(const Value* v);
// For a two-input node, the input that is not `one`; nullptr when neither input is
// `one`. Mul/Add are commutative, so matchers look at both orders this way.
Value* other_input(const Node* n, const Value* one);

// The part sizes of a Split of its input's last axis (known rank): its constant int64
// `split` input, its `split` attribute (before opset 13), or else equal parts of a known
// last dim `n` (opset 18's num_outputs; n divisible by the outputs' count). With `n` known,
// the parts must sum to it. Empty for another axis, unknown sizes or non-positive parts.
std::vector<int64_t> last_axis_split_sizes(const Node* split, std::optional<int64_t> n);

// For a ReduceMean with keepdims=1 over the trailing axes [k, rank) of a rank-known
// input: k. nullopt for any other reduction (a middle axis, keepdims=0, unknown axes).
std::optional<int64_t> trailing_reduce_axis(const Node* reduce);

// True when `p` can be the Scale/B of a normalization over the axes [k, rank) of `x`: the
// same float type, one element in all, or (right-aligned with `x`) exactly `x`'s dims on
// every normalized axis and 1 on any leading axis it has.
bool is_norm_param(const Value* p, const Value* x, int64_t k);

// A tensor of `shape` filled with `v`, in float type `t`.
Tensor filled(DType t, const std::vector<int64_t>& shape, double v);
// A 1-D int64 tensor of `values`: a Reshape target, Slice bounds.
Tensor int64s(const std::vector<int64_t>& values);

// A per-tensor fake quantization as quantizers write it: DequantizeLinear(QuantizeLinear(
// x, s, z), s', z') with s/s' and z/z' the same one-element constants (same value or equal
// contents), a float32 scale and a uint8/int8 zero point (absent on both: uint8 0).
// `allow_int16` also takes an int16 zero point of 0: the attention probabilities octet
// quantize writes with 12-bit resolution (QuantizeOptions::row_probabilities).
struct FakeQuant {
  Value* x = nullptr;           // the float tensor quantized
  Value* scale = nullptr;       // the QuantizeLinear's scale
  Value* zero_point = nullptr;  // the QuantizeLinear's zero point; nullptr when absent
  Node* quantize = nullptr;
  Node* dequantize = nullptr;
};
// `v` as the output of such a pair, or nullopt.
std::optional<FakeQuant> fake_quant_of(const Value* v, bool allow_int16 = false);

// Imports the octet domain (version 1) so the graph may hold the fused ops.
void import_octet_domain(Graph& g);
// True when the graph's ai.onnx opset is at least `version` (a graph that imports no
// ai.onnx opset is read as the newest, as inference does).
bool onnx_opset_at_least(const Graph& g, int64_t version);

}  // namespace octet::passes
