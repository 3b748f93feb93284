// octet._octet: the compiled half of the Python package (python/octet/ is the other). It
// binds the public C++ API as directly as it can; the onnxruntime-style surface, argument
// conversion and calibration preprocessing live in Python.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "numpy_tensors.h"

namespace nb = nanobind;

namespace octet::python {

void bind_quantize(nb::module_& m);
void bind_generate(nb::module_& m);

namespace {

PyObject* g_error_type = nullptr;  // octet.OctetError, created below

// octet::Error -> octet.OctetError(message) with .file, .node and .reason.
void translate_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    nb::object type = nb::borrow(g_error_type);
    nb::object instance = type(e.what());
    instance.attr("file") = e.file();
    instance.attr("node") = e.node();
    instance.attr("reason") = e.reason();
    PyErr_SetObject(g_error_type, instance.ptr());
  }
}

// (name, type name, shape): dims as int, or str for symbols.
nb::list describe(const std::vector<TensorInfo>& infos) {
  nb::list out;
  for (const TensorInfo& info : infos) {
    nb::object shape = nb::none();
    if (info.rank_known) {
      nb::list dims;
      for (const Dimension& d : info.shape) {
        if (d.known()) dims.append(nb::int_(d.value));
        else dims.append(nb::str(d.symbol.c_str()));
      }
      shape = dims;
    }
    out.append(nb::make_tuple(info.name, type_name(info.type), shape));
  }
  return out;
}

nb::list run(const Session& session, const std::vector<std::string>& output_names,
             const std::vector<std::pair<std::string, Array>>& feed) {
  NamedTensors inputs;
  for (const auto& [name, array] : feed) inputs.emplace_back(name, tensor_view(array, name));
  NamedTensors outputs;
  {
    // The arrays stay referenced by `feed` while the GIL is released; other Python
    // threads may run the same session meanwhile.
    nb::gil_scoped_release release;
    outputs = session.run(inputs, output_names);
  }
  nb::list out;
  for (const auto& [name, tensor] : outputs) out.append(to_numpy(tensor, name));
  return out;
}

Session session_from_bytes(nb::bytes data, int threads, int level, bool adapt_threads) {
  Model model = Model::load_bytes(data.c_str(), data.size(), ".", "<bytes>");
  return Session(std::move(model), SessionOptions{threads, level, adapt_threads});
}

}  // namespace
}  // namespace octet::python

NB_MODULE(_octet, m) {
  using namespace octet;
  using namespace octet::python;
  m.doc() = "octet's compiled core; use the `octet` package (octet.InferenceSession, octet.quantize).";

  static nb::exception<Error> error_type(m, "OctetError", PyExc_RuntimeError);
  g_error_type = error_type.ptr();
  nb::register_exception_translator(translate_error);

  nb::class_<Session>(m, "Session")
      .def("__init__",
           [](Session* self, const std::string& path, int threads, int level, bool adapt_threads) {
             new (self) Session(path, SessionOptions{threads, level, adapt_threads});
           },
           nb::arg("path"), nb::arg("threads") = 0, nb::arg("optimization_level") = 2, nb::arg("adapt_threads") = true,
           nb::call_guard<nb::gil_scoped_release>(), "Load, optimize and prepare the model at `path`.")
      .def_static("from_bytes", &session_from_bytes, nb::arg("data"), nb::arg("threads") = 0,
                  nb::arg("optimization_level") = 2, nb::arg("adapt_threads") = true,
                  "The same from a serialized ONNX model.")
      .def("inputs", [](const Session& s) { return describe(s.inputs()); },
           "[(name, element type, shape)] of the inputs a run needs; symbolic dims are str.")
      .def("outputs", [](const Session& s) { return describe(s.outputs()); }, "The same for the outputs.")
      .def("run", &run, nb::arg("output_names"), nb::arg("feed"),
           "Run on [(name, C-contiguous array)]; returns the named outputs (all when empty) as numpy arrays.")
      .def_prop_ro("threads", &Session::threads);

  m.def("model_inputs",
        [](const std::string& path) { return describe(Model::load(path).inputs()); }, nb::arg("path"),
        "The inputs of the model at `path` as Session.inputs() lists them.");

  bind_quantize(m);
  bind_generate(m);
}
