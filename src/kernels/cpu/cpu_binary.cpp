// Add, Sub, Mul, Div on float32 with numpy broadcasting.
//
// Every case reduces to rows: after dropping size-1 output dims and merging neighbours
// that both operands walk contiguously (or both broadcast), the last dim is a run where
// each operand is either contiguous or one repeated value. So same-shape tensors are one
// row, x + scalar is one row against a scalar, [B,S,H] + [H] is B*S rows against one
// bias row, and a [B,1,1,S] mask on [B,H,S,S] scores is B*H*S rows of S. The outer dims
// are walked with strides, which is also the general fallback. Results are bit-identical
// to the reference (IEEE add/sub/mul/div in float32 either way).
#include <array>
#include <vector>

#include "kernels/cpu/simd_kernels.h"
#include "kernels/cpu/vec_ops.h"

namespace octet::cpu {
namespace {

constexpr int64_t kChunk = 4096;

struct Dim {
  int64_t size;
  std::array<int64_t, 2> stride;  // element strides of a and b; 0 where broadcast
};

// The collapsed iteration space, outermost first; empty when the output has one element.
// Returns false when the shapes do not broadcast (the reference kernel reports it).
bool collapse(const std::vector<int64_t>& sa, const std::vector<int64_t>& sb, std::vector<int64_t>& out_shape,
              std::vector<Dim>& dims) {
  const size_t rank = std::max(sa.size(), sb.size());
  out_shape.assign(rank, 1);
  std::vector<Dim> full(rank);
  std::array<int64_t, 2> running{1, 1};
  for (size_t k = 0; k < rank; ++k) {  // from the last dim backwards
    const size_t i = rank - 1 - k;
    const int64_t da = k < sa.size() ? sa[sa.size() - 1 - k] : 1;
    const int64_t db = k < sb.size() ? sb[sb.size() - 1 - k] : 1;
    if (da != db && da != 1 && db != 1) return false;
    out_shape[i] = da == 1 ? db : da;
    full[i] = {out_shape[i], {da == 1 ? 0 : running[0], db == 1 ? 0 : running[1]}};
    running[0] *= da;
    running[1] *= db;
  }
  dims.clear();
  for (const Dim& d : full) {
    if (d.size == 1) continue;
    if (!dims.empty()) {
      Dim& prev = dims.back();
      // prev walks contiguously into d for both operands: merge them into one dim.
      if (prev.stride[0] == d.stride[0] * d.size && prev.stride[1] == d.stride[1] * d.size) {
        prev.size *= d.size;
        prev.stride = d.stride;
        continue;
      }
    }
    dims.push_back(d);
  }
  return true;
}

template <BinaryOp Op>
void binary_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  std::vector<int64_t> out_shape;
  std::vector<Dim> dims;
  if (a.dtype() != DType::Float32 || b.dtype() != DType::Float32 || !collapse(a.shape(), b.shape(), out_shape, dims))
    return run_reference(ctx);
  Tensor& y = ctx.allocate_output_uninitialized(0, DType::Float32, out_shape);
  const int64_t total = y.numel();
  if (total == 0) return;
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* py = y.mutable_data<float>();
  const VecTable& t = vec_ops();
  const int op = static_cast<int>(Op);
  if (dims.empty()) {  // one element
    t.binary[op](pa, pb, py, 1);
    return;
  }
  const Dim inner = dims.back();
  dims.pop_back();
  const int64_t len = inner.size, rows = total / len;
  // One contiguous run of `count` output elements starting at `pos` within a row whose
  // operands start at a_row / b_row.
  auto run = [&](const float* a_row, const float* b_row, float* y_row, int64_t pos, int64_t count) {
    const float* ar = a_row + pos * inner.stride[0];
    const float* br = b_row + pos * inner.stride[1];
    if (inner.stride[0] && inner.stride[1]) t.binary[op](ar, br, y_row + pos, count);
    else if (inner.stride[0]) t.binary_rhs[op](ar, *br, y_row + pos, count);
    else t.binary_lhs[op](br, *ar, y_row + pos, count);
  };
  if (rows == 1) {
    parallel_ranges(ctx, (len + kChunk - 1) / kChunk, total, [&](int64_t begin, int64_t end) {
      const int64_t from = begin * kChunk, to = std::min(len, end * kChunk);
      run(pa, pb, py, from, to - from);
    });
    return;
  }
  parallel_ranges(ctx, rows, total, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      int64_t rest = r, oa = 0, ob = 0;
      for (size_t i = dims.size(); i-- > 0;) {
        const int64_t idx = rest % dims[i].size;
        rest /= dims[i].size;
        oa += idx * dims[i].stride[0];
        ob += idx * dims[i].stride[1];
      }
      run(pa + oa, pb + ob, py + r * len, 0, len);
    }
  });
}

}  // namespace

void register_cpu_binary(KernelRegistry& r) {
  r.add("", "Add", KernelDef{binary_kernel<BinaryOp::Add>, prepare_float32});
  r.add("", "Sub", KernelDef{binary_kernel<BinaryOp::Sub>, prepare_float32});
  r.add("", "Mul", KernelDef{binary_kernel<BinaryOp::Mul>, prepare_float32});
  r.add("", "Div", KernelDef{binary_kernel<BinaryOp::Div>, prepare_float32});
}

}  // namespace octet::cpu
