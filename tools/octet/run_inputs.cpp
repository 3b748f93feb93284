#include "run_inputs.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include "io/npy.h"
#include "onnx/model_io.h"
#include "runtime/random_inputs.h"

namespace octet::cli {

namespace fs = std::filesystem;

namespace {

std::string input_list(const Session& session) {
  std::string list;
  for (const Value* v : session.required_inputs()) list += (list.empty() ? "" : ", ") + v->name();
  return list.empty() ? "none" : list;
}

const Value* graph_input(const Session& session, const std::string& name) {
  const Value* v = session.graph().find_value(name);
  return v && v->is_graph_input() ? v : nullptr;
}

// How a user converts an array to `t` in numpy, for dtype mismatch errors.
std::string numpy_type(DType t) {
  switch (t) {
    case DType::Bool: return "np.bool_";
    case DType::BFloat16: return "ml_dtypes.bfloat16";
    default: return "np." + dtype_name(t);
  }
}

Tensor read_tensor_file(const fs::path& path) {
  switch (sniff_array_file(path)) {
    case ArrayFileKind::Npy: return read_npy(path);
    case ArrayFileKind::Npz: fail("internal error: npz handled by the caller");
    case ArrayFileKind::Other: break;
  }
  if (path.extension() == ".npy") return read_npy(path);  // says it is not a .npy file
  try {
    return load_tensor_pb(path);
  } catch (const Error& e) {
    if (path.extension() == ".pb") throw;
    fail(e.what(), " (--input reads .npy, .npz and ONNX TensorProto .pb files)");
  }
}

}  // namespace

std::vector<RunInput> load_input_files(const Session& session, const std::vector<std::string>& items) {
  std::vector<RunInput> out;
  std::map<std::string, fs::path> given;
  auto add = [&](const std::string& name, Tensor t, const fs::path& file) {
    if (!graph_input(session, name))
      fail("--input ", name, "=", file.string(), ": the model has no input '", name, "' (inputs: ",
           input_list(session), ")");
    auto [it, inserted] = given.emplace(name, file);
    if (!inserted)
      fail("input '", name, "' is given twice (", it->second.string(), " and ", file.string(), ")");
    out.push_back({name, std::move(t), "file " + file.string(), file});
  };
  for (const std::string& item : items) {
    // Input names may contain '=' themselves: take the first split whose left side names
    // an input; with none, the whole item may be a file (an .npz, or the model's only input).
    std::string name, file = item;
    for (size_t eq = item.find('='); eq != std::string::npos; eq = item.find('=', eq + 1))
      if (graph_input(session, item.substr(0, eq))) {
        name = item.substr(0, eq), file = item.substr(eq + 1);
        break;
      }
    std::error_code ec;
    if (name.empty() && item.find('=') != std::string::npos && !fs::exists(item, ec)) {
      name = item.substr(0, item.find('='));
      file = item.substr(item.find('=') + 1);
    }
    if (file.empty()) fail("--input '", item, "': expected NAME=FILE");
    const fs::path path(file);
    if (!fs::exists(path, ec)) fail(file, ": no such file (--input ", item, ")");
    if (sniff_array_file(path) == ArrayFileKind::Npz) {
      NamedArrays arrays = read_npz(path);
      if (name.empty()) {
        if (arrays.empty()) fail(file, ": the archive holds no arrays");
        for (auto& [key, t] : arrays) {
          if (!graph_input(session, key))
            fail(file, ": array '", key, "' is not an input of the model (inputs: ", input_list(session),
                 "); give arrays as NAME=FILE to choose");
          add(key, std::move(t), path);
        }
        continue;
      }
      auto it = std::find_if(arrays.begin(), arrays.end(), [&](const auto& a) { return a.first == name; });
      if (it == arrays.end() && arrays.size() == 1) it = arrays.begin();
      if (it == arrays.end()) {
        std::string keys;
        for (const auto& a : arrays) keys += (keys.empty() ? "" : ", ") + a.first;
        fail(file, ": no array named '", name, "' in the archive (it has: ", keys.empty() ? "none" : keys, ")");
      }
      add(name, std::move(it->second), path);
      continue;
    }
    if (name.empty()) {
      auto required = session.required_inputs();
      if (required.size() != 1)
        fail("--input ", item, ": say which input this file is for, as NAME=FILE (inputs: ", input_list(session), ")");
      name = required[0]->name();
    }
    add(name, read_tensor_file(path), path);
  }
  return out;
}

void check_input(const Session& session, const RunInput& input, Bindings& bindings, const Bindings& requested) {
  const Value* v = graph_input(session, input.name);
  OCTET_ASSERT(v, "input '", input.name, "' checked before it was matched");
  const std::string what = "input '" + input.name + "'" + (input.file.empty() ? "" : " from " + input.file.string());
  const Tensor& t = input.tensor;
  if (v->type.known() && t.dtype() != v->type.dtype)
    fail(what, " is ", t.describe(), ", the model expects ", v->type.to_string(), " (convert it, e.g. a.astype(",
         numpy_type(v->type.dtype), "))");
  if (!v->type.dims) return;
  const DimVector& dims = *v->type.dims;
  if (dims.size() == t.shape().size())
    for (size_t i = 0; i < dims.size(); ++i) {
      auto it = dims[i].is_symbol() ? requested.find(dims[i].symbol_name()) : requested.end();
      if (it != requested.end() && it->second != t.shape()[i])
        fail(what, " dim ", i, " ('", it->first, "') is ", t.shape()[i], " but --dim ", it->first, "=", it->second);
    }
  bind_dims(dims, t.shape(), what, bindings);
}

DimRequests split_dim_requests(const Session& session, const Bindings& requested) {
  return split_dim_requests(session.graph(), requested);
}

DimRequests split_dim_requests(const Graph& graph, const Bindings& requested) {
  DimRequests out;
  std::set<std::string> symbols;
  for (const Value* v : graph.inputs())
    if (!v->is_initializer() && v->type.dims)
      for (const Dim& d : *v->type.dims)
        for (const std::string& s : d.symbols())
          if (!Dim::is_anonymous_name(s)) symbols.insert(s);
  for (const auto& [key, value] : requested) {
    if (symbols.count(key)) {
      out.symbols[key] = value;
      continue;
    }
    const size_t colon = key.rfind(':');
    if (colon != std::string::npos) {
      const std::string name = key.substr(0, colon), axis_text = key.substr(colon + 1);
      size_t axis = 0;
      auto [end, ec] = std::from_chars(axis_text.data(), axis_text.data() + axis_text.size(), axis);
      const Value* v = graph.find_value(name);
      if (v && !v->is_graph_input()) v = nullptr;
      if (v && ec == std::errc() && end == axis_text.data() + axis_text.size()) {
        if (!v->type.dims || axis >= v->type.dims->size())
          fail("--dim ", key, "=", value, ": input '", name, "' is ", v->type.to_string(), ", it has no axis ", axis);
        out.axes.emplace_back(name, axis, value);
        continue;
      }
    }
    std::string names;
    for (const std::string& s : symbols) names += (names.empty() ? "" : ", ") + s;
    fail("--dim ", key, "=", value, ": no input of the model has a dim named '", key, "' (named dims: ",
         names.empty() ? "none" : names, "; an unnamed dim is set as INPUT:AXIS=N)");
  }
  return out;
}

std::vector<RunInput> make_missing_inputs(const Session& session, const std::vector<RunInput>& given, bool random,
                                          const DimRequests& dims, Bindings& bindings, uint64_t seed) {
  std::set<std::string> have;
  for (const RunInput& in : given) have.insert(in.name);
  std::vector<const Value*> missing;
  for (const Value* v : session.required_inputs())
    if (!have.count(v->name())) missing.push_back(v);
  // INPUT:AXIS=N requests: bind the symbol at that axis, or check the fixed size there.
  for (const auto& [name, axis, value] : dims.axes) {
    const Dim& d = (*graph_input(session, name)->type.dims)[axis];
    const std::string what = "--dim " + name + ":" + std::to_string(axis) + "=" + std::to_string(value);
    if (d.is_symbol()) {
      auto [it, inserted] = bindings.emplace(d.symbol_name(), value);
      if (!inserted && it->second != value)
        fail(what, ": that dim is '", d.to_string(), "', already ", it->second, " from another input or --dim");
    } else if (auto known = d.evaluate(bindings); known && *known != value) {
      if (d.is_constant()) fail(what, ": input '", name, "' has a fixed size of ", *known, " there");
      fail(what, ": that dim is ", d.to_string(), ", which is ", *known, " from the other inputs or --dim");
    } else if (!known) {
      fail(what, ": that dim is the expression ", d.to_string(), "; bind its symbols instead");
    }
  }
  if (missing.empty()) return {};
  if (!random) {
    std::string list;
    for (const Value* v : missing) list += (list.empty() ? "" : ", ") + ("'" + v->name() + "' (" + v->type.to_string() + ")");
    fail(missing.size() == 1 ? "input " : "inputs ", list, missing.size() == 1 ? " is" : " are",
         " not given: use --input NAME=FILE, or --random to generate ", missing.size() == 1 ? "it" : "them");
  }
  std::mt19937_64 rng(seed);
  std::vector<RunInput> out;
  for (const Value* v : missing) {
    if (!v->type.known()) fail("input '", v->name(), "' has no declared type; give it with --input ", v->name(), "=FILE");
    std::vector<int64_t> shape = concrete_input_shape(*v, bindings);
    bind_dims(*v->type.dims, shape, "input '" + v->name() + "'", bindings);
    InputFill fill = choose_input_fill(*v, bindings);
    Tensor t;
    try {
      t = make_input(v->type.dtype, shape, fill, rng);
    } catch (const Error& e) {
      fail("input '", v->name(), "': ", e.what());
    }
    out.push_back({v->name(), std::move(t), "--random: " + fill.description, {}});
  }
  return out;
}

}  // namespace octet::cli
