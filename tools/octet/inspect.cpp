// `octet inspect MODEL`: what is in a model and what it costs, as text or --json.
#include <iostream>

#include "analysis/model_summary.h"
#include "cli_common.h"

namespace octet::cli {

void add_inspect_command(CLI::App& app) {
  struct Options {
    std::string model;
    std::vector<std::string> dims;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Show a model's opsets, inputs and outputs with symbolic shapes, op histogram,\n"
      "parameters by dtype, estimated MACs per op type, and which ops octet supports.");
  cmd->add_option("model", opts->model, "ONNX model file")->required();
  cmd->add_option("--dim", opts->dims,
                  "Bind a symbolic dimension for the MAC estimate, e.g. --dim batch=1 --dim seq=128")
      ->type_name("NAME=VALUE");
  cmd->add_flag("--json", opts->json, "Print the report as JSON");
  cmd->callback([opts] {
    Bindings bindings = parse_dim_bindings(opts->dims);
    Model model = load_model(opts->model);
    nlohmann::json summary = summarize_model(model, bindings);
    if (opts->json) std::cout << summary.dump(2) << "\n";
    else std::cout << render_summary_text(summary);
  });
}

}  // namespace octet::cli
