// octet's public tensor: an element type, a shape and dense C-order data, either owned or
// a zero-copy view of the caller's memory. Part of the public API (octet/octet.h); nothing
// here needs octet's internal headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "octet/error.h"

// The public API lives in octet::v1 and is brought into octet by a using-directive, so
// users write octet::Session. The version namespace keeps the stable facade apart from
// octet's internal classes of the same names (octet::Session, octet::Tensor under src/):
// the library's own sources are compiled with OCTET_BUILDING_LIBRARY, which leaves the
// using-directive out, and name the public classes octet::v1::... .
namespace octet {
namespace v1 {

// Numbered as ONNX's TensorProto.DataType, the numbering model files use.
enum class ElementType : int32_t {
  Undefined = 0,
  Float32 = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Float64 = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,
};
// "float32", "int64", ...; "undefined" for anything else.
std::string element_type_name(ElementType type);
// Bytes per element (0 for String and Undefined).
size_t element_size(ElementType type);

class Tensor {
 public:
  Tensor();
  // Zero-copy: wraps `data` (dense, C order, shape product elements). The caller keeps the
  // memory alive and unchanged while a run that was given this tensor is in progress.
  static Tensor view(ElementType type, std::vector<int64_t> shape, const void* data);
  // Copies `data` into memory the tensor owns.
  static Tensor copy(ElementType type, std::vector<int64_t> shape, const void* data);
  // Zero-filled, owned.
  static Tensor zeros(ElementType type, std::vector<int64_t> shape);
  template <typename T>
  static Tensor from_vector(std::vector<int64_t> shape, const std::vector<T>& values);

  ElementType type() const;
  const std::vector<int64_t>& shape() const;
  int64_t element_count() const;
  size_t byte_size() const;
  const void* data() const;
  // Writable data; an octet::Error for a view of read-only memory.
  void* mutable_data();
  // True when the tensor borrows memory it does not own (a view).
  bool is_view() const;
  // The data as T; an octet::Error when T is not the element type.
  template <typename T>
  const T* data_as() const {
    check_type(type_of<T>());
    return static_cast<const T*>(data());
  }
  // "float32[1,128]"
  std::string describe() const;

  template <typename T>
  static constexpr ElementType type_of();

  // octet's own tensor behind this one (src/api only).
  struct Impl;
  explicit Tensor(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  const std::shared_ptr<const Impl>& impl() const { return impl_; }

 private:
  void check_type(ElementType requested) const;
  std::shared_ptr<const Impl> impl_;
};

using NamedTensor = std::pair<std::string, Tensor>;
using NamedTensors = std::vector<NamedTensor>;

template <typename T>
constexpr ElementType Tensor::type_of() {
  if constexpr (std::is_same_v<T, float>) return ElementType::Float32;
  else if constexpr (std::is_same_v<T, double>) return ElementType::Float64;
  else if constexpr (std::is_same_v<T, int8_t>) return ElementType::Int8;
  else if constexpr (std::is_same_v<T, uint8_t>) return ElementType::UInt8;
  else if constexpr (std::is_same_v<T, int16_t>) return ElementType::Int16;
  else if constexpr (std::is_same_v<T, uint16_t>) return ElementType::UInt16;
  else if constexpr (std::is_same_v<T, int32_t>) return ElementType::Int32;
  else if constexpr (std::is_same_v<T, uint32_t>) return ElementType::UInt32;
  else if constexpr (std::is_same_v<T, int64_t>) return ElementType::Int64;
  else if constexpr (std::is_same_v<T, uint64_t>) return ElementType::UInt64;
  else if constexpr (std::is_same_v<T, bool>) return ElementType::Bool;
  else static_assert(sizeof(T) == 0, "no octet element type for this C++ type");
}

template <typename T>
Tensor Tensor::from_vector(std::vector<int64_t> shape, const std::vector<T>& values) {
  static_assert(!std::is_same_v<T, bool>, "std::vector<bool> is not contiguous: use uint8_t data and ElementType::Bool");
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n != static_cast<int64_t>(values.size()))
    fail("Tensor::from_vector: ", values.size(), " values for a shape of ", n, " elements");
  return copy(type_of<T>(), std::move(shape), values.data());
}

}  // namespace v1
#ifndef OCTET_BUILDING_LIBRARY
using namespace v1;
#endif
}  // namespace octet
