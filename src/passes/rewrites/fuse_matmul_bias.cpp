// MatMul + constant bias -> octet.MatMulBias(A, B, bias).
//
// Every Linear layer torch exports at rank 3 is MatMul(x, W) then Add(bias, .) (BERT and
// ViT fixtures; the bias often comes first). One fused op for every rank, rather than
// Gemm for the 2-D case only, so kernels and the quantizer see one form (ops/octet_ops.cpp
// defines it).
//
// Rules: the MatMul output is read by the Add alone; B has rank >= 2 so the output's
// last axis is N = B's last dim, a known number; the bias is a float constant of A's
// type with N elements, 1 on every other dim and no more dims than the MatMul output, so
// it adds along the last axis and broadcasting does not grow the result. A bias that is
// not already 1-D becomes a new 1-D initializer sharing its bytes (the original, maybe
// shared, is never touched).
#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

struct Match {
  Node* matmul = nullptr;
  Node* add = nullptr;
  Value* bias = nullptr;
  int64_t n = 0;
};

bool match(Node* matmul, Match& m) {
  Value* a = matmul->input(0);
  Value* b = matmul->input(1);
  Value* y = matmul->output(0);
  if (!a || !b || !y || !a->type.known() || !dtype_is_float(a->type.dtype)) return false;
  if (!b->type.dims || b->type.dims->size() < 2 || !y->type.dims) return false;
  auto n = b->type.dims->back().constant();
  if (!n || y->type.dims->empty() || y->type.dims->back() != Dim(*n)) return false;
  Node* add = sole_consumer(y);
  if (!is_op(add, "Add")) return false;
  Value* bias = other_input(add, y);
  const Tensor* t = last_axis_vector(bias, *n);  // the N elements run along the last axis
  if (!t || t->dtype() != a->type.dtype || t->rank() > y->type.rank()) return false;
  if (!can_replace(add->output(0), y)) return false;
  m = Match{matmul, add, bias, *n};
  return true;
}

bool apply(Graph& g, PassContext& ctx, const Match& m) {
  GraphPatch patch = make_patch(g);
  Node* fused = patch.add_node("MatMulBias", {m.matmul->input(0), m.matmul->input(1), as_1d_vector(patch, m.bias)}, 1,
                               {}, "octet", m.matmul->name() + "_bias");
  patch.replace_uses(m.add->output(0), fused->output(0));
  patch.remove_node(m.matmul);
  patch.remove_node(m.add);
  if (!ctx.apply(patch)) return false;
  import_octet_domain(g);
  ctx.count("octet.MatMulBias");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  return sweep_rewrites(g, "MatMul", [&](Node* n, const RemovedNodes&) {
    Match m;
    return match(n, m) && apply(g, ctx, m) ? std::vector<Node*>{m.matmul, m.add} : std::vector<Node*>{};
  });
}

}  // namespace

Pass fuse_matmul_bias() { return {"fuse_matmul_bias", run}; }

}  // namespace octet::passes
