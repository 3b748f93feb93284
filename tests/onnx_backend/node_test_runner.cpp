// Runs the official ONNX backend node tests (written by generate_node_tests.py) through a
// Session and compares with the stored outputs at the tests' own tolerances
// (numpy.allclose: |actual - expected| <= atol + rtol * |expected|).
//
// A test counts when octet claims its op (has a reference kernel for it) and for every
// other op in the test model (expanded function tests). Tests named in the allow-list
// are expected to fail, each with a reason; one that fails without being listed fails the
// run, and so does a pass rate under 98% of the counted tests.
//
// --optimize runs the standard optimizer pipeline (passes/pipeline.h, level 2, graph
// verified after every pass) on each test model before running it: the same tests must
// pass optimized as unoptimized.
//
// --reference runs every node on the scalar reference kernels; by default a node runs
// the optimized kernel where one takes it, as a Session does.
//
// usage: octet_node_tests DATA_DIR [--allow-list FILE] [--filter TEXT] [--optimize] [--reference] [--verbose]
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "kernels/kernel.h"
#include "onnx/model_io.h"
#include "passes/pipeline.h"
#include "runtime/session.h"

namespace fs = std::filesystem;
using namespace octet;

namespace {

struct OpTally {
  int passed = 0, failed = 0, allowed = 0;
};

std::map<std::string, std::string> read_allow_list(const fs::path& path) {
  std::map<std::string, std::string> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  if (!in) fail("cannot read allow-list ", path.string());
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto space = line.find_first_of(" \t");
    std::string name = line.substr(0, space);
    std::string reason = space == std::string::npos ? "" : line.substr(line.find_first_not_of(" \t", space));
    if (reason.empty()) fail("allow-list entry '", name, "' has no reason");
    out[name] = reason;
  }
  return out;
}

// Compares one output; returns an empty string when it matches.
std::string compare(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  if (actual.dtype() != expected.dtype())
    return "dtype " + dtype_name(actual.dtype()) + ", expected " + dtype_name(expected.dtype());
  if (actual.shape() != expected.shape())
    return "shape " + shape_to_string(actual.shape()) + ", expected " + shape_to_string(expected.shape());
  if (actual.dtype() == DType::String)
    return actual.string_data() == expected.string_data() ? "" : "string contents differ";
  DType t = actual.dtype();
  bool is_float = t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
  if (!is_float) {
    if (actual.bytes() != expected.bytes() ||
        (actual.bytes() && std::memcmp(actual.raw(), expected.raw(), actual.bytes()) != 0))
      return "integer/bool contents differ";
    return "";
  }
  std::vector<float> a = actual.to_float_vector(), e = expected.to_float_vector();
  if (t == DType::Float64) {  // compare doubles at full precision
    const double* da = reinterpret_cast<const double*>(actual.raw());
    const double* de = reinterpret_cast<const double*>(expected.raw());
    for (int64_t i = 0; i < actual.numel(); ++i) {
      if (std::isnan(da[i]) && std::isnan(de[i])) continue;
      if (!(std::fabs(da[i] - de[i]) <= atol + rtol * std::fabs(de[i])) && da[i] != de[i])
        return "element " + std::to_string(i) + " is " + std::to_string(da[i]) + ", expected " + std::to_string(de[i]);
    }
    return "";
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(e[i])) continue;
    if (a[i] == e[i]) continue;  // covers matching infinities
    if (!(std::fabs(static_cast<double>(a[i]) - e[i]) <= atol + rtol * std::fabs(static_cast<double>(e[i]))))
      return "element " + std::to_string(i) + " is " + std::to_string(a[i]) + ", expected " + std::to_string(e[i]);
  }
  return "";
}

constexpr const char* kUnclaimed = "\x01unclaimed";

// What --optimize did over the run: models it changed, and what each pass matched.
struct OptimizeTally {
  int models = 0, changed = 0;
  std::map<std::string, int64_t> matched;  // "fuse_gelu_erf: octet.Gelu(none)" -> count
};
OptimizeTally optimize_tally;

// Runs one test; returns an empty string on success, kUnclaimed when the test model uses
// an op octet does not claim (expanded function tests), else why it failed.
std::string run_test(const fs::path& dir, double rtol, double atol, bool optimize_model, KernelChoice kernels) {
  try {
    Model model = load_model(dir / "model.onnx");
    for (const Node* n : model.graph->nodes())
      if (!KernelRegistry::reference().find(n->domain(), n->op_type())) return kUnclaimed;
    if (optimize_model) {
      OptimizeOptions options;
      options.verify = true;
      OptimizeReport report = optimize(*model.graph, options);
      ++optimize_tally.models;
      bool changed = false;
      for (const PassStats& p : report.passes) {
        changed |= p.rewrites > 0;
        for (const auto& [what, n] : p.details) optimize_tally.matched[p.name + ": " + what] += n;
      }
      optimize_tally.changed += changed;
    }
    std::shared_ptr<const Graph> graph(std::move(model.graph));
    SessionOptions session_options;
    session_options.kernels = kernels;
    Session session(graph, session_options);
    auto required = session.required_inputs();
    for (const fs::path& data : fs::directory_iterator(dir)) {
      if (!fs::is_directory(data)) continue;
      NamedTensors inputs;
      for (size_t j = 0; j < required.size(); ++j)
        inputs.emplace_back(required[j]->name(), load_tensor_pb(data / ("input_" + std::to_string(j) + ".pb")));
      NamedTensors outputs = session.run(inputs);
      for (size_t j = 0; j < outputs.size(); ++j) {
        Tensor expected = load_tensor_pb(data / ("output_" + std::to_string(j) + ".pb"));
        std::string why = compare(outputs[j].second, expected, rtol, atol);
        if (!why.empty()) return "output '" + outputs[j].first + "': " + why;
      }
    }
    return "";
  } catch (const std::exception& e) {
    std::string msg = e.what();
    return msg.empty() ? "exception" : msg.substr(0, msg.find('\n'));
  }
}

}  // namespace

int main(int argc, char** argv) {
  fs::path data_dir, allow_path;
  std::string filter;
  bool verbose = false, optimize_models = false;
  KernelChoice kernel_choice = KernelChoice::Optimized;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--allow-list" && i + 1 < argc) allow_path = argv[++i];
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--optimize") optimize_models = true;
    else if (a == "--reference") kernel_choice = KernelChoice::Reference;
    else if (a == "--verbose") verbose = true;
    else if (data_dir.empty()) data_dir = a;
    else {
      std::cerr << "usage: octet_node_tests DATA_DIR [--allow-list FILE] [--filter TEXT] [--optimize] [--reference] "
                   "[--verbose]\n";
      return 2;
    }
  }
  try {
    std::ifstream index_file(data_dir / "index.json");
    if (!index_file) fail("no index.json in ", data_dir.string(), "; run generate_node_tests.py first");
    nlohmann::json index = nlohmann::json::parse(index_file);
    auto allow = read_allow_list(allow_path);
    const KernelRegistry& kernels = KernelRegistry::reference();

    std::map<std::string, OpTally> per_op;
    std::vector<std::string> unexpected, now_passing;
    int passed = 0, failed = 0, allowed = 0, not_claimed = 0;
    for (const auto& t : index["tests"]) {
      const std::string name = t["name"], op = t["op_type"], domain = t["domain"];
      if (!filter.empty() && name.find(filter) == std::string::npos) continue;
      if (!kernels.find(domain, op)) {
        ++not_claimed;
        continue;
      }
      std::string why = run_test(data_dir / name, t["rtol"], t["atol"], optimize_models, kernel_choice);
      if (why == kUnclaimed) {
        ++not_claimed;
        continue;
      }
      OpTally& tally = per_op[domain.empty() ? op : domain + "." + op];
      bool listed = allow.count(name) > 0;
      if (why.empty()) {
        ++passed, ++tally.passed;
        if (listed) now_passing.push_back(name);
      } else if (listed) {
        ++allowed, ++tally.allowed;
      } else {
        ++failed, ++tally.failed;
        unexpected.push_back(name + ": " + why);
      }
      if (verbose) std::cout << (why.empty() ? "PASS " : "FAIL ") << name << (why.empty() ? "" : "  " + why) << "\n";
    }

    std::cout << std::left << std::setw(28) << "op" << std::right << std::setw(8) << "passed" << std::setw(8)
              << "failed" << std::setw(10) << "allowed" << "\n";
    for (const auto& [op, t] : per_op)
      std::cout << std::left << std::setw(28) << op << std::right << std::setw(8) << t.passed << std::setw(8)
                << t.failed << std::setw(10) << t.allowed << "\n";
    for (const auto& u : unexpected) std::cout << "FAIL " << u << "\n";
    for (const auto& n : now_passing) std::cout << "note: allow-listed test now passes: " << n << "\n";
    int counted = passed + failed + allowed;
    double rate = counted ? 100.0 * passed / counted : 0.0;
    std::cout << "ops claimed: " << per_op.size() << ", tests using unclaimed ops: " << not_claimed
              << ", allow-listed failures: " << allowed << ", pass rate: " << std::fixed << std::setprecision(1)
              << rate << "%\n";
    if (optimize_models) {
      std::cout << "optimizer changed " << optimize_tally.changed << " of " << optimize_tally.models << " models:";
      for (const auto& [what, n] : optimize_tally.matched) std::cout << "\n  " << what << " " << n;
      std::cout << "\n";
    }
    std::cout << "node tests" << (optimize_models ? " (optimized)" : "")
              << (kernel_choice == KernelChoice::Reference ? " (reference kernels)" : "") << ": " << passed << " passed, "
              << failed + allowed << " failed\n";
    if (failed > 0) return 1;
    if (rate < 98.0) {
      std::cout << "pass rate under 98%\n";
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "octet_node_tests: " << e.what() << "\n";
    return 2;
  }
}
