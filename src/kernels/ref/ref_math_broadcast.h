// Shape helpers for the math reference kernels: ONNX multidirectional broadcasting over
// concrete shapes, a walker that yields each operand's element offset for every output
// element, and axis normalization.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/kernel.h"

namespace octet::ref {

using Shape = std::vector<int64_t>;

// numpy-style broadcast of any number of shapes; nullopt when two dims conflict.
inline std::optional<Shape> broadcast_shapes(const std::vector<const Shape*>& shapes) {
  size_t rank = 0;
  for (const Shape* s : shapes) rank = std::max(rank, s->size());
  Shape out(rank, 1);
  for (const Shape* s : shapes) {
    const size_t offset = rank - s->size();
    for (size_t i = 0; i < s->size(); ++i) {
      const int64_t d = (*s)[i];
      int64_t& o = out[offset + i];
      if (d == o || d == 1) continue;
      if (o == 1) o = d;
      else return std::nullopt;
    }
  }
  return out;
}

// The broadcast shape of the given inputs, or an error naming the node and every shape.
inline Shape broadcast_or_fail(const KernelContext& ctx, const std::vector<const Tensor*>& ins) {
  std::vector<const Shape*> shapes;
  for (const Tensor* t : ins) shapes.push_back(&t->shape());
  auto out = broadcast_shapes(shapes);
  if (!out) {
    std::string list;
    for (const Tensor* t : ins) list += (list.empty() ? "" : ", ") + shape_to_string(t->shape());
    ctx.fail("cannot broadcast input shapes ", list);
  }
  return *out;
}

// Row-major strides of `shape` laid over the (right-aligned) `out` shape; 0 where the
// operand is broadcast (its dim is 1 or missing).
inline std::vector<int64_t> broadcast_strides(const Shape& shape, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  int64_t stride = 1;
  const size_t offset = out.size() - shape.size();
  for (size_t i = shape.size(); i-- > 0;) {
    strides[offset + i] = shape[i] == 1 ? 0 : stride;
    stride *= shape[i];
  }
  return strides;
}

// Walks the output elements in row-major order, tracking the offset of the matching element
// in each operand. Usage:
//   BroadcastWalker w(out_shape, {&a.shape(), &b.shape()});
//   for (int64_t i = 0; i < n; ++i, w.next()) out[i] = f(a[w.offset(0)], b[w.offset(1)]);
class BroadcastWalker {
 public:
  BroadcastWalker(const Shape& out, const std::vector<const Shape*>& operands)
      : out_(out), index_(out.size(), 0), offsets_(operands.size(), 0) {
    for (const Shape* s : operands) strides_.push_back(broadcast_strides(*s, out));
  }
  int64_t offset(size_t operand) const { return offsets_[operand]; }
  void next() {
    for (size_t d = out_.size(); d-- > 0;) {
      if (++index_[d] < out_[d]) {
        for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] += strides_[k][d];
        return;
      }
      index_[d] = 0;
      for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] -= strides_[k][d] * (out_[d] - 1);
    }
  }

 private:
  Shape out_;
  std::vector<int64_t> index_;
  std::vector<int64_t> offsets_;
  std::vector<std::vector<int64_t>> strides_;
};

// Normalizes an axis in [-rank, rank) to [0, rank); an error naming the node otherwise.
inline int64_t normalize_axis(const KernelContext& ctx, int64_t axis, int64_t rank,
                              const char* what = "axis") {
  if (axis < -rank || axis >= rank)
    ctx.fail(what, " ", axis, " is out of range for rank ", rank, " (allowed [", -rank, ", ",
             rank - 1, "])");
  return axis < 0 ? axis + rank : axis;
}

// Product of dims [begin, end).
inline int64_t product_of_dims(const Shape& s, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end && i < s.size(); ++i) n *= s[i];
  return n;
}

}  // namespace octet::ref
