#include "numpy_tensors.h"

#include <vector>

namespace octet::python {

namespace {

using nb::dlpack::dtype_code;

struct TypeMap {
  ElementType type;
  dtype_code code;
  uint8_t bits;
};
constexpr TypeMap kTypes[] = {
    {ElementType::Float32, dtype_code::Float, 32}, {ElementType::Float64, dtype_code::Float, 64},
    {ElementType::Float16, dtype_code::Float, 16}, {ElementType::BFloat16, dtype_code::Bfloat, 16},
    {ElementType::Int8, dtype_code::Int, 8},       {ElementType::Int16, dtype_code::Int, 16},
    {ElementType::Int32, dtype_code::Int, 32},     {ElementType::Int64, dtype_code::Int, 64},
    {ElementType::UInt8, dtype_code::UInt, 8},     {ElementType::UInt16, dtype_code::UInt, 16},
    {ElementType::UInt32, dtype_code::UInt, 32},   {ElementType::UInt64, dtype_code::UInt, 64},
    {ElementType::Bool, dtype_code::Bool, 8},
};

}  // namespace

Tensor tensor_view(const Array& array, const std::string& name) {
  const nb::dlpack::dtype dt = array.dtype();
  for (const TypeMap& m : kTypes) {
    if (dt.code != static_cast<uint8_t>(m.code) || dt.bits != m.bits || dt.lanes != 1) continue;
    std::vector<int64_t> shape;
    for (size_t i = 0; i < array.ndim(); ++i) shape.push_back(static_cast<int64_t>(array.shape(i)));
    return Tensor::view(m.type, std::move(shape), array.data());
  }
  fail("input '", name, "': numpy arrays of this element type (dlpack code ", int(dt.code), ", ", int(dt.bits),
       " bits) cannot be given to octet; use float32, float16, float64, an integer type or bool");
}

nb::object to_numpy(const Tensor& tensor, const std::string& name) {
  for (const TypeMap& m : kTypes) {
    if (m.type != tensor.type()) continue;
    std::vector<size_t> shape(tensor.shape().begin(), tensor.shape().end());
    // The capsule keeps octet's buffer alive as long as numpy uses it.
    auto* keep = new Tensor(tensor);
    nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
    nb::dlpack::dtype dt{static_cast<uint8_t>(m.code), m.bits, 1};
    nb::ndarray<nb::numpy> array(const_cast<void*>(keep->data()), shape.size(), shape.data(), owner, nullptr, dt);
    return array.cast();
  }
  fail("output '", name, "' is ", tensor.describe(), ", which octet's Python API cannot return as numpy");
}

std::string type_name(ElementType type) { return element_type_name(type); }

}  // namespace octet::python
