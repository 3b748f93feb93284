// `octet run MODEL`: optimizes a model and runs it on octet's kernels with inputs from files or
// generated ones, reports every output (stats, NaN/Inf counts, time), writes outputs as
// .npy, and in --test-data mode checks them against stored expected outputs.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>

#include "cli_common.h"
#include "io/npy.h"
#include "model_prep.h"
#include "onnx/model_io.h"
#include "onnx/test_data.h"
#include "run_inputs.h"
#include "run_report.h"

namespace octet::cli {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Options {
  std::string model;
  std::vector<std::string> inputs, dims;
  bool random = false, json = false;
  uint64_t seed = 0;
  std::string out, test_data;
  double rtol = 1e-4, atol = 1e-5;
  int threads = 0, level = 2;
  bool reference = false;
};

const char* kFooter = R"(INPUTS
  --input NAME=FILE reads one input from a .npy file, an ONNX TensorProto .pb file, or an
  .npz archive (the array called NAME, or its only array). --input FILE.npz alone gives
  every array of the archive to the input of the same name; --input FILE alone is fine
  for a model with one input. Dtype and rank must match the model; symbolic dims (batch,
  seq) are bound from the files and must agree across inputs.

RANDOM INPUTS (--random fills every input not given by --input; --seed makes it repeatable)
  inputs named *mask*                        all ones / true (attend everywhere)
  integer inputs named *token_type*/*segment* zeros (one segment)
  integer inputs named *position_ids*        0, 1, 2, ... along the last axis
  integer inputs used as Gather indices      uniform in [0, n), n = the gathered axis
    (directly or through Cast/Reshape/Unsqueeze/Squeeze/Flatten/Identity/Expand/
    Transpose/Slice/Tile/Concat), e.g. input_ids get ids within the vocabulary
  other integer inputs                       ones; other bool inputs: true
  float inputs                               normal(0, 1)
  Shapes come from --dim (--dim batch=1 --dim seq=128) and from the inputs given as
  files; a dim the model leaves unnamed is set per input as --dim INPUT:AXIS=N.

OUTPUTS
  Each output is summarized (dtype, shape, min/max/mean of the finite values, NaN and
  Inf counts). --out DIR writes DIR/<name>.npy per output (names with characters other
  than letters, digits, '.', '_' and '-' get '_' instead); --out FILE.npz writes one
  archive. Files the command reads are never overwritten.

TEST DATA (--test-data DIR)
  DIR holds input_<i>.pb/output_<i>.pb (ONNX TensorProto files), or subfolders that do
  (test_data_set_0/, test_data_set_1/, ...; the layout of onnx's backend tests). Every set
  runs on one session (sets may differ in batch and seq), and each output_<i>.pb is
  compared with numpy.allclose semantics, |actual - expected| <= atol + rtol*|expected|
  (NaN matches NaN). The report gives max abs and max rel error per output; the exit
  status is 1 if any output is out of tolerance. --out OUT writes each set's outputs to
  OUT/<set name>/.

The exit status is 0 on success, 1 for any error or mismatch (one line on stderr).)";

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

std::string sanitize(const std::string& name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (s.empty() || s[0] == '.') s.insert(0, "_");
  return s;
}

// File names for the outputs: sanitized, made unique, and checked against every file the
// command reads before anything is written.
std::vector<fs::path> output_paths(const fs::path& dir, const NamedTensors& outputs,
                                   const std::vector<fs::path>& protected_files) {
  std::vector<fs::path> paths;
  std::set<std::string> used;
  for (const auto& [name, tensor] : outputs) {
    std::string base = sanitize(name), file = base + ".npy";
    for (int k = 2; used.count(file); ++k) file = base + "_" + std::to_string(k) + ".npy";
    used.insert(file);
    fs::path p = dir / file;
    std::error_code ec;
    for (const fs::path& f : protected_files)
      if (fs::exists(p, ec) && fs::equivalent(p, f, ec))
        fail("--out ", dir.string(), ": writing output '", name, "' to ", p.string(), " would overwrite ",
             f.string(), ", which this command reads; choose another folder");
    paths.push_back(p);
  }
  return paths;
}

void prepare_dir(const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) fail("--out ", dir.string(), ": exists and is not a folder");
  fs::create_directories(dir, ec);
  if (ec) fail("--out ", dir.string(), ": cannot create the folder (", ec.message(), ")");
}

// Writes the outputs (a folder of .npy, or one .npz) and records the files in `report`.
void write_outputs(const fs::path& out, const NamedTensors& outputs, const std::vector<fs::path>& protected_files,
                   json& report_outputs) {
  for (const auto& [name, t] : outputs) {  // all or nothing: check before writing any
    try {
      npy_descr(t.dtype());
    } catch (const Error&) {
      fail("--out ", out.string(), ": output '", name, "' is ", t.describe(), "; numpy has no such type, so it ",
           "cannot be saved as .npy");
    }
  }
  if (out.extension() == ".npz") {
    std::error_code ec;
    for (const fs::path& f : protected_files)
      if (fs::exists(out, ec) && fs::equivalent(out, f, ec))
        fail("--out ", out.string(), " would overwrite ", f.string(), ", which this command reads");
    if (out.has_parent_path()) prepare_dir(out.parent_path());
    NamedArrays arrays;
    std::set<std::string> used;
    for (const auto& [name, t] : outputs) {
      std::string key = sanitize(name), unique = key;
      for (int k = 2; !used.insert(unique).second; ++k) unique = key + "_" + std::to_string(k);
      arrays.emplace_back(unique, t);
    }
    write_npz(out, arrays);
    for (size_t i = 0; i < outputs.size(); ++i) report_outputs[i]["file"] = out.string() + ":" + arrays[i].first;
    return;
  }
  prepare_dir(out);
  std::vector<fs::path> paths = output_paths(out, outputs, protected_files);
  for (size_t i = 0; i < outputs.size(); ++i) {
    write_npy(paths[i], outputs[i].second);
    report_outputs[i]["file"] = paths[i].string();
  }
}

json inputs_json(const std::vector<RunInput>& inputs) {
  json arr = json::array();
  for (const RunInput& in : inputs) {
    json j = tensor_json(in.name, in.tensor);
    j["source"] = in.source;
    j["stats"] = stats_json(tensor_stats(in.tensor));
    arr.push_back(j);
  }
  return arr;
}

json outputs_json(const NamedTensors& outputs) {
  json arr = json::array();
  for (const auto& [name, t] : outputs) {
    json j = tensor_json(name, t);
    j["stats"] = stats_json(tensor_stats(t));
    arr.push_back(j);
  }
  return arr;
}

// Named symbols only: anonymous ones (unk__N in the file) mean nothing to the reader.
json bindings_json(const Bindings& bindings) {
  json j = json::object();
  for (const auto& [name, value] : bindings)
    if (!Dim::is_anonymous_name(name)) j[name] = value;
  return j;
}

NamedTensors as_named(const std::vector<RunInput>& inputs) {
  NamedTensors named;
  for (const RunInput& in : inputs) named.emplace_back(in.name, in.tensor);
  return named;
}

// Runs once with the inputs from --input and --random.
json run_once(const Options& o, const Session& session, std::vector<fs::path> protected_files) {
  DimRequests dims = split_dim_requests(session, parse_dim_bindings(o.dims));
  Bindings bindings = dims.symbols;
  std::vector<RunInput> inputs = load_input_files(session, o.inputs);
  for (const RunInput& in : inputs) {
    check_input(session, in, bindings, dims.symbols);
    protected_files.push_back(in.file);
  }
  std::vector<RunInput> made = make_missing_inputs(session, inputs, o.random, dims, bindings, o.seed);
  inputs.insert(inputs.end(), made.begin(), made.end());

  auto start = std::chrono::steady_clock::now();
  NamedTensors outputs = session.run(as_named(inputs));
  json run = {{"name", "run"}, {"time_ms", ms_since(start)}, {"bindings", bindings_json(bindings)},
              {"inputs", inputs_json(inputs)}, {"outputs", outputs_json(outputs)}};
  if (!o.out.empty()) write_outputs(o.out, outputs, protected_files, run["outputs"]);
  return json::array({run});
}

// Runs every data set under --test-data on the one session and compares outputs.
json run_test_data(const Options& o, const Session& session, const std::vector<fs::path>& protected_files,
                   json& comparison) {
  std::vector<std::string> input_names, output_names;
  for (const Value* v : session.required_inputs()) input_names.push_back(v->name());
  for (const Value* v : session.graph().outputs()) output_names.push_back(v->name());
  const std::vector<fs::path> sets = find_test_data_sets(o.test_data);
  json runs = json::array();
  int64_t compared = 0, mismatched = 0;
  for (const fs::path& dir : sets) {
    TestDataSet set = load_test_data_set(dir, input_names, output_names);
    std::vector<RunInput> inputs;
    std::vector<fs::path> reads = protected_files;
    Bindings bindings;
    for (TestTensor& t : set.inputs) {
      inputs.push_back({t.name, std::move(t.tensor), "file " + t.file.string(), t.file});
      check_input(session, inputs.back(), bindings);
      reads.push_back(t.file);
    }
    for (const std::string& name : input_names) {
      bool found = std::any_of(inputs.begin(), inputs.end(), [&](const RunInput& in) { return in.name == name; });
      if (!found) fail(dir.string(), ": no input_<i>.pb file for input '", name, "'");
    }
    for (const TestTensor& t : set.outputs) reads.push_back(t.file);

    auto start = std::chrono::steady_clock::now();
    NamedTensors outputs;
    try {
      outputs = session.run(as_named(inputs));
    } catch (const Error& e) {
      fail(dir.string(), ": ", e.what());
    }
    json run = {{"name", dir.filename().string()}, {"dir", dir.string()}, {"time_ms", ms_since(start)},
                {"bindings", bindings_json(bindings)}, {"inputs", inputs_json(inputs)}, {"outputs", outputs_json(outputs)}};
    for (size_t i = 0; i < outputs.size(); ++i)
      for (const TestTensor& expected : set.outputs) {
        if (expected.name != outputs[i].first) continue;
        Comparison c = compare_tensors(outputs[i].second, expected.tensor, o.rtol, o.atol);
        run["outputs"][i]["reference"] = comparison_json(c, expected.file.filename().string());
        ++compared;
        if (!c.ok()) ++mismatched;
      }
    if (!o.out.empty()) write_outputs(fs::path(o.out) / sanitize(dir.filename().string()), outputs, reads, run["outputs"]);
    runs.push_back(run);
  }
  comparison = {{"rtol", o.rtol}, {"atol", o.atol}, {"sets", sets.size()}, {"outputs_compared", compared},
                {"outputs_mismatched", mismatched}, {"ok", mismatched == 0}};
  return runs;
}

void run_command(const Options& o) {
  if (!o.test_data.empty() && (!o.inputs.empty() || o.random || !o.dims.empty()))
    fail("--test-data takes its inputs and shapes from the data sets; it cannot be combined with --input, "
         "--random or --dim");
  if (o.rtol < 0 || o.atol < 0) fail("--rtol and --atol must not be negative");
  if (o.threads < 0) fail("--threads ", o.threads, ": must not be negative (0 means one per core)");
  // Shapes stay symbolic: one session serves every data set and --random shape.
  PrepareOptions prep;
  prep.level = o.level;
  prep.specialize = false;
  PreparedModel prepared = prepare_model(o.model, prep);
  Model& model = prepared.model;
  auto start = std::chrono::steady_clock::now();
  SessionOptions session_options;
  session_options.threads = o.threads;
  session_options.kernels = o.reference ? KernelChoice::Reference : KernelChoice::Optimized;
  // The session takes the only reference to the graph: it may drop packed weights' data.
  const std::unique_ptr<Session> made = make_session(std::move(model.graph), session_options, o.model);
  const Session& session = *made;
  json report = {{"model", o.model},
                 {"nodes", session.graph().node_count()},
                 {"level", o.level},
                 {"kernels", o.reference ? "reference" : "optimized"},
                 {"threads", session.threads()},
                 {"warnings", model.warnings},
                 {"timing_ms", {{"load", prepared.load_ms}, {"optimize", prepared.optimize_ms},
                                {"session", ms_since(start)}}}};
  const std::vector<fs::path> protected_files = {fs::path(o.model)};
  json comparison;
  report["runs"] = o.test_data.empty() ? run_once(o, session, protected_files)
                                       : run_test_data(o, session, protected_files, comparison);
  if (!comparison.is_null()) report["comparison"] = comparison;
  if (o.json) std::cout << report.dump(2) << "\n";
  else std::cout << render_run_text(report);
  std::cout.flush();
  if (!comparison.is_null() && !comparison["ok"].get<bool>())
    fail(comparison["outputs_mismatched"].get<int64_t>(), " of ", comparison["outputs_compared"].get<int64_t>(),
         " compared outputs differ from the expected ones beyond rtol ", o.rtol, ", atol ", o.atol);
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "run",
      "Run a model on octet (optimized at --level, fast kernels unless --reference): inputs\n"
      "from .npy/.npz/.pb files or --random,\n"
      "a summary of every output, outputs written as .npy (--out), or a check against stored\n"
      "expected outputs (--test-data).");
  cmd->add_option("model", opts->model, "ONNX model file")->required();
  cmd->add_option("--input,-i", opts->inputs, "An input from a file: NAME=FILE (.npy, .npz, .pb), repeatable")
      ->type_name("NAME=FILE")
      ->allow_extra_args(false);
  cmd->add_flag("--random", opts->random, "Generate every input not given by --input (rules below)");
  cmd->add_option("--dim", opts->dims, "Bind a symbolic dim for --random, e.g. --dim batch=1 --dim seq=128")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false);
  cmd->add_option("--seed", opts->seed, "Seed for --random (default 0)");
  cmd->add_option("--out", opts->out, "Write outputs to DIR/<name>.npy (or to one FILE.npz)")->type_name("DIR");
  cmd->add_option("--test-data", opts->test_data, "Run every ONNX test data set in DIR and compare outputs")
      ->type_name("DIR");
  cmd->add_option("--rtol", opts->rtol, "Relative tolerance for --test-data (default 1e-4)");
  cmd->add_option("--atol", opts->atol, "Absolute tolerance for --test-data (default 1e-5)");
  cmd->add_flag("--json", opts->json, "Print the report as JSON");
  cmd->add_option("--threads", opts->threads, "Threads each kernel may use (default 0: one per core)");
  cmd->add_option("--level", opts->level,
                  "Optimizer level 0, 1 or 2 before running (default 2; dims stay symbolic)");
  cmd->add_flag("--reference", opts->reference,
                "Run on the scalar reference kernels only (the oracle the fast kernels are tested against)");
  cmd->footer(kFooter);
  cmd->callback([opts] { run_command(*opts); });
}

}  // namespace octet::cli
