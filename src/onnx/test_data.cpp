#include "onnx/test_data.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <regex>

#include "onnx/model_io.h"
#include "onnx/proto_convert.h"

namespace octet {

namespace fs = std::filesystem;

bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  auto digit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && digit(a[i2])) ++i2;
      while (j2 < b.size() && digit(b[j2])) ++j2;
      std::string x = a.substr(i, i2 - i), y = b.substr(j, j2 - j);
      x.erase(0, std::min(x.find_first_not_of('0'), x.size()));
      y.erase(0, std::min(y.find_first_not_of('0'), y.size()));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
      i = i2, j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  if (a.size() - i != b.size() - j) return a.size() - i < b.size() - j;
  return a < b;
}

namespace {

// Files named <prefix>_<n>.pb in `dir`, by n.
std::map<size_t, fs::path> numbered_files(const fs::path& dir, const std::string& prefix) {
  static const std::regex pattern(R"((input|output)_(\d{1,6})\.pb)");
  std::map<size_t, fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, pattern) || m[1] != prefix) continue;
    size_t n = std::stoul(m[2]);
    if (out.count(n)) fail(entry.path().string(), ": two files are number ", n, " (", out[n].filename().string(), ")");
    out[n] = entry.path();
  }
  if (ec) fail(dir.string(), ": cannot list (", ec.message(), ")");
  return out;
}

bool has_inputs(const fs::path& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && !numbered_files(dir, "input").empty();
}

std::vector<TestTensor> load_numbered(const fs::path& dir, const std::string& prefix,
                                      const std::vector<std::string>& names) {
  std::vector<TestTensor> out;
  std::map<std::string, fs::path> taken;
  for (const auto& [n, file] : numbered_files(dir, prefix)) {
    onnx::TensorProto proto;
    onnx_io::read_proto_file(file, proto, "TensorProto");
    const std::string context = file.string() + (proto.name().empty() ? "" : ": tensor '" + proto.name() + "'");
    std::string name;
    if (std::find(names.begin(), names.end(), proto.name()) != names.end()) {
      name = proto.name();
    } else if (n < names.size()) {
      name = names[n];
    } else {
      std::string list;
      for (const auto& x : names) list += (list.empty() ? "" : ", ") + x;
      fail(context, ": the model has ", names.size(), " ", prefix, "(s) (", list, "), so ", file.filename().string(),
           " matches none of them", proto.name().empty() ? "" : " by name or by number");
    }
    auto [it, inserted] = taken.emplace(name, file);
    if (!inserted)
      fail(file.string(), ": ", prefix, " '", name, "' is already given by ", it->second.filename().string());
    Tensor t;
    try {
      t = tensor_from_proto(proto, file.parent_path(), context);
    } catch (const Error& e) {
      throw Error(onnx_io::one_line(e.what()));
    }
    out.push_back({name, file, std::move(t)});
  }
  return out;
}

}  // namespace

std::vector<fs::path> find_test_data_sets(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) fail(dir.string(), ": no such directory");
  if (!fs::is_directory(dir, ec)) fail(dir.string(), ": not a directory (--test-data takes a folder)");
  if (has_inputs(dir)) return {dir};
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (has_inputs(entry.path())) sets.push_back(entry.path());
  if (ec) fail(dir.string(), ": cannot list (", ec.message(), ")");
  if (sets.empty())
    fail(dir.string(), ": no test data sets (expected input_0.pb, ... in it or in subfolders like test_data_set_0/)");
  std::sort(sets.begin(), sets.end(), [](const fs::path& a, const fs::path& b) {
    return natural_less(a.filename().string(), b.filename().string());
  });
  return sets;
}

TestDataSet load_test_data_set(const fs::path& dir, const std::vector<std::string>& input_names,
                               const std::vector<std::string>& output_names) {
  TestDataSet set;
  set.dir = dir;
  set.inputs = load_numbered(dir, "input", input_names);
  set.outputs = load_numbered(dir, "output", output_names);
  return set;
}

std::vector<TestTensor> load_test_data_inputs(const fs::path& dir, const std::vector<std::string>& input_names) {
  return load_numbered(dir, "input", input_names);
}

}  // namespace octet
