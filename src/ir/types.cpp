#include "ir/types.h"

#include "octet/error.h"

namespace octet {

bool TensorType::is_static() const {
  if (!dims) return false;
  for (const auto& d : *dims)
    if (!d.is_constant()) return false;
  return true;
}

std::vector<int64_t> TensorType::static_shape() const {
  if (!is_static()) fail("shape ", to_string(), " is not static");
  std::vector<int64_t> out;
  for (const auto& d : *dims) out.push_back(d.value());
  return out;
}

std::string TensorType::to_string() const {
  std::string s = dtype_name(dtype);
  s += dims ? dims_to_string(*dims) : "[?]";
  if (quant) s += quant->axis < 0 ? " (quantized per tensor)" : " (quantized per axis)";
  return s;
}

bool operator==(const TensorType& a, const TensorType& b) {
  return a.dtype == b.dtype && a.dims == b.dims;
}

}  // namespace octet
