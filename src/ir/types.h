// The type of a value in the IR: element type, symbolic shape (or unknown rank), and
// optionally the quantization parameters that make an integer tensor mean real numbers.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "ir/dim.h"

namespace octet {

// Quantization rides on the type: real = (q - zero_point) * scale, per tensor
// (one scale), per axis (scales.size() == dims[axis]) or blocked along `axis`.
struct QuantParams {
  std::vector<float> scales;
  std::vector<int32_t> zero_points;  // empty means all zero
  int64_t axis = -1;                 // -1: per tensor
  int64_t block_size = 0;            // 0: not blocked
};

struct TensorType {
  DType dtype = DType::Undefined;
  std::optional<DimVector> dims;  // nullopt: rank unknown
  std::shared_ptr<const QuantParams> quant;

  TensorType() = default;
  TensorType(DType t, std::optional<DimVector> d) : dtype(t), dims(std::move(d)) {}

  bool known() const { return dtype != DType::Undefined; }
  bool has_rank() const { return dims.has_value(); }
  int64_t rank() const { return dims ? static_cast<int64_t>(dims->size()) : -1; }
  // True when every dim is a known integer.
  bool is_static() const;
  std::vector<int64_t> static_shape() const;  // throws unless is_static()

  std::string to_string() const;  // "float32[batch,seq,768]", "int64[?]" for unknown rank
};

bool operator==(const TensorType& a, const TensorType& b);
inline bool operator!=(const TensorType& a, const TensorType& b) { return !(a == b); }

}  // namespace octet
