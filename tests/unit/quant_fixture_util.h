// The exporter fixtures as the quantizer tests use them: loaded and cleaned at level 1,
// statically quantized (calibrated on the fixture's ONNX test-data set), and that data
// set's first sample as inputs.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "onnx/model_io.h"
#include "passes/pipeline.h"
#include "quant/calibrate.h"
#include "quant/calibration_data.h"
#include "quant/qdq_rewrite.h"
#include "quant/quantize_plan.h"

namespace octet::quant::testing {

inline const std::string kFixtures = std::string(OCTET_SOURCE_DIR) + "/tests/models/fixtures/";

inline std::shared_ptr<Graph> level1(const std::string& name) {
  Model m = load_model(kFixtures + name + ".onnx");
  OptimizeOptions o;
  o.level = 1;
  optimize(*m.graph, o);
  return std::shared_ptr<Graph>(std::move(m.graph));
}

inline std::vector<const Value*> required(const Graph& g) {
  std::vector<const Value*> v;
  for (const Value* i : g.inputs())
    if (!i->is_initializer()) v.push_back(i);
  return v;
}

// Static W8A8 of a fixture, calibrated on its ONNX test-data set.
inline std::shared_ptr<Graph> quantize_static(const std::string& name, const QuantizeOptions& o,
                                              QuantizePlan* plan_out = nullptr) {
  auto graph = level1(name);
  std::shared_ptr<const Graph> float_graph = level1(name);
  auto source = CalibrationSource::open(kFixtures + name + "_data", input_specs(required(*float_graph)));
  QuantizePlan plan = plan_quantization(*graph, o);
  std::vector<std::string> names;
  for (const Value* v : plan.activations) names.push_back(v->name());
  CalibrationResult c = calibrate(float_graph, names, source, {0}, o);
  write_quantized_graph(*graph, plan, c.table(), o);
  if (plan_out) *plan_out = plan;
  return graph;
}

inline NamedTensors fixture_inputs(const std::string& name, const Graph& g) {
  return CalibrationSource::open(kFixtures + name + "_data", input_specs(required(g))).sample(0);
}

}  // namespace octet::quant::testing
