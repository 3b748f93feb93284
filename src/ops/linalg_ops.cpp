// Matrix products: MatMul (numpy semantics) and Gemm. Conv/ConvTranspose live in
// linalg_conv.cpp, Einsum in linalg_einsum.cpp.
#include "ops/op_families.h"
#include "ops/op_registry.h"
#include "ops/shape_helpers.h"

namespace octet {

using namespace shape_rules;

namespace {

void require_same_dtype(const InferContext& ctx, size_t a, size_t b) {
  if (!ctx.has_input(b)) return;
  if (ctx.input_dtype(a) != ctx.input_dtype(b))
    ctx.fail("input ", b, " is ", ctx.input_type(b).to_string(), " but input ", a, " is ",
             ctx.input_type(a).to_string(), "; both must have the same element type");
}

void infer_matmul(InferContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  const DType dtype = ctx.input_dtype(0);
  const auto& a = ctx.input_dims(0);
  const auto& b = ctx.input_dims(1);
  if ((a && a->empty()) || (b && b->empty()))
    ctx.fail("inputs must have rank >= 1, got ", ctx.input_type(0).to_string(), " and ",
             ctx.input_type(1).to_string());
  if (!a || !b) {
    ctx.set_output(0, dtype, std::nullopt);
    return;
  }
  // 1-D operands are promoted to matrices ([K] -> [1, K] on the left, [K, 1] on the
  // right) and the added dim is removed again from the result.
  DimVector A = *a, B = *b;
  if (A.size() == 1) A.insert(A.begin(), Dim(1));
  if (B.size() == 1) B.push_back(1);
  const Dim& ka = A[A.size() - 1];
  const Dim& kb = B[B.size() - 2];
  unify_dims(ctx, ka, kb,
             "inner dimensions of " + ctx.input_type(0).to_string() + " and " + ctx.input_type(1).to_string() +
                 " differ");
  DimVector batch_a(A.begin(), A.end() - 2), batch_b(B.begin(), B.end() - 2);
  auto batch = broadcast_shapes(batch_a, batch_b);
  if (!batch)
    ctx.fail("batch dims of ", ctx.input_type(0).to_string(), " and ", ctx.input_type(1).to_string(),
             " do not broadcast");
  DimVector out = *batch;
  if (a->size() > 1) out.push_back(A[A.size() - 2]);
  if (b->size() > 1) out.push_back(B[B.size() - 1]);
  ctx.set_output(0, dtype, out);
}

void infer_gemm(InferContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  require_same_dtype(ctx, 0, 2);
  require_rank(ctx, 0, 2, "A");
  require_rank(ctx, 1, 2, "B");
  const bool ta = ctx.node().attr_int("transA", 0) != 0;
  const bool tb = ctx.node().attr_int("transB", 0) != 0;
  const auto& a = ctx.input_dims(0);
  const auto& b = ctx.input_dims(1);
  Dim m = a ? (*a)[ta ? 1 : 0] : Dim::fresh("gemm_m");
  Dim n = b ? (*b)[tb ? 0 : 1] : Dim::fresh("gemm_n");
  if (a && b)
    unify_dims(ctx, (*a)[ta ? 0 : 1], (*b)[tb ? 1 : 0],
               "inner dimensions of A " + ctx.input_type(0).to_string() + (ta ? " (transposed)" : "") + " and B " +
                   ctx.input_type(1).to_string() + (tb ? " (transposed)" : "") + " differ");
  if (ctx.has_input(2)) {
    // C broadcasts one way, to [M, N].
    if (const auto& c = ctx.input_dims(2)) {
      if (c->size() > 2) ctx.fail("C ", ctx.input_type(2).to_string(), " has rank > 2");
      const DimVector target{m, n};
      for (size_t i = 0; i < c->size(); ++i) {
        const Dim& cd = (*c)[c->size() - 1 - i];
        const Dim& td = target[1 - i];
        auto cc = cd.constant(), tc = td.constant();
        if (cc && *cc != 1 && tc && *cc != *tc)
          ctx.fail("C ", ctx.input_type(2).to_string(), " does not broadcast to [", m, ",", n, "]");
      }
    }
  }
  ctx.set_output(0, ctx.input_dtype(0), DimVector{m, n});
}

}  // namespace

void register_linalg_ops(OpRegistry& r) {
  add_rule<infer_matmul>(r, "MatMul");
  add_rule<infer_gemm>(r, "Gemm");
  register_linalg_conv_ops(r);
  register_linalg_einsum_ops(r);
}

}  // namespace octet
