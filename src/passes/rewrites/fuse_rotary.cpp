// Rotary position embedding, rotate_half form -> octet.ApplyRotary.
//
//   x1 = Slice(x, 0, D/2, axis -1)    x2 = Slice(x, D/2, D.., axis -1)
//   r  = Concat(Neg(x2), x1, axis -1)
//   y  = Add(Mul(x, cos), Mul(r, sin))            (either operand order of Mul and Add)
//
// as Llama, Mistral, Qwen, Phi and GPT-NeoX exports write it for Q and K in every layer:
// seven nodes on a few hundred floats each, which at a decode step cost more in dispatch
// than in arithmetic. D is x's last dim (known and even); cos and sin must have x's type
// and dims that broadcast into x's without growing them (each dim equal to x's or 1), so
// the fused output has x's shape, as the Add's did. Intermediates are read by the pattern
// alone; x, cos and sin may have other readers.
#include <limits>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

struct Match {
  Value* x = nullptr;
  Value* cos = nullptr;
  Value* sin = nullptr;
  Value* out = nullptr;
  std::vector<Node*> nodes;
};

// The last axis of x as a normalized index, when `axis` (an attribute or a constant)
// names it.
bool is_last_axis(int64_t axis, int64_t rank) { return axis == -1 || axis == rank - 1; }

// For Slice(x, ...) on x's last axis with step 1: the selected [begin, end) after ONNX's
// normalization and clamping against `d`; false for any other Slice.
bool last_axis_range(const Node* slice, const Value* x, int64_t d, int64_t& begin, int64_t& end) {
  if (slice->input(0) != x || slice->inputs().size() < 3) return false;
  const int64_t rank = x->type.rank();
  auto ints = [](const Value* v) -> std::optional<std::vector<int64_t>> {
    const Tensor* t = constant_value(v);
    if (!t || t->rank() != 1 || !dtype_is_integer(t->dtype())) return std::nullopt;
    return t->to_int64_vector();
  };
  auto starts = ints(slice->input(1)), ends = ints(slice->input(2));
  if (!starts || !ends || starts->size() != 1 || ends->size() != 1) return false;
  if (const Value* axes = slice->input(3)) {
    auto a = ints(axes);
    if (!a || a->size() != 1 || !is_last_axis((*a)[0], rank)) return false;
  } else if (rank != 1) {
    return false;
  }
  if (const Value* steps = slice->input(4)) {
    auto s = ints(steps);
    if (!s || s->size() != 1 || (*s)[0] != 1) return false;
  }
  auto clamp = [d](int64_t v) { return std::max<int64_t>(0, std::min(d, v < 0 ? v + d : v)); };
  begin = clamp((*starts)[0]);
  end = clamp((*ends)[0]);
  return true;
}

// cos/sin: x's float type, dims that broadcast into x's without growing them.
bool broadcasts_into(const Value* c, const Value* x) {
  if (!c || c == x || !c->type.known() || c->type.dtype != x->type.dtype || !c->type.dims) return false;
  const DimVector& cd = *c->type.dims;
  const DimVector& xd = *x->type.dims;
  if (cd.size() > xd.size()) return false;
  const size_t lead = xd.size() - cd.size();
  for (size_t i = 0; i < cd.size(); ++i)
    if (cd[i] != xd[lead + i] && cd[i] != Dim(1)) return false;
  return !cd.empty() && cd.back() == xd.back();
}

bool match(Node* concat, Match& m) {
  if (concat->inputs().size() != 2) return false;
  Value* negated = concat->input(0);
  Value* x1 = concat->input(1);
  Node* neg = producer(negated, "Neg");
  Node* slice1 = producer(x1, "Slice");
  if (!neg || !slice1 || !single_use(negated) || !single_use(x1)) return false;
  Value* x2 = neg->input(0);
  Node* slice2 = producer(x2, "Slice");
  if (!slice2 || !single_use(x2)) return false;
  Value* x = slice1->input(0);
  if (!x->type.known() || !dtype_is_float(x->type.dtype) || !x->type.dims || x->type.dims->empty()) return false;
  auto d = x->type.dims->back().constant();
  if (!d || *d <= 0 || *d % 2 != 0) return false;
  if (!is_last_axis(concat->attr_int("axis", std::numeric_limits<int64_t>::min()), x->type.rank())) return false;
  int64_t b1 = 0, e1 = 0, b2 = 0, e2 = 0;
  if (!last_axis_range(slice1, x, *d, b1, e1) || !last_axis_range(slice2, x, *d, b2, e2)) return false;
  if (b1 != 0 || e1 != *d / 2 || b2 != *d / 2 || e2 != *d) return false;

  Value* rotated = concat->output(0);
  Node* mul_sin = sole_consumer(rotated);
  if (!is_op(mul_sin, "Mul") || !single_use(mul_sin->output(0))) return false;
  Node* add = sole_consumer(mul_sin->output(0));
  if (!is_op(add, "Add")) return false;
  Node* mul_cos = producer(other_input(add, mul_sin->output(0)), "Mul");
  if (!mul_cos || mul_cos == mul_sin || !single_use(mul_cos->output(0))) return false;
  m.cos = other_input(mul_cos, x);
  m.sin = other_input(mul_sin, rotated);
  if (!broadcasts_into(m.cos, x) || !broadcasts_into(m.sin, x)) return false;
  m.x = x;
  m.out = add->output(0);
  m.nodes = {slice1, slice2, neg, concat, mul_cos, mul_sin, add};
  return can_replace(m.out, x);
}

bool apply(Graph& g, PassContext& ctx, const Match& m) {
  GraphPatch patch = make_patch(g);
  Node* rotary = patch.add_node("ApplyRotary", {m.x, m.cos, m.sin}, 1, {}, "octet", m.nodes[3]->name() + "_rotary");
  patch.replace_uses(m.out, rotary->output(0));
  for (Node* n : m.nodes) patch.remove_node(n);
  if (!ctx.apply(patch)) return false;
  import_octet_domain(g);
  ctx.count("octet.ApplyRotary");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  return sweep_rewrites(g, "Concat", [&](Node* n, const RemovedNodes&) {
    Match m;
    return match(n, m) && apply(g, ctx, m) ? m.nodes : std::vector<Node*>{};
  });
}

}  // namespace

Pass fuse_rotary() { return {"fuse_rotary", run}; }

}  // namespace octet::passes
