// `octet inspect MODEL`: what is in a model and what it costs, as text or --json;
// with --optimized, the model after the standard optimizer and what the optimizer did.
#include <iostream>

#include "analysis/model_summary.h"
#include "cli_common.h"
#include "model_prep.h"

namespace octet::cli {

void add_inspect_command(CLI::App& app) {
  struct Options {
    std::string model;
    std::vector<std::string> dims;
    bool json = false, optimized = false;
    int level = -1;  // -1: not given
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Show a model's opsets, inputs and outputs with symbolic shapes, op histogram,\n"
      "parameters by dtype, estimated MACs per op type, which ops octet supports, and the\n"
      "ops the optimizer fused (octet domain).");
  cmd->add_option("model", opts->model, "ONNX model file")->required();
  cmd->add_option("--dim", opts->dims,
                  "Bind a symbolic dimension for the MAC estimate, e.g. --dim batch=1 --dim seq=128;\n"
                  "with --optimized, the named input dims are also fixed before optimizing,\n"
                  "as `octet bench` does")
      ->type_name("NAME=VALUE");
  cmd->add_flag("--optimized", opts->optimized,
                "Inspect the model after the standard optimizer (as `octet optimize` and\n"
                "`octet bench` produce it) and show the optimizer's report");
  cmd->add_option("--level", opts->level, "Optimizer level for --optimized: 0, 1 or 2 (default 2; implies --optimized)");
  cmd->add_flag("--json", opts->json, "Print the report as JSON");
  cmd->callback([opts] {
    Bindings bindings = parse_dim_bindings(opts->dims);
    nlohmann::json summary;
    if (opts->optimized || opts->level >= 0 || opts->level < -1) {
      PrepareOptions prep;
      prep.dims = opts->dims;
      prep.level = opts->level == -1 ? 2 : opts->level;
      prep.skip_unknown_dims = true;
      PreparedModel p = prepare_model(opts->model, prep);
      summary = summarize_model(p.model, bindings);
      summary["optimizer"] = p.report.to_json();
      summary["optimizer"]["level"] = prep.level;
      summary["optimizer"]["specialized"] = p.specialized;
    } else {
      summary = summarize_model(load_model(opts->model), bindings);
    }
    if (opts->json) std::cout << summary.dump(2) << "\n";
    else std::cout << render_summary_text(summary);
  });
}

}  // namespace octet::cli
