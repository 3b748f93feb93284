// Gather(DequantizeLinear(T_q, s, z), ids)  ->  Mul(Cast(Gather(T_q, ids)) [- z_rows], s_rows)
//
// Why: a quantized embedding (octet quantize, docs/quantization.md §1) is an int8 table
// [V, D] with one scale per row, read by a Gather. Run literally, the DequantizeLinear
// turns the whole table into float on every run: for BERT's 30522 x 512 vocabulary that
// is 62.5 MB written per inference to read 128 rows of it, far slower than the model's
// matmuls. Folding it once (fold_constants does so at level 2 up to fold_max_bytes)
// would give back the float table's memory, which is what quantizing it saved. Gathering
// the int8 rows first and dequantizing only those computes the same numbers (below) at
// the cost of the rows actually read.
//
// Exactness: DequantizeLinear is y = (q - z) * s in float. For 8-bit q and z the
// difference is an exact small integer in float either way, and the one Mul rounds the
// same product, so the result equals the folded table's rows bit for bit.
//
// Rules: the Gather has axis 0 and reads DQ(T_q) as its data; T_q is a constant int8 or
// uint8 tensor of rank >= 1; the scale is a float32 constant with one element (per
// tensor) or, with the DQ's axis 0, one per row ([V]); the zero point, if any, is a
// constant of the scale's shape (all zeros: no subtraction). Per-row scale and zero point
// become [V, 1, ...] initializers and are gathered with the same ids, so negative and
// out-of-range ids behave exactly as the table's Gather does. The DQ stays for other
// readers; dead code elimination removes it otherwise.
#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

struct Match {
  Node* gather = nullptr;
  Value* table = nullptr;       // int8/uint8 [V, ...]
  Value* scale = nullptr;       // float32, 1 or V elements
  Value* zero_point = nullptr;  // nullptr when absent or all zeros
  bool per_row = false;
};

bool all_zero(const Tensor& t) {  // t: 8-bit
  const uint8_t* p = t.raw();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (p[i] != 0) return false;
  return true;
}

bool match(Node* n, Match& m) {
  m = Match{};
  if (!is_op(n, "Gather") || n->attr_int("axis", 0) != 0) return false;
  Node* dq = producer(n->input(0), "DequantizeLinear");
  if (!dq || (dq->has_attr("block_size") && dq->attr_int("block_size", 0) != 0)) return false;
  const Tensor* table = constant_value(dq->input(0));
  const Tensor* scale = constant_value(dq->input(1));
  if (!table || (table->dtype() != DType::Int8 && table->dtype() != DType::UInt8) || table->rank() < 1) return false;
  if (!scale || scale->dtype() != DType::Float32) return false;
  if (dq->has_attr("output_dtype") && dq->attr_int("output_dtype", 0) != 0 &&
      dq->attr_int("output_dtype", 0) != 1 /* FLOAT */)
    return false;
  if (scale->numel() != 1) {
    int64_t axis = dq->attr_int("axis", 1);
    if (axis < 0) axis += table->rank();
    if (axis != 0 || scale->rank() != 1 || scale->numel() != table->shape()[0]) return false;
    m.per_row = true;
  }
  if (Value* zp = dq->input(2)) {
    const Tensor* z = constant_value(zp);
    if (!z || z->dtype() != table->dtype() || z->numel() != scale->numel()) return false;
    if (!all_zero(*z)) m.zero_point = zp;
  }
  m.gather = n;
  m.table = dq->input(0);
  m.scale = dq->input(1);
  return !read_by_subgraph(n->output(0));
}

// `v`'s constant [V] reshaped to [V, 1, ...] (rank of the table), sharing its bytes.
Value* as_row_column(GraphPatch& patch, Value* v, int64_t table_rank) {
  const Tensor* t = constant_value(v);
  std::vector<int64_t> shape(static_cast<size_t>(table_rank), 1);
  shape[0] = t->numel();
  return patch.add_initializer(v->name() + "_rows", Tensor(t->dtype(), shape, t->buffer()));
}

bool apply(Graph& g, PassContext& ctx, const Match& m) {
  GraphPatch patch = make_patch(g);
  const std::string name = m.gather->name();
  const int64_t rank = constant_value(m.table)->rank();
  Value* ids = m.gather->input(1);
  auto gathered = [&](Value* v, const char* what) {
    return patch.add_node("Gather", {v, ids}, 1, {Attribute::make_int("axis", 0)}, "", name + what)->output(0);
  };
  auto to_float = [&](Value* v, const char* what) {
    return patch.add_node("Cast", {v}, 1, {Attribute::make_int("to", 1 /* FLOAT */)}, "", name + what)->output(0);
  };
  Value* rows = to_float(gathered(m.table, "_int8_rows"), "_rows_float");
  if (m.zero_point) {
    Value* zp = m.per_row ? gathered(as_row_column(patch, m.zero_point, rank), "_zero_points") : m.zero_point;
    rows = patch.add_node("Sub", {rows, to_float(zp, "_zero_points_float")}, 1, {}, "", name + "_centered")
               ->output(0);
  }
  Value* scale = m.per_row ? gathered(as_row_column(patch, m.scale, rank), "_scales") : m.scale;
  Node* mul = patch.add_node("Mul", {rows, scale}, 1, {}, "", name + "_dequantized");
  patch.replace_uses(m.gather->output(0), mul->output(0));
  patch.remove_node(m.gather);
  if (!ctx.apply(patch)) return false;
  ctx.count("Gather(int8 rows)");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  return sweep_rewrites(g, nullptr, [&](Node* n, const RemovedNodes&) {
    Match m;
    return match(n, m) && apply(g, ctx, m) ? std::vector<Node*>{m.gather} : std::vector<Node*>{};
  });
}

}  // namespace

Pass gather_quantized_rows() { return {"gather_quantized_rows", run}; }

}  // namespace octet::passes
