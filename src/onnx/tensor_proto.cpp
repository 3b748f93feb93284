// TensorProto <-> Tensor. Data may come as raw_data, as one of the typed repeated fields
// (which field depends on the dtype, see onnx.proto), or from external data. Every size
// is checked against what dtype and dims need before anything is allocated, so a hostile
// file cannot make us allocate by claiming huge dims.
#include <onnx/onnx_pb.h>

#include <bit>
#include <cstring>

#include "onnx/model_io.h"
#include "core/sizes.h"
#include "onnx/proto_convert.h"

namespace octet {

static_assert(std::endian::native == std::endian::little,
              "raw_data is little endian and is used in place; big-endian hosts need byte swapping");

namespace onnx_io {
namespace {

struct Layout {
  DType dtype;
  std::vector<int64_t> shape;
  int64_t numel;
  size_t bytes;
  std::string desc;  // "float32[64,64]"
};

Layout check_layout(const onnx::TensorProto& p, const std::string& context) {
  if (p.has_segment()) fail(context, ": segmented tensors are not supported");
  if (p.data_type() == 0) fail(context, " has no data_type");
  auto dtype = dtype_from_onnx(p.data_type());
  if (!dtype) fail(context, " has unknown data_type ", p.data_type());
  Layout l{*dtype, {p.dims().begin(), p.dims().end()}, 1, 0, ""};
  for (int64_t d : l.shape)
    if (d < 0) fail(context, " has a negative dimension in its dims ", shape_to_string(l.shape));
  // What the dims claim, compared with the data there before anything is allocated.
  const auto numel = try_numel(l.shape);
  const auto bytes = numel ? claimed_storage_bytes(l.dtype, *numel) : std::nullopt;
  if (!bytes) fail(context, " has dims ", shape_to_string(l.shape), ": too many elements");
  l.numel = *numel;
  l.bytes = static_cast<size_t>(*bytes);
  l.desc = dtype_name(l.dtype) + shape_to_string(l.shape);
  return l;
}

size_t element_align(DType t) {
  int bytes = dtype_bits(t) / 8;
  return bytes <= 1 ? 1 : static_cast<size_t>(std::min(bytes, 8));
}

// A typed field must hold exactly `expected` entries; says which field and what it has.
void check_count(int count, int64_t expected, const char* field, const Layout& l, const std::string& context) {
  if (count == expected) return;
  if (count == 0) fail(context, " (", l.desc, ") has no data (expected ", expected, " ", field, " values)");
  fail(context, " (", l.desc, ") has ", count, " ", field, " values, expected ", expected);
}

template <typename Src, typename Field>
Tensor copy_field(const Field& field, int64_t count, const char* name, const Layout& l, const std::string& context) {
  check_count(field.size(), count, name, l, context);
  Tensor t(l.dtype, l.shape);
  if (count > 0) std::memcpy(t.mutable_raw(), field.data(), sizeof(Src) * static_cast<size_t>(count));
  return t;
}

Tensor from_typed_fields(const onnx::TensorProto& p, const Layout& l, const std::string& context) {
  const int64_t n = l.numel;
  switch (l.dtype) {
    case DType::Float32: return copy_field<float>(p.float_data(), n, "float_data", l, context);
    case DType::Complex64: return copy_field<float>(p.float_data(), 2 * n, "float_data", l, context);
    case DType::Float64: return copy_field<double>(p.double_data(), n, "double_data", l, context);
    case DType::Complex128: return copy_field<double>(p.double_data(), 2 * n, "double_data", l, context);
    case DType::Int64: return copy_field<int64_t>(p.int64_data(), n, "int64_data", l, context);
    case DType::UInt64: return copy_field<uint64_t>(p.uint64_data(), n, "uint64_data", l, context);
    case DType::UInt32: {
      check_count(p.uint64_data_size(), n, "uint64_data", l, context);
      Tensor t(l.dtype, l.shape);
      uint8_t* out = t.mutable_raw();
      for (int64_t i = 0; i < n; ++i) {
        uint32_t v = static_cast<uint32_t>(p.uint64_data(static_cast<int>(i)));
        std::memcpy(out + 4 * i, &v, 4);
      }
      return t;
    }
    case DType::String: {
      check_count(p.string_data_size(), n, "string_data", l, context);
      return Tensor::strings(l.shape, {p.string_data().begin(), p.string_data().end()});
    }
    case DType::Int4: case DType::UInt4: case DType::Float4E2M1: case DType::Int2: case DType::UInt2: {
      // Already packed: each int32 holds one byte of two 4-bit or four 2-bit values, the
      // first element in the lowest bits.
      int64_t packed = static_cast<int64_t>(l.bytes);
      check_count(p.int32_data_size(), packed, "int32_data", l, context);
      Tensor t(l.dtype, l.shape);
      uint8_t* out = t.mutable_raw();
      for (int64_t i = 0; i < packed; ++i) out[i] = static_cast<uint8_t>(p.int32_data(static_cast<int>(i)));
      // The unused high bits of the last byte are zero by convention.
      const int64_t used_bits = n * dtype_bits(l.dtype) % 8;
      if (used_bits) out[packed - 1] &= static_cast<uint8_t>((1u << used_bits) - 1);
      return t;
    }
    case DType::Int32: case DType::Int16: case DType::Int8: case DType::UInt16: case DType::UInt8:
    case DType::Bool: case DType::Float16: case DType::BFloat16: case DType::Float8E4M3FN:
    case DType::Float8E4M3FNUZ: case DType::Float8E5M2: case DType::Float8E5M2FNUZ:
    case DType::Float8E8M0: {
      // One element per int32, holding the value (or the bit pattern, for 16- and 8-bit
      // floats) in its low bytes.
      check_count(p.int32_data_size(), n, "int32_data", l, context);
      Tensor t(l.dtype, l.shape);
      uint8_t* out = t.mutable_raw();
      const size_t width = static_cast<size_t>(dtype_bits(l.dtype) / 8);
      for (int64_t i = 0; i < n; ++i) {
        int32_t v = p.int32_data(static_cast<int>(i));
        if (l.dtype == DType::Bool) v = v != 0;
        std::memcpy(out + width * static_cast<size_t>(i), &v, width);  // little endian: low bytes
      }
      return t;
    }
    default:
      fail(context, " has data_type ", dtype_name(l.dtype), ", which octet cannot read");
  }
}

}  // namespace

Tensor tensor_from_proto(onnx::TensorProto& p, TensorSource& source, const std::string& context, bool steal) {
  const Layout l = check_layout(p, context);
  if (p.data_location() == onnx::TensorProto::EXTERNAL) {
    if (l.dtype == DType::String) fail(context, ": string tensors cannot use external data");
    auto buffer = source.external_bytes(p, l.bytes, element_align(l.dtype), context, l.desc);
    return Tensor(l.dtype, l.shape, std::move(buffer));
  }
  if (p.has_raw_data()) {
    if (l.dtype == DType::String) fail(context, ": string tensors cannot use raw_data");
    if (p.raw_data().size() != l.bytes)
      fail(context, " (", l.desc, ") has ", p.raw_data().size(), " bytes of raw_data, expected ", l.bytes);
    if (steal && l.bytes > 0) {
      // The tensor keeps the string alive; heap string storage is aligned for any element.
      std::shared_ptr<std::string> owner(p.release_raw_data());
      auto buffer = Buffer::borrow(reinterpret_cast<const uint8_t*>(owner->data()), owner->size(), owner);
      return Tensor(l.dtype, l.shape, std::move(buffer));
    }
    Tensor t(l.dtype, l.shape);
    if (l.bytes) std::memcpy(t.mutable_raw(), p.raw_data().data(), l.bytes);
    return t;
  }
  return from_typed_fields(p, l, context);
}

Tensor tensor_from_proto(const onnx::TensorProto& p, TensorSource& source, const std::string& context) {
  // Without `steal` the proto is only read.
  return tensor_from_proto(const_cast<onnx::TensorProto&>(p), source, context, /*steal=*/false);
}

Tensor sparse_to_dense(const onnx::SparseTensorProto& p, TensorSource& source, const std::string& context) {
  Tensor values = tensor_from_proto(p.values(), source, context + " values");
  Tensor indices = tensor_from_proto(p.indices(), source, context + " indices");
  if (values.dtype() == DType::String || dtype_bits(values.dtype()) % 8 != 0)
    fail(context, ": sparse tensors of ", dtype_name(values.dtype()), " are not supported");
  if (values.rank() != 1) fail(context, ": sparse values must be 1-D, got ", values.describe());
  const int64_t nnz = values.numel();
  std::vector<int64_t> dims(p.dims().begin(), p.dims().end());
  const int64_t rank = static_cast<int64_t>(dims.size());
  const auto dense_numel = try_numel(dims);
  if (!dense_numel || !try_storage_bytes(values.dtype(), *dense_numel))
    fail(context, ": sparse tensor has invalid dims ", shape_to_string(dims));
  const int64_t numel = *dense_numel;
  const bool linear = indices.rank() == 1;
  if (indices.dtype() != DType::Int64 || indices.rank() < 1 || indices.shape()[0] != nnz ||
      !(linear || (indices.rank() == 2 && indices.shape()[1] == rank)))
    fail(context, ": sparse indices ", indices.describe(), " do not fit ", nnz, " values of rank ", rank);
  const size_t width = static_cast<size_t>(dtype_bits(values.dtype()) / 8);
  if (static_cast<uint64_t>(numel) * width > (uint64_t{1} << 40))
    fail(context, ": sparse tensor ", shape_to_string(dims), " is too large to store densely");

  Tensor dense(values.dtype(), dims);
  const int64_t* idx = indices.data<int64_t>();
  for (int64_t i = 0; i < nnz; ++i) {
    int64_t pos = 0;
    if (linear) {
      pos = idx[i];
    } else {
      for (int64_t a = 0; a < rank; ++a) {
        int64_t k = idx[i * rank + a];
        if (k < 0 || k >= dims[a]) fail(context, ": sparse index ", k, " out of range for axis ", a);
        pos = pos * dims[a] + k;
      }
    }
    if (pos < 0 || pos >= numel) fail(context, ": sparse index ", pos, " out of range for ", shape_to_string(dims));
    std::memcpy(dense.mutable_raw() + width * pos, values.raw() + width * i, width);
  }
  return dense;
}

}  // namespace onnx_io

namespace {
// Public entry points promise owned memory: callers (test runners) may write to inputs.
Tensor owned(Tensor t) {
  if (!t.buffer() || t.buffer()->owns_memory()) return t;
  auto copy = Buffer::allocate(t.bytes());
  if (t.bytes()) std::memcpy(copy->mutable_data(), t.raw(), t.bytes());
  return Tensor(t.dtype(), t.shape(), std::move(copy));
}
}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::filesystem::path& base_dir,
                         const std::string& context) {
  onnx_io::TensorSource source(base_dir);
  return owned(onnx_io::tensor_from_proto(proto, source, context));
}

Tensor load_tensor_pb(const std::filesystem::path& path) {
  onnx::TensorProto proto;
  onnx_io::read_proto_file(path, proto, "TensorProto");
  const std::string name = proto.name().empty() ? "tensor" : "tensor '" + proto.name() + "'";
  try {
    return tensor_from_proto(proto, path.parent_path(), path.string() + ": " + name);
  } catch (const Error& e) {
    throw Error(onnx_io::one_line(e.what()));
  }
}

void tensor_to_proto(const Tensor& t, onnx::TensorProto* proto) {
  proto->clear_dims();
  for (int64_t d : t.shape()) proto->add_dims(d);
  proto->set_data_type(dtype_to_onnx(t.dtype()));
  proto->clear_float_data();
  proto->clear_int32_data();
  proto->clear_int64_data();
  proto->clear_double_data();
  proto->clear_uint64_data();
  proto->clear_string_data();
  proto->clear_external_data();
  proto->clear_data_location();
  proto->clear_raw_data();
  if (t.dtype() == DType::String) {
    for (const auto& s : t.string_data()) proto->add_string_data(s);
  } else {
    proto->set_raw_data(t.bytes() ? std::string(reinterpret_cast<const char*>(t.raw()), t.bytes()) : std::string());
  }
}

}  // namespace octet
