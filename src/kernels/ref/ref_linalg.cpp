// Reference kernels MatMul and Gemm; Conv and Einsum live in ref_linalg_{conv,einsum}.cpp
// and are registered from here. Accumulation rules: see ref_linalg_common.h.
#include <cmath>
#include <limits>

#include "kernels/kernel.h"
#include "kernels/ref/ref_families.h"
#include "kernels/ref/ref_linalg_common.h"

namespace octet {
namespace ref_linalg {
namespace {

// MatMul with numpy semantics: a 1-D A is a row [1,K] and a 1-D B a column [K,1], the
// added dim removed from the result; leading (batch) dims broadcast.
void matmul_kernel(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  if (A.dtype() != B.dtype()) ctx.fail("A is ", A.describe(), " but B is ", B.describe());
  if (A.rank() == 0 || B.rank() == 0)
    ctx.fail("operands must have rank >= 1, got ", A.describe(), " and ", B.describe());
  std::vector<int64_t> a_shape = A.shape(), b_shape = B.shape();
  if (A.rank() == 1) a_shape.insert(a_shape.begin(), 1);
  if (B.rank() == 1) b_shape.push_back(1);
  const int64_t M = a_shape[a_shape.size() - 2], K = a_shape.back();
  const int64_t N = b_shape.back();
  if (b_shape[b_shape.size() - 2] != K)
    ctx.fail("inner dims differ: A ", A.describe(), " has K = ", K, ", B ", B.describe(), " has K = ",
             b_shape[b_shape.size() - 2]);

  // Broadcast the batch dims; per batch dim, the step in whole matrices of A and B.
  const int64_t a_batch_rank = static_cast<int64_t>(a_shape.size()) - 2;
  const int64_t b_batch_rank = static_cast<int64_t>(b_shape.size()) - 2;
  const int64_t rank = std::max(a_batch_rank, b_batch_rank);
  std::vector<int64_t> batch(rank), a_step(rank, 0), b_step(rank, 0);
  int64_t a_size = 1, b_size = 1;  // matrices per trailing block, innermost first
  for (int64_t d = rank - 1; d >= 0; --d) {
    const int64_t ai = d - (rank - a_batch_rank), bi = d - (rank - b_batch_rank);
    const int64_t a = ai >= 0 ? a_shape[ai] : 1, b = bi >= 0 ? b_shape[bi] : 1;
    if (a != b && a != 1 && b != 1)
      ctx.fail("batch dims of A ", A.describe(), " and B ", B.describe(), " do not broadcast");
    batch[d] = a == 1 ? b : a;
    if (a != 1) a_step[d] = a_size;
    if (b != 1) b_step[d] = b_size;
    a_size *= a;
    b_size *= b;
  }
  std::vector<int64_t> out_shape = batch;
  if (A.rank() > 1) out_shape.push_back(M);
  if (B.rank() > 1) out_shape.push_back(N);
  Tensor& out = ctx.allocate_output(0, A.dtype(), out_shape);

  dispatch(ctx, A.dtype(), [&](auto tag) {
    using Acc = decltype(tag);
    const std::vector<Acc> a = load<Acc>(A), b = load<Acc>(B);
    std::vector<Acc> c(static_cast<size_t>(out.numel()), Acc{0});
    const int64_t batches = shape_numel(batch);
    std::vector<int64_t> pos(rank, 0);
    int64_t a_mat = 0, b_mat = 0;
    for (int64_t i = 0; i < batches && M * N > 0; ++i) {
      matmul_accumulate(a.data() + a_mat * M * K, b.data() + b_mat * K * N, c.data() + i * M * N, M, K, N);
      for (int64_t d = rank - 1; d >= 0; --d) {
        a_mat += a_step[d];
        b_mat += b_step[d];
        if (++pos[d] < batch[d]) break;
        a_mat -= a_step[d] * batch[d];
        b_mat -= b_step[d] * batch[d];
        pos[d] = 0;
      }
    }
    store(out, c);
  });
}

// The elements of a [rows, cols] matrix transposed into a new row-major [cols, rows] one.
template <typename Acc>
std::vector<Acc> transposed(const std::vector<Acc>& m, int64_t rows, int64_t cols) {
  std::vector<Acc> t(m.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = m[r * cols + c];
  return t;
}

// Integer Gemm with alpha/beta other than 1: the ONNX reference computes
// (A*B)*alpha + C*beta in float64 and truncates back; saturate to stay defined.
int64_t truncate_to_int64(double v) {
  if (std::isnan(v)) return 0;
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(v);
}

// Gemm: Y = alpha * A' * B' + beta * C, A' = transA ? A^T : A (same for B); A and B are
// 2-D; the optional C broadcasts unidirectionally to [M, N]. As in the ONNX reference, C
// is not read when beta is 0 (its shape is still checked).
void gemm_kernel(KernelContext& ctx) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  const Tensor* C = ctx.optional_input(2);
  const Node& node = ctx.node();
  if (A.dtype() != B.dtype() || (C && C->dtype() != A.dtype()))
    ctx.fail("operands have different types: A ", A.describe(), ", B ", B.describe(),
             C ? ", C " + C->describe() : std::string());
  if (A.rank() != 2 || B.rank() != 2)
    ctx.fail("A and B must be 2-D, got ", A.describe(), " and ", B.describe());
  const bool trans_a = node.attr_int("transA", 0) != 0, trans_b = node.attr_int("transB", 0) != 0;
  const float alpha = node.attr_float("alpha", 1.0f), beta = node.attr_float("beta", 1.0f);
  const int64_t M = trans_a ? A.shape()[1] : A.shape()[0], K = trans_a ? A.shape()[0] : A.shape()[1];
  const int64_t KB = trans_b ? B.shape()[1] : B.shape()[0], N = trans_b ? B.shape()[0] : B.shape()[1];
  if (K != KB)
    ctx.fail("inner dims differ: A' is [", M, ",", K, "] (A ", A.describe(), ", transA ", trans_a,
             "), B' is [", KB, ",", N, "] (B ", B.describe(), ", transB ", trans_b, ")");
  // C's strides into [M, N]: 0 along a broadcast dim.
  int64_t c_row = 0, c_col = 0;
  if (C) {
    const auto& cs = C->shape();
    bool ok = C->rank() <= 2;
    const int64_t cm = C->rank() == 2 ? cs[0] : 1, cn = C->rank() >= 1 ? cs.back() : 1;
    ok = ok && (cm == M || cm == 1) && (cn == N || cn == 1);
    if (!ok) ctx.fail("C ", C->describe(), " does not broadcast to [", M, ",", N, "]");
    c_row = cm == 1 ? 0 : cn;
    c_col = cn == 1 ? 0 : 1;
  }
  Tensor& out = ctx.allocate_output(0, A.dtype(), {M, N});

  dispatch(ctx, A.dtype(), [&](auto tag) {
    using Acc = decltype(tag);
    std::vector<Acc> a = load<Acc>(A), b = load<Acc>(B);
    if (trans_a) a = transposed(a, K, M);
    if (trans_b) b = transposed(b, N, K);
    std::vector<Acc> y(static_cast<size_t>(M * N), Acc{0});
    matmul_accumulate(a.data(), b.data(), y.data(), M, K, N);
    std::vector<Acc> c;
    const bool use_c = C && beta != 0.0f;
    if (use_c) c = load<Acc>(*C);
    for (int64_t i = 0; i < M; ++i) {
      for (int64_t j = 0; j < N; ++j) {
        Acc& v = y[i * N + j];
        const Acc cv = use_c ? c[i * c_row + j * c_col] : Acc{0};
        if constexpr (std::is_same_v<Acc, uint64_t>) {
          if (alpha != 1.0f || (use_c && beta != 1.0f)) {
            const bool is_signed = dtype_is_signed(A.dtype());
            auto real = [&](uint64_t x) { return is_signed ? double(int64_t(x)) : double(x); };
            v = static_cast<uint64_t>(truncate_to_int64(real(v) * alpha + real(cv) * beta));
          } else {
            v += cv;
          }
        } else {
          v = static_cast<Acc>(alpha) * v + (use_c ? static_cast<Acc>(beta) * cv : Acc{0});
        }
      }
    }
    store(out, y);
  });
}

}  // namespace
}  // namespace ref_linalg

void register_ref_linalg(KernelRegistry& r) {
  r.add("", "MatMul", ref_linalg::matmul_kernel);
  r.add("", "Gemm", ref_linalg::gemm_kernel);
  ref_linalg::register_conv(r);
  ref_linalg::register_conv_transpose(r);
  ref_linalg::register_einsum(r);
}

}  // namespace octet
