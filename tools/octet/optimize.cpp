// `octet optimize MODEL -o OUT`: runs the standard optimizer (optionally on a model
// specialized to fixed --dim sizes) and writes the result as ONNX, fused ops in the
// `octet` domain, with a report of what each pass did.
#include <iostream>

#include "analysis/model_files.h"
#include "analysis/model_summary.h"
#include "cli_common.h"
#include "model_prep.h"

namespace octet::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Options {
  std::string model, out;
  std::vector<std::string> dims;
  int level = 2;
  bool json = false, external_data = false, force = false;
};

const char* kFooter = R"(LEVELS
  0  nothing (a plain load and save: types inferred, value_info written)
  1  cleanup: dead nodes and unused initializers, Identity / inference Dropout /
     same-type Cast removal, constant folding, shape-value folding
  2  level 1 + fusions: Erf- and tanh-GeLU -> octet.Gelu, decomposed LayerNorm ->
     LayerNormalization, decomposed RMSNorm -> RMSNormalization, a Conv whose stride
     equals its kernel read as tokens or channels-last (ViT's patch embedding) ->
     patch Transpose + MatMul, MatMul + constant
     bias -> octet.MatMulBias (the default)

The output computes what the input computes (fp32 within float rounding). Ops in the
`octet` domain are octet's own: octet runs them, other runtimes do not.

--dim NAME=N fixes a named symbolic dim of the inputs (batch, seq) before optimizing, so
what depends on it folds to constants (e.g. GPT-2's causal mask). The written model then
accepts only inputs of that size.

OUT is never the input model or one of its external data files; an existing OUT is
replaced only with --force. --external-data writes initializers of 1 KiB and more to
OUT.data next to OUT.

The exit status is 0 on success and 1 for any error (one line on stderr).)";

void optimize_command(const Options& o) {
  const fs::path out(o.out);
  SaveOptions save;
  save.external_data = o.external_data;
  check_output_paths(o.model, out, o.external_data, o.force, "optimized");

  PrepareOptions prep;
  prep.dims = o.dims;
  prep.level = o.level;
  PreparedModel p = prepare_model(o.model, prep);
  std::vector<std::string> warnings = p.model.warnings;
  for (const std::string& w : save_model(p.model, out, save)) warnings.push_back(w);

  if (o.json) {
    json j = {{"model", o.model},
              {"output", o.out},
              {"level", o.level},
              {"specialized", p.specialized},
              {"optimizer", p.report.to_json()},
              {"fused_ops", octet_op_counts(*p.model.graph)},
              {"output_bytes", model_files(out).bytes},
              {"timing_ms", {{"load", p.load_ms}, {"optimize", p.optimize_ms}}},
              {"warnings", warnings}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << o.model << " -> " << o.out << " (level " << o.level;
  for (const auto& [name, value] : p.specialized) std::cout << ", " << name << "=" << value;
  std::cout << ")\n" << p.report.to_text();
  const auto fused = octet_op_counts(*p.model.graph);
  if (!fused.empty()) {
    std::cout << "octet-domain ops:";
    const char* sep = " ";
    for (const auto& [op, n] : fused) std::cout << sep << op << " " << n, sep = ", ";
    std::cout << "\n";
  }
  for (const std::string& w : warnings) std::cout << "warning: " << w << "\n";
}

}  // namespace

void add_optimize_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "optimize",
      "Optimize a model (folding, cleanup, fusions into octet-domain ops) and write it as\n"
      "ONNX, with a report of what each pass changed.");
  cmd->add_option("model", opts->model, "ONNX model file to read")->required();
  cmd->add_option("-o,--output", opts->out, "ONNX file to write (required)")->type_name("OUT");
  cmd->add_option("--level", opts->level, "Optimization level 0, 1 or 2 (default 2; see LEVELS)");
  cmd->add_option("--dim", opts->dims, "Fix a named symbolic dim before optimizing, e.g. --dim batch=1 --dim seq=128")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  cmd->add_flag("--external-data", opts->external_data, "Write large initializers to OUT.data");
  cmd->add_flag("--force", opts->force, "Replace OUT if it exists (never the input model)");
  cmd->add_flag("--json", opts->json, "Print the report as JSON");
  cmd->footer(kFooter);
  cmd->callback([opts] { optimize_command(*opts); });
}

}  // namespace octet::cli
