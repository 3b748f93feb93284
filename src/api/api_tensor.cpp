// The public Tensor and the public <-> internal conversions (api_internal.h).
#include <cstring>
#include <new>
#include <regex>

#include "api/api_internal.h"
#include "core/dtype.h"
#include "ir/dim.h"

namespace octet::v1 {

namespace {

// The public enum mirrors ONNX's numbering, as DType does; only these are exposed.
bool is_public(DType t) {
  switch (t) {
    case DType::Float32: case DType::UInt8: case DType::Int8: case DType::UInt16: case DType::Int16:
    case DType::Int32: case DType::Int64: case DType::String: case DType::Bool: case DType::Float16:
    case DType::Float64: case DType::UInt32: case DType::UInt64: case DType::BFloat16:
      return true;
    default:
      return false;
  }
}

std::vector<int64_t> checked_shape(std::vector<int64_t> shape) {
  for (int64_t d : shape)
    if (d < 0) fail("tensor shape ", shape_to_string(shape), " has a negative dim");
  return shape;
}

size_t checked_bytes(ElementType type, const std::vector<int64_t>& shape) {
  const DType t = api::to_internal(type);
  if (t == DType::String || t == DType::Undefined)
    fail("a tensor of ", element_type_name(type), " cannot be made from raw memory");
  return dtype_storage_bytes(t, shape_numel(shape));  // overflow-checked
}

}  // namespace

std::string element_type_name(ElementType type) {
  const DType t = static_cast<DType>(type);
  return is_public(t) ? dtype_name(t) : "undefined";
}

size_t element_size(ElementType type) {
  const DType t = static_cast<DType>(type);
  return is_public(t) && t != DType::String ? dtype_storage_bytes(t, 1) : 0;
}

Tensor::Tensor() : impl_(std::make_shared<Impl>()) {}

Tensor Tensor::view(ElementType type, std::vector<int64_t> shape, const void* data) {
  shape = checked_shape(std::move(shape));
  const size_t bytes = checked_bytes(type, shape);
  if (!data && bytes) fail("Tensor::view: null data for ", bytes, " bytes");
  // A no-op owner: the caller keeps the memory alive (Buffer needs a non-null owner to
  // know the memory is borrowed).
  std::shared_ptr<const void> owner(data ? data : &bytes, [](const void*) {});
  auto buffer = Buffer::borrow(static_cast<const uint8_t*>(data), bytes, std::move(owner));
  auto impl = std::make_shared<Impl>();
  impl->tensor = ::octet::Tensor(api::to_internal(type), std::move(shape), std::move(buffer));
  impl->view = true;
  return Tensor(std::move(impl));
}

Tensor Tensor::copy(ElementType type, std::vector<int64_t> shape, const void* data) {
  shape = checked_shape(std::move(shape));
  const size_t bytes = checked_bytes(type, shape);
  if (!data && bytes) fail("Tensor::copy: null data for ", bytes, " bytes");
  auto impl = std::make_shared<Impl>();
  impl->tensor = ::octet::Tensor::uninitialized(api::to_internal(type), std::move(shape));
  if (bytes) std::memcpy(impl->tensor.mutable_raw(), data, bytes);
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(ElementType type, std::vector<int64_t> shape) {
  shape = checked_shape(std::move(shape));
  checked_bytes(type, shape);
  auto impl = std::make_shared<Impl>();
  impl->tensor = ::octet::Tensor(api::to_internal(type), std::move(shape));
  return Tensor(std::move(impl));
}

ElementType Tensor::type() const { return api::to_public(impl_->tensor.dtype()); }
const std::vector<int64_t>& Tensor::shape() const { return impl_->tensor.shape(); }
int64_t Tensor::element_count() const { return impl_->tensor.dtype() == DType::Undefined ? 0 : impl_->tensor.numel(); }
size_t Tensor::byte_size() const { return impl_->tensor.bytes(); }
const void* Tensor::data() const { return impl_->tensor.raw(); }
bool Tensor::is_view() const { return impl_->view; }
std::string Tensor::describe() const { return impl_->tensor.describe(); }

void* Tensor::mutable_data() {
  const auto& buffer = impl_->tensor.buffer();
  if (!buffer) return nullptr;
  if (!buffer->writable()) fail("tensor ", describe(), " is a read-only view; copy it to write to it");
  return buffer->mutable_data();
}

void Tensor::check_type(ElementType requested) const {
  if (requested != type())
    fail("tensor ", describe(), " read as ", element_type_name(requested));
}

namespace api {

DType to_internal(ElementType type) {
  const DType t = static_cast<DType>(type);
  if (!is_public(t)) fail("element type ", static_cast<int>(type), " is not one octet's API knows");
  return t;
}

ElementType to_public(DType type) {
  if (type == DType::Undefined) return ElementType::Undefined;
  if (!is_public(type)) fail("a tensor of ", dtype_name(type), " cannot leave octet through the API");
  return static_cast<ElementType>(type);
}

TensorInfo tensor_info(const Value& value) {
  TensorInfo info;
  info.name = value.name();
  info.type = is_public(value.type.dtype) ? static_cast<ElementType>(value.type.dtype) : ElementType::Undefined;
  if (value.type.dims) {
    info.rank_known = true;
    for (const Dim& d : *value.type.dims) {
      if (auto c = d.constant()) info.shape.push_back({*c, ""});
      else info.shape.push_back({-1, d.to_string()});
    }
  }
  return info;
}

Tensor wrap(::octet::Tensor tensor) {
  auto impl = std::make_shared<Tensor::Impl>();
  // Memory octet does not own (a view of an input, a constant of the mapped file) is
  // copied, so what leaves the API never depends on the caller's or the model's memory.
  if (tensor.buffer() && !tensor.buffer()->owns_memory()) tensor = tensor.deep_copy();
  impl->tensor = std::move(tensor);
  return Tensor(std::move(impl));
}

const ::octet::Tensor& unwrap(const Tensor& tensor, const std::string& name) {
  if (!tensor.impl() || tensor.impl()->tensor.dtype() == DType::Undefined)
    fail("input '", name, "' is an empty tensor (no element type)");
  return tensor.impl()->tensor;
}

void rethrow_public(const std::string& file) {
  std::string message;
  try {
    throw;
  } catch (const Error& e) {
    if (!e.file().empty()) throw;
    message = e.what();
  } catch (const std::bad_alloc&) {
    message = "out of memory";
  }  // anything else (a caller's own exception from a CalibrationSource) passes unchanged
  static const std::regex node_pattern(R"(node '([^']*)')");
  std::smatch m;
  const std::string node = std::regex_search(message, m, node_pattern) ? m[1].str() : "";
  std::string reason = message;
  if (!file.empty() && reason.rfind(file + ": ", 0) == 0) reason = reason.substr(file.size() + 2);
  throw Error(message, file, node, reason);
}

}  // namespace api
}  // namespace octet::v1
