// `octet legalize MODEL -o OUT [--target octet|ort|tensorrt] [--compute-dtype fp32|fp16|keep]`:
// rewrites type mixes, packed-int weights and unsupported float types
// (src/legalize/legalize.h), writes OUT and reports what it changed and whether the result
// passes `octet check --target`.
#include <iostream>

#include <nlohmann/json.hpp>

#include "check/type_check.h"
#include "cli_common.h"
#include "legalize/legalize.h"
#include "onnx/model_io.h"

namespace octet::cli {

namespace fs = std::filesystem;

namespace {

struct Options {
  std::string model, out, target = "octet", compute = "keep";
  bool json = false, force = false, external_data = false;
};

const char* kFooter = R"(WHAT IT REWRITES (in this order)
  type mixes     inputs that ONNX requires to share a type (Add's A and B) but differ get
                 the fewest Casts: floats meet at the wider type (float16 with bfloat16 at
                 float32) or at --compute-dtype; an integer meeting a float is cast to the
                 float; an int32 MatMulInteger/ConvInteger accumulator is cast to float and
                 multiplied by its operands' scales
  packed weights GPTQ/AWQ QuantLinear weights unpacked in the graph from int32 qweight
                 (eight 4-bit values per int32), qzeros, float16 scales and g_idx become
                 standard 4-bit weights: blocked DequantizeLinear when the model imports
                 opset 21 or later (octet, tensorrt), else com.microsoft MatMulNBits
                 (always for ort; tensorrt below opset 21: left packed, reported). The
                 unpacked values must reproduce the graph's own weight, or nothing changes.
  float types    float16/bfloat16 nodes the target has no kernel for (onnxruntime CPU:
                 nearly all bfloat16) compute in float32, as regions with Casts only at
                 their borders; --compute-dtype fp32 does this for every such node
  casts          Cast pairs that round-trip exactly, and same-type Casts, are removed
Graph inputs and outputs keep their element types.

--compute-dtype keep (default) resolves float mixes at the wider type; fp32 computes all
float16/bfloat16 arithmetic in float32; fp16 resolves mixes at float16.

OUT is never the input model; an existing OUT is replaced only with --force. The result
is checked as `octet check --target` would; remaining problems are printed and make the
exit status 1 (the model is still written). The exit status is 1 for any error.)";

void legalize_command(const Options& o) {
  legalize::LegalizeOptions options;
  options.target = quant::parse_target(o.target);
  options.compute = legalize::parse_compute_dtype(o.compute);
  const fs::path out(o.out);
  check_output_paths(o.model, out, o.external_data, o.force, "legalized");

  LoadOptions load;
  load.infer_types = false;  // the type errors are what legalize fixes
  Model model = load_model(o.model, load);
  const legalize::LegalizeReport report = legalize::legalize(*model.graph, model.declared, options);
  // The strict check of the result, with the declared types it will be written with.
  const check::CheckReport after = check::check_model_types(*model.graph, {}, options.target);
  SaveOptions save;
  save.external_data = o.external_data;
  std::vector<std::string> warnings = model.warnings;
  for (std::string& w : save_model(model, out, save)) warnings.push_back(std::move(w));

  if (o.json) {
    nlohmann::json problems = nlohmann::json::array();
    for (const auto& p : after.problems) problems.push_back(p.to_json());
    nlohmann::json j = {{"model", o.model},
                        {"output", o.out},
                        {"target", quant::target_name(options.target)},
                        {"compute_dtype", legalize::compute_dtype_name(options.compute)},
                        {"legalize", report.to_json()},
                        {"check_after", {{"clean", after.problems.empty()}, {"problems", problems}, {"notes", after.notes}}},
                        {"warnings", warnings}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << o.model << " -> " << o.out << " (target " << quant::target_name(options.target) << ", compute "
              << legalize::compute_dtype_name(options.compute) << ")\n"
              << report.to_text();
    for (const auto& p : after.problems) std::cout << "still: " << p.to_text() << "\n";
    std::cout << "check --target " << quant::target_name(options.target) << " on the result: "
              << (after.problems.empty() ? "clean" : std::to_string(after.problems.size()) + " problem(s)") << "\n";
    for (const std::string& w : warnings) std::cout << "warning: " << w << "\n";
  }
  if (!after.problems.empty() || !report.unresolved.empty()) throw ExitStatus{1};
}

}  // namespace

void add_legalize_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "legalize",
      "Rewrite a model so its element types are consistent and its target runs it: Casts\n"
      "for float16/bfloat16/float32 and int/float mixes, GPTQ/AWQ packed int32 weights\n"
      "to standard int4, float32 compute where the target lacks 16-bit kernels.");
  cmd->add_option("model", opts->model, "ONNX model file to read")->required();
  cmd->add_option("-o,--output", opts->out, "ONNX file to write (required)")->type_name("OUT");
  cmd->add_option("--target", opts->target, "octet (default), ort or tensorrt");
  cmd->add_option("--compute-dtype", opts->compute, "fp32, fp16 or keep (default)");
  cmd->add_flag("--external-data", opts->external_data, "Write large initializers to OUT.data");
  cmd->add_flag("--force", opts->force, "Replace OUT if it exists (never the input model)");
  cmd->add_flag("--json", opts->json, "Print the report as JSON");
  cmd->footer(kFooter);
  cmd->callback([opts] { legalize_command(*opts); });
}

}  // namespace octet::cli
