// octet._octet.quantize: octet::quantize with samples from a Python callable and progress
// reported to a Python callable. The C++ work runs without the GIL; the callbacks take it.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "numpy_tensors.h"

namespace nb = nanobind;

namespace octet::python {

namespace {

// Calls next_sample() until it returns None; each sample is [(name, array)]. The arrays
// are viewed, not copied: octet writes each sample to its temporary folder before asking
// for the next, and this source keeps the sample's arrays referenced until then.
class PythonSamples : public CalibrationSource {
 public:
  explicit PythonSamples(nb::object next_sample) : next_sample_(std::move(next_sample)) {}
  bool next(NamedTensors& sample) override {
    nb::gil_scoped_acquire gil;
    current_ = nb::object();
    nb::object got = next_sample_();
    if (got.is_none()) return false;
    current_ = got;
    for (nb::handle item : got) {
      auto name = nb::cast<std::string>(item[0]);
      auto array = nb::cast<Array>(item[1]);
      sample.emplace_back(name, tensor_view(array, name));
    }
    return true;
  }
  ~PythonSamples() override {
    nb::gil_scoped_acquire gil;
    current_ = nb::object();
    next_sample_ = nb::object();
  }

 private:
  nb::object next_sample_, current_;
};

std::pair<std::string, std::string> quantize(const std::string& model, const std::string& output, const QuantizeOptions& options,
                     std::optional<std::string> calibration_path, nb::object next_sample, nb::object progress) {
  // The callback holds a borrowed handle: octet copies callbacks while the GIL is
  // released, and copying an nb::object would touch its reference count without the GIL.
  // `progress` itself keeps the callable alive until this function returns.
  ProgressCallback report;
  if (!progress.is_none())
    report = [callable = nb::handle(progress)](const std::string& stage, size_t done, size_t total) {
      nb::gil_scoped_acquire gil;
      callable(stage, done, total);
    };
  std::optional<PythonSamples> samples;
  if (!next_sample.is_none()) samples.emplace(next_sample);
  QuantizeReport result;
  {
    nb::gil_scoped_release release;
    if (calibration_path) result = octet::quantize(model, output, options, *calibration_path, report);
    else result = octet::quantize(model, output, options, samples ? &*samples : nullptr, report);
  }
  return {result.json, result.text};
}

}  // namespace

void bind_quantize(nb::module_& m) {
  nb::class_<QuantizeOptions>(m, "QuantizeOptions", "octet::QuantizeOptions (include/octet/quantize.h).")
      .def(nb::init<>())
      .def_rw("mode", &QuantizeOptions::mode)
      .def_rw("target", &QuantizeOptions::target)
      .def_rw("method", &QuantizeOptions::method)
      .def_rw("percentile", &QuantizeOptions::percentile)
      .def_rw("activation_type", &QuantizeOptions::activation_type)
      .def_rw("per_channel", &QuantizeOptions::per_channel)
      .def_rw("quantize_attention", &QuantizeOptions::quantize_attention)
      .def_rw("attention_row_scales", &QuantizeOptions::attention_row_scales)
      .def_rw("rounding", &QuantizeOptions::rounding)
      .def_rw("quantize_embeddings", &QuantizeOptions::quantize_embeddings)
      .def_rw("embedding_min_kib", &QuantizeOptions::embedding_min_kib)
      .def_rw("exclude", &QuantizeOptions::exclude)
      .def_rw("per_token", &QuantizeOptions::per_token)
      .def_rw("smoothquant", &QuantizeOptions::smoothquant)
      .def_rw("smoothquant_min_outlier", &QuantizeOptions::smoothquant_min_outlier)
      .def_rw("max_drop", &QuantizeOptions::max_drop)
      .def_rw("metric", &QuantizeOptions::metric)
      .def_rw("explain", &QuantizeOptions::explain)
      .def_rw("max_samples", &QuantizeOptions::max_samples)
      .def_rw("holdout", &QuantizeOptions::holdout)
      .def_rw("sqnr_samples", &QuantizeOptions::sqnr_samples)
      .def_rw("external_data", &QuantizeOptions::external_data);
  m.def("quantize", &quantize, nb::arg("model"), nb::arg("output"), nb::arg("options"),
        nb::arg("calibration_path").none(), nb::arg("next_sample").none(), nb::arg("progress").none(),
        "Quantize `model` to `output`; samples from a path or from next_sample() -> [(name, array)] | None; "
        "progress(stage, done, total). Returns the report as (JSON, text table).");
}

}  // namespace octet::python
