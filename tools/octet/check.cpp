// `octet check MODEL [--target octet|ort|tensorrt] [--json]`: the type checker
// (src/check/type_check.h). One line per problem; exit 0 clean, 1 problems, 2 unreadable.
#include <iostream>

#include <nlohmann/json.hpp>

#include "check/node_structure.h"
#include "check/type_check.h"
#include "cli_common.h"
#include "octet/error.h"
#include "onnx/model_io.h"

namespace octet::cli {

namespace {

struct Options {
  std::string model, target = "octet";
  bool json = false;
};

const char* kFooter = R"(WHAT IS CHECKED
  Every node's input and output element types against its op's ONNX type constraints
  for the model's opset (the schema registry of the linked ONNX library, which knows
  opsets up to 17; newer nodes are checked against the newest schema it has, and a note
  says so): a type outside a type variable's allowed set, inputs that share a type
  variable (Add's A and B) with different types, fixed-type inputs of another type.
  Types stored in the file (value_info, outputs) that disagree with what the producing
  node makes. Nodes octet's own inference rejects for other reasons are reported too.

TARGETS (--target)
  octet     the ONNX rules only (octet runs every standard type combination it infers)
  ort       also onnxruntime's CPU kernels: the (op, types) combinations onnxruntime
            itself refuses at session creation (e.g. bfloat16 arithmetic), and no
            octet-domain ops
  tensorrt  also TensorRT's documented types: no float64 / 16-64-bit unsigned tensors,
            no octet or com.microsoft ops, no dynamic or integer-accumulator quantized ops

OUTPUT
  One line per problem: the node, its op, its inputs with their types, the rule broken
  and a suggested fix (usually `octet legalize`). --json prints the same as an object.

EXIT STATUS
  0 no problem found, 1 problems found, 2 the check did not run (unreadable model,
  unknown --target).)";

void check_command(const Options& o) {
  // Exit 1 means "problems found", so nothing else may end with 1: a bad --target or an
  // unreadable model is 2 (the check did not run).
  check::Target target{};
  Model model;
  try {
    target = quant::parse_target(o.target);
    LoadOptions load;
    load.infer_types = false;  // a type error is what we report, not a reason to stop
    model = load_model(o.model, load);
  } catch (const Error& e) {
    std::cerr << "octet: error: " << e.what() << "\n";
    throw ExitStatus{2};
  }
  check::CheckReport r = check::check_model_types(*model.graph, model.declared, target);
  for (std::string& note : check::check_model_versions(model.ir_version, model.graph->opset_imports))
    r.notes.insert(r.notes.begin(), std::move(note));
  if (o.json) {
    nlohmann::json problems = nlohmann::json::array();
    for (const auto& p : r.problems) problems.push_back(p.to_json());
    nlohmann::json j = {{"model", o.model},       {"target", quant::target_name(target)},
                        {"nodes", r.nodes_checked}, {"problems", problems},
                        {"notes", r.notes},       {"clean", r.problems.empty()}};
    std::cout << j.dump(2) << "\n";
  } else {
    for (const auto& p : r.problems) std::cout << p.to_text() << "\n";
    for (const auto& n : r.notes) std::cout << "note: " << n << "\n";
    std::cout << o.model << ": " << r.nodes_checked << " nodes, " << r.problems.size() << " problem"
              << (r.problems.size() == 1 ? "" : "s") << " (target " << quant::target_name(target) << ")\n";
  }
  if (!r.problems.empty()) throw ExitStatus{1};
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "check",
      "Check every node's element types against its op's ONNX type rules (and a target\n"
      "runtime's kernels); one line per problem naming node, op, input types, rule and fix.");
  cmd->add_option("model", opts->model, "ONNX model file to check")->required();
  cmd->add_option("--target", opts->target, "octet (default), ort or tensorrt; see TARGETS");
  cmd->add_flag("--json", opts->json, "Print the report as JSON");
  cmd->footer(kFooter);
  cmd->callback([opts] { check_command(*opts); });
}

}  // namespace octet::cli
