// numpy arrays <-> octet::Tensor for the extension: inputs are read in place (views),
// outputs hand octet's memory to numpy without a copy.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <octet/octet.h>

namespace octet::python {

namespace nb = nanobind;
using Array = nb::ndarray<nb::c_contig, nb::device::cpu>;

// A view of `array` (C-contiguous; the Python wrapper makes it so); `name` is for errors.
Tensor tensor_view(const Array& array, const std::string& name);
// A numpy array that owns (shares) the tensor's memory.
nb::object to_numpy(const Tensor& tensor, const std::string& name);
// "float32", ... as the model declares it.
std::string type_name(ElementType type);

}  // namespace octet::python
