#include "core/tensor.h"

#include "core/sizes.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace octet {

Buffer::~Buffer() { std::free(owned_); }

std::shared_ptr<Buffer> Buffer::allocate_uninitialized(size_t bytes) {
  auto b = std::make_shared<Buffer>();
  if (bytes > 0) {
    // aligned_alloc wants a size that is a multiple of the alignment.
    size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
    b->owned_ = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, rounded));
    if (bytes > kMaxTensorBytes || !b->owned_) throw OutOfMemory::allocating(bytes);
  }
  b->data_ = b->owned_;
  b->size_ = bytes;
  b->writable_ = true;
  return b;
}

std::shared_ptr<Buffer> Buffer::allocate(size_t bytes) {
  auto b = allocate_uninitialized(bytes);
  if (bytes > 0) std::memset(b->owned_, 0, bytes);
  return b;
}

std::shared_ptr<Buffer> Buffer::borrow_writable(uint8_t* data, size_t bytes,
                                                std::shared_ptr<void> owner) {
  auto b = std::make_shared<Buffer>();
  b->data_ = data;
  b->size_ = bytes;
  b->writable_ = true;
  b->owner_ = std::move(owner);
  return b;
}

std::shared_ptr<Buffer> Buffer::borrow(const uint8_t* data, size_t bytes,
                                       std::shared_ptr<const void> owner) {
  auto b = std::make_shared<Buffer>();
  b->data_ = data;
  b->size_ = bytes;
  b->owner_ = std::move(owner);
  return b;
}

uint8_t* Buffer::mutable_data() {
  OCTET_ASSERT(writable_ || size_ == 0, "write to a read-only borrowed (mapped) buffer");
  return const_cast<uint8_t*>(data_);
}

int64_t shape_numel(const std::vector<int64_t>& shape) { return checked_numel(shape, "tensor"); }

std::string shape_to_string(const std::vector<int64_t>& shape) {
  std::ostringstream out;
  out << '[';
  for (size_t i = 0; i < shape.size(); ++i) out << (i ? "," : "") << shape[i];
  out << ']';
  return out.str();
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_)
    if (d < 0) fail("tensor shape ", shape_to_string(shape_), " has a negative dimension");
  buffer_ = Buffer::allocate(dtype_storage_bytes(dtype_, numel()));
  if (dtype_ == DType::String) strings_.assign(static_cast<size_t>(numel()), "");
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape, std::shared_ptr<Buffer> buffer)
    : dtype_(dtype), shape_(std::move(shape)), buffer_(std::move(buffer)) {
  size_t expected = dtype_storage_bytes(dtype_, numel());
  size_t got = buffer_ ? buffer_->size() : 0;
  if (got != expected)
    fail("tensor ", describe(), " needs ", expected, " bytes but its data has ", got);
}

Tensor Tensor::uninitialized(DType dtype, std::vector<int64_t> shape) {
  OCTET_ASSERT(dtype != DType::String, "string tensors are always initialized");
  for (int64_t d : shape)
    if (d < 0) fail("tensor shape ", shape_to_string(shape), " has a negative dimension");
  size_t bytes = dtype_storage_bytes(dtype, shape_numel(shape));
  return Tensor(dtype, std::move(shape), Buffer::allocate_uninitialized(bytes));
}

Tensor Tensor::strings(std::vector<int64_t> shape, std::vector<std::string> values) {
  Tensor t;
  t.dtype_ = DType::String;
  t.shape_ = std::move(shape);
  if (static_cast<int64_t>(values.size()) != t.numel())
    fail("string tensor ", shape_to_string(t.shape_), " given ", values.size(), " values");
  t.strings_ = std::move(values);
  t.buffer_ = Buffer::allocate(0);
  return t;
}

int64_t Tensor::numel() const { return shape_numel(shape_); }

void Tensor::check_access(DType requested) const {
  if (requested != dtype_)
    fail("internal error: tensor ", describe(), " read as ", dtype_name(requested));
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  const uint8_t* p = raw();
  for (size_t i = 0; i < out.size(); ++i) {
    switch (dtype_) {
      case DType::Int64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); out[i] = v; break; }
      case DType::Int32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); out[i] = v; break; }
      case DType::Int16: { int16_t v; std::memcpy(&v, p + 2 * i, 2); out[i] = v; break; }
      case DType::UInt16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); out[i] = v; break; }
      case DType::UInt32: { uint32_t v; std::memcpy(&v, p + 4 * i, 4); out[i] = v; break; }
      case DType::UInt64: { uint64_t v; std::memcpy(&v, p + 8 * i, 8); out[i] = static_cast<int64_t>(v); break; }
      case DType::Int8: out[i] = static_cast<int8_t>(p[i]); break;
      case DType::UInt8: case DType::Bool: out[i] = p[i]; break;
      default: fail("tensor ", describe(), " is not an integer tensor");
    }
  }
  return out;
}

std::vector<float> Tensor::to_float_vector() const {
  std::vector<float> out(static_cast<size_t>(numel()));
  const uint8_t* p = raw();
  for (size_t i = 0; i < out.size(); ++i) {
    switch (dtype_) {
      case DType::Float32: std::memcpy(&out[i], p + 4 * i, 4); break;
      case DType::Float64: { double v; std::memcpy(&v, p + 8 * i, 8); out[i] = static_cast<float>(v); break; }
      case DType::Float16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); out[i] = half_to_float(v); break; }
      case DType::BFloat16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); out[i] = bfloat16_to_float(v); break; }
      default: {
        if (!dtype_is_integer(dtype_) && dtype_ != DType::Bool)
          fail("tensor ", describe(), " cannot be read as float32");
        if (dtype_bits(dtype_) < 8) fail("tensor ", describe(), ": sub-byte types need unpacking");
        return [&] {
          auto ints = to_int64_vector();
          return std::vector<float>(ints.begin(), ints.end());
        }();
      }
    }
  }
  return out;
}

std::string Tensor::describe() const { return dtype_name(dtype_) + shape_to_string(shape_); }

Tensor Tensor::deep_copy() const {
  if (dtype_ == DType::String) return Tensor::strings(shape_, strings_);
  Tensor copy = Tensor::uninitialized(dtype_, shape_);
  if (bytes() > 0) std::memcpy(copy.mutable_raw(), raw(), bytes());
  return copy;
}

Tensor transpose_matrix(const Tensor& t) {
  const size_t element = t.dtype() == DType::String ? 0 : dtype_storage_bytes(t.dtype(), 1);
  if (t.rank() != 2 || element == 0 || dtype_storage_bytes(t.dtype(), 8) != 8 * element)
    fail("transpose_matrix: needs a 2-D tensor of whole-byte elements, got ", t.describe());
  const int64_t rows = t.shape()[0], cols = t.shape()[1];
  Tensor out = Tensor::uninitialized(t.dtype(), {cols, rows});
  const uint8_t* in = t.raw();
  uint8_t* o = out.mutable_raw();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(o + (c * rows + r) * element, in + (r * cols + c) * element, element);
  return out;
}

}  // namespace octet
