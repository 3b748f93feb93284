// Concrete tensors: a dtype, a concrete shape, and bytes. The bytes live in a Buffer that
// either owns heap memory or borrows a region of a memory-mapped file (external data);
// the Buffer keeps whatever it borrows from alive, so tensors can be shared freely.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "octet/error.h"

namespace octet {

class Buffer {
 public:
  // Owned memory is aligned to this many bytes, so SIMD kernels can use aligned loads
  // at the start of every tensor.
  static constexpr size_t kAlignment = 64;

  Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();
  // Owning, zero-filled.
  static std::shared_ptr<Buffer> allocate(size_t bytes);
  // Owning, contents undefined: for kernels that write every byte of their output.
  static std::shared_ptr<Buffer> allocate_uninitialized(size_t bytes);
  // Borrowed, read-only: `owner` keeps `data` alive (e.g. a file mapping).
  static std::shared_ptr<Buffer> borrow(const uint8_t* data, size_t bytes,
                                        std::shared_ptr<const void> owner);
  // Borrowed and writable: a region of memory someone else manages (the session's
  // memory arena); `owner` keeps it alive.
  static std::shared_ptr<Buffer> borrow_writable(uint8_t* data, size_t bytes,
                                                 std::shared_ptr<void> owner);

  const uint8_t* data() const { return data_; }
  // Read-only borrowed buffers cannot be written; doing so is an internal error.
  uint8_t* mutable_data();
  size_t size() const { return size_; }
  bool owns_memory() const { return !owner_; }
  bool writable() const { return writable_; }

 private:
  uint8_t* owned_ = nullptr;  // aligned allocation freed by the destructor
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool writable_ = false;
  std::shared_ptr<const void> owner_;
};

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor of the given type and shape.
  Tensor(DType dtype, std::vector<int64_t> shape);
  // Wraps existing bytes; the buffer must hold exactly dtype_storage_bytes(numel) bytes.
  Tensor(DType dtype, std::vector<int64_t> shape, std::shared_ptr<Buffer> buffer);
  // A tensor whose contents are undefined until written (not for strings).
  static Tensor uninitialized(DType dtype, std::vector<int64_t> shape);
  // String tensors keep their elements separately (they are never computed on).
  static Tensor strings(std::vector<int64_t> shape, std::vector<std::string> values);

  template <typename T>
  static Tensor from_vector(std::vector<int64_t> shape, const std::vector<T>& values);
  template <typename T>
  static Tensor scalar(T value) { return from_vector<T>({}, {value}); }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t numel() const;
  size_t bytes() const { return buffer_ ? buffer_->size() : 0; }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  const std::vector<std::string>& string_data() const { return strings_; }

  const uint8_t* raw() const { return buffer_ ? buffer_->data() : nullptr; }
  uint8_t* mutable_raw() { return buffer_ ? buffer_->mutable_data() : nullptr; }

  template <typename T>
  const T* data() const {
    check_access(dtype_of<T>());
    return reinterpret_cast<const T*>(raw());
  }
  template <typename T>
  T* mutable_data() {
    check_access(dtype_of<T>());
    return reinterpret_cast<T*>(mutable_raw());
  }

  // Integer contents widened to int64 (any integer or bool dtype); used for shape math.
  std::vector<int64_t> to_int64_vector() const;
  // Floating or integer contents converted to float32.
  std::vector<float> to_float_vector() const;

  std::string describe() const;  // "float32[2,3]"
  // A copy in fresh heap memory of its own: for keeping a tensor whose buffer is
  // borrowed (a run's arena, a file mapping) beyond the borrow.
  Tensor deep_copy() const;

 private:
  void check_access(DType requested) const;

  DType dtype_ = DType::Undefined;
  std::vector<int64_t> shape_;
  std::shared_ptr<Buffer> buffer_;
  std::vector<std::string> strings_;
};

int64_t shape_numel(const std::vector<int64_t>& shape);
// The transpose of a 2-D tensor of any dtype of whole bytes per element (a weight matrix
// turned from [N, K] into [K, N]), in new memory.
Tensor transpose_matrix(const Tensor& t);
std::string shape_to_string(const std::vector<int64_t>& shape);

template <typename T>
Tensor Tensor::from_vector(std::vector<int64_t> shape, const std::vector<T>& values) {
  Tensor t(dtype_of<T>(), std::move(shape));
  if (static_cast<int64_t>(values.size()) != t.numel())
    fail("Tensor::from_vector: ", values.size(), " values for shape ", shape_to_string(t.shape()));
  T* out = t.mutable_data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

}  // namespace octet
