// The strided-view copy behind the optimized Transpose and Slice.
//
// After dropping size-1 dims and merging neighbours the source walks contiguously (a
// [B,S,H,D] -> [B,H,S,D] transpose becomes [S,H,D'] with D' = D), the innermost dim is
// one of three cases:
//   - contiguous in the source: each row is one memcpy (Slice with step 1, transposes
//     that keep the last axis);
//   - strided, but some outer dim is contiguous in the source (the last axis moved): a
//     2-D transpose between that dim and the last, in tiles of one cache line per row so
//     both the reads and the writes stay in L1;
//   - otherwise (steps != 1 on the inner axis): an element loop with the source stride.
// The dims outside the inner kernel are walked by an odometer started at any unit, so
// the units split into per-thread ranges for large tensors.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_data_movement.h"
#include "kernels/cpu/simd_kernels.h"

namespace octet::cpu {
namespace {

struct MoveDim {
  int64_t size, src, dst;  // element strides of source and destination
};

// Size-1 dims dropped; neighbours merged where the outer one steps exactly over the inner.
std::vector<MoveDim> collapse(const ref_shape::StridedView& view) {
  std::vector<MoveDim> dims;
  int64_t dst_stride = 1;
  std::vector<MoveDim> full(view.shape.size());
  for (size_t i = view.shape.size(); i-- > 0;) {
    full[i] = {view.shape[i], view.strides[i], dst_stride};
    dst_stride *= view.shape[i];
  }
  for (const MoveDim& d : full) {
    if (d.size == 1) continue;
    if (!dims.empty() && dims.back().src == d.src * d.size && dims.back().dst == d.dst * d.size) {
      dims.back() = {dims.back().size * d.size, d.src, d.dst};
      continue;
    }
    dims.push_back(d);
  }
  return dims;
}

int64_t units_of(const std::vector<MoveDim>& dims) {
  int64_t n = 1;
  for (const MoveDim& d : dims) n *= d.size;
  return n;
}

// Walks the outer dims from any linear unit index, keeping both offsets (in elements).
class Odometer {
 public:
  Odometer(const std::vector<MoveDim>& dims, int64_t unit, int64_t src_base) : dims_(dims), index_(dims.size()) {
    src_ = src_base;
    for (size_t i = dims_.size(); i-- > 0;) {
      index_[i] = unit % dims_[i].size;
      unit /= dims_[i].size;
      src_ += index_[i] * dims_[i].src;
      dst_ += index_[i] * dims_[i].dst;
    }
  }
  int64_t src() const { return src_; }
  int64_t dst() const { return dst_; }
  int64_t index(size_t i) const { return index_[i]; }
  void next() {
    for (size_t i = dims_.size(); i-- > 0;) {
      src_ += dims_[i].src;
      dst_ += dims_[i].dst;
      if (++index_[i] < dims_[i].size) return;
      src_ -= dims_[i].src * dims_[i].size;
      dst_ -= dims_[i].dst * dims_[i].size;
      index_[i] = 0;
    }
  }

 private:
  const std::vector<MoveDim>& dims_;
  std::vector<int64_t> index_;
  int64_t src_ = 0, dst_ = 0;
};

template <typename T>
void strided_run(T* d, const T* s, int64_t n, int64_t stride) {
  for (int64_t i = 0; i < n; ++i) d[i] = s[i * stride];
}

void strided_run_bytes(uint8_t* d, const uint8_t* s, int64_t n, int64_t stride, size_t esize) {
  switch (esize) {
    case 1: return strided_run(d, s, n, stride);
    case 2: return strided_run(reinterpret_cast<uint16_t*>(d), reinterpret_cast<const uint16_t*>(s), n, stride);
    case 4: return strided_run(reinterpret_cast<uint32_t*>(d), reinterpret_cast<const uint32_t*>(s), n, stride);
    case 8: return strided_run(reinterpret_cast<uint64_t*>(d), reinterpret_cast<const uint64_t*>(s), n, stride);
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(d + i * esize, s + i * stride * static_cast<int64_t>(esize), esize);
  }
}

// Rows of at most this many bytes take copy_short_rows, up to kRowsPerUnit at a time.
constexpr size_t kShortRun = 256;
constexpr int64_t kRowsPerUnit = 64;

template <size_t kBytes>
void copy_rows_fixed(uint8_t* d, const uint8_t* s, int64_t rows, int64_t d_step, int64_t s_step) {
  for (int64_t r = 0; r < rows; ++r) std::memcpy(d + r * d_step, s + r * s_step, kBytes);
}

// `rows` rows of `run` bytes, the r-th from s + r * s_step to d + r * d_step (bytes).
// The common sizes get a copy of constant size; others a memcpy per row.
void copy_short_rows(uint8_t* d, const uint8_t* s, size_t run, int64_t rows, int64_t d_step, int64_t s_step) {
  switch (run) {
    case 4: return copy_rows_fixed<4>(d, s, rows, d_step, s_step);
    case 8: return copy_rows_fixed<8>(d, s, rows, d_step, s_step);
    case 16: return copy_rows_fixed<16>(d, s, rows, d_step, s_step);
    case 32: return copy_rows_fixed<32>(d, s, rows, d_step, s_step);
    case 64: return copy_rows_fixed<64>(d, s, rows, d_step, s_step);
    case 128: return copy_rows_fixed<128>(d, s, rows, d_step, s_step);
    default:
      for (int64_t r = 0; r < rows; ++r) std::memcpy(d + r * d_step, s + r * s_step, run);
  }
}

// d[a * d_row + b] = s[a + b * s_col] for a < rows, b < cols, in column blocks of kTile
// so the kTile source lines being read stay cached while the rows are written.
template <typename T>
void tile_transpose(T* d, const T* s, int64_t rows, int64_t cols, int64_t d_row, int64_t s_col) {
  constexpr int64_t kTile = 64 / sizeof(T);
  for (int64_t b0 = 0; b0 < cols; b0 += kTile) {
    const int64_t b1 = std::min(cols, b0 + kTile);
    for (int64_t a = 0; a < rows; ++a) {
      T* drow = d + a * d_row;
      const T* scol = s + a;
      for (int64_t b = b0; b < b1; ++b) drow[b] = scol[b * s_col];
    }
  }
}

void tile_transpose_bytes(uint8_t* d, const uint8_t* s, int64_t rows, int64_t cols, int64_t d_row,
                          int64_t s_col, size_t esize) {
  switch (esize) {
    case 1: return tile_transpose(d, s, rows, cols, d_row, s_col);
    case 2:
      return tile_transpose(reinterpret_cast<uint16_t*>(d), reinterpret_cast<const uint16_t*>(s), rows, cols,
                            d_row, s_col);
    case 4:
      return tile_transpose(reinterpret_cast<uint32_t*>(d), reinterpret_cast<const uint32_t*>(s), rows, cols,
                            d_row, s_col);
    default:
      return tile_transpose(reinterpret_cast<uint64_t*>(d), reinterpret_cast<const uint64_t*>(s), rows, cols,
                            d_row, s_col);
  }
}

}  // namespace

size_t element_bytes(DType dtype) {
  if (dtype == DType::String || dtype == DType::Undefined) return 0;
  const int bits = dtype_bits(dtype);
  return bits >= 8 && bits % 8 == 0 ? static_cast<size_t>(bits / 8) : 0;
}

void copy_strided(const KernelContext& ctx, uint8_t* dst, const uint8_t* src, size_t esize,
                  const ref_shape::StridedView& view) {
  const int64_t numel = shape_numel(view.shape);
  if (numel == 0) return;
  std::vector<MoveDim> dims = collapse(view);
  const int64_t es = static_cast<int64_t>(esize);
  if (dims.empty()) {
    std::memcpy(dst, src + view.base * es, esize);
    return;
  }
  const int64_t work = numel > kMoveParallelMinElements ? numel : 0;
  const MoveDim last = dims.back();
  dims.pop_back();

  if (last.src == 1) {  // contiguous rows
    const size_t run = static_cast<size_t>(last.size * es);
    if (run <= kShortRun && !dims.empty()) {
      // Short rows (a ViT patch Transpose moves rows of 16 floats): the next outer dim
      // is walked in blocks of up to kRowsPerUnit rows by a plain loop, each row a
      // fixed-size copy the compiler inlines, where an odometer step and a memcpy call
      // per 64 bytes cost more than the bytes. The blocks stay units, so threads can
      // split even a single outer dim.
      const MoveDim inner = dims.back();
      const int64_t block = std::min(inner.size, kRowsPerUnit);
      dims.back() = {(inner.size + block - 1) / block, inner.src * block, inner.dst * block};
      const size_t blocks = dims.size() - 1;
      const int64_t units = units_of(dims);
      parallel_ranges(ctx, units, work, [&](int64_t begin, int64_t end) {
        Odometer o(dims, begin, view.base);
        for (int64_t u = begin; u < end; ++u, o.next()) {
          const int64_t rows = std::min(block, inner.size - o.index(blocks) * block);
          copy_short_rows(dst + o.dst() * es, src + o.src() * es, run, rows, inner.dst * es, inner.src * es);
        }
      });
      return;
    }
    const int64_t units = units_of(dims);
    parallel_ranges(ctx, units, work, [&](int64_t begin, int64_t end) {
      Odometer o(dims, begin, view.base);
      for (int64_t u = begin; u < end; ++u, o.next()) std::memcpy(dst + o.dst() * es, src + o.src() * es, run);
    });
    return;
  }

  // The outer dim the source walks contiguously, if any: the last axis moved there.
  size_t j = dims.size();
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i].src == 1) j = i;
  if (j < dims.size() && (es == 1 || es == 2 || es == 4 || es == 8)) {
    // Rows of the tile are blocks of `tile` along dim j; the block index becomes the
    // innermost outer dim so threads can split a single 2-D transpose too.
    const int64_t tile = 64 / es;
    const MoveDim row = dims[j];
    dims.erase(dims.begin() + static_cast<int64_t>(j));
    dims.push_back({(row.size + tile - 1) / tile, tile, tile * row.dst});
    const size_t blocks = dims.size() - 1;
    const int64_t units = units_of(dims);
    parallel_ranges(ctx, units, work, [&](int64_t begin, int64_t end) {
      Odometer o(dims, begin, view.base);
      for (int64_t u = begin; u < end; ++u, o.next()) {
        const int64_t rows = std::min(tile, row.size - o.index(blocks) * tile);
        tile_transpose_bytes(dst + o.dst() * es, src + o.src() * es, rows, last.size, row.dst, last.src, esize);
      }
    });
    return;
  }

  const int64_t units = units_of(dims);
  parallel_ranges(ctx, units, work, [&](int64_t begin, int64_t end) {
    Odometer o(dims, begin, view.base);
    for (int64_t u = begin; u < end; ++u, o.next())
      strided_run_bytes(dst + o.dst() * es, src + o.src() * es, last.size, last.src, esize);
  });
}

void copy_columns(const KernelContext& ctx, const float* src, int64_t rows, int64_t n, int64_t col0, int64_t width,
                  float* dst) {
  ref_shape::StridedView view;
  view.shape = {rows, width};
  view.strides = {n, 1};
  view.base = col0;
  copy_strided(ctx, reinterpret_cast<uint8_t*>(dst), reinterpret_cast<const uint8_t*>(src), sizeof(float), view);
}

}  // namespace octet::cpu
