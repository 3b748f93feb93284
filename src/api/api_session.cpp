// The public Model and Session (octet/session.h) over load_model, optimize and Session.
#include <nlohmann/json.hpp>

#include "api/api_internal.h"
#include "passes/pipeline.h"

namespace octet::v1 {

namespace {

std::vector<TensorInfo> infos(const std::vector<const Value*>& values) {
  std::vector<TensorInfo> out;
  for (const Value* v : values) out.push_back(api::tensor_info(*v));
  return out;
}

std::vector<const Value*> required_inputs(const Graph& g) {
  std::vector<const Value*> out;
  for (const Value* v : g.inputs())
    if (!v->is_initializer()) out.push_back(v);
  return out;
}

std::vector<const Value*> graph_outputs(const Graph& g) { return {g.outputs().begin(), g.outputs().end()}; }

void check_level(int level) {
  if (level < 0 || level > 2) fail("optimization level must be 0, 1 or 2, got ", level);
}

Model::Impl& loaded(const std::shared_ptr<Model::Impl>& impl) {
  if (!impl || !impl->model.graph) fail("this Model is empty (it was moved into a Session)");
  return *impl;
}

}  // namespace

Model Model::load(const std::string& path) {
  return api::guarded(path, [&] {
    auto impl = std::make_shared<Impl>();
    impl->model = load_model(path);
    impl->name = path;
    return Model(std::move(impl));
  });
}

Model Model::load_bytes(const void* data, size_t size, const std::string& base_dir, const std::string& name) {
  return api::guarded(name, [&] {
    if (!data && size) fail(name, ": null data for ", size, " bytes");
    auto impl = std::make_shared<Impl>();
    impl->model = load_model_from_memory(std::string_view(static_cast<const char*>(data), size),
                                         std::filesystem::path(base_dir) / name);
    impl->name = name;
    return Model(std::move(impl));
  });
}

OptimizeSummary Model::optimize(int level) {
  return api::guarded(impl_ ? impl_->name : "", [&] {
    check_level(level);
    OptimizeOptions options;
    options.level = level;
    const OptimizeReport report = ::octet::optimize(*loaded(impl_).model.graph, options);
    return OptimizeSummary{report.nodes_before, report.nodes_after, report.to_text(), report.to_json().dump(2)};
  });
}

void Model::save(const std::string& path) const {
  api::guarded(path, [&] { save_model(loaded(impl_).model, path); });
}

std::vector<TensorInfo> Model::inputs() const { return infos(required_inputs(*loaded(impl_).model.graph)); }
std::vector<TensorInfo> Model::outputs() const { return infos(graph_outputs(*loaded(impl_).model.graph)); }
const std::string& Model::name() const { return impl_->name; }
size_t Model::node_count() const { return loaded(impl_).model.graph->nodes().size(); }

namespace {

std::shared_ptr<const Session::Impl> make_session(::octet::Model model, const std::string& name,
                                                  const SessionOptions& options) {
  check_level(options.optimization_level);
  if (options.threads < 0) fail("threads must be >= 0 (0: one per core), got ", options.threads);
  if (options.optimization_level > 0) {
    OptimizeOptions o;
    o.level = options.optimization_level;
    ::octet::optimize(*model.graph, o);
  }
  auto impl = std::make_shared<Session::Impl>();
  impl->name = name;
  impl->inputs = infos(required_inputs(*model.graph));
  impl->outputs = infos(graph_outputs(*model.graph));
  ::octet::SessionOptions so;
  so.threads = options.threads;
  so.adapt_threads = options.adapt_threads;
  // Moved in and held by nobody else: the session may keep weights only in packed form.
  impl->session = std::make_shared<const ::octet::Session>(std::shared_ptr<Graph>(std::move(model.graph)), so);
  return impl;
}

}  // namespace

Session::Session(const std::string& model_path, const SessionOptions& options) {
  impl_ = api::guarded(model_path, [&] { return make_session(load_model(model_path), model_path, options); });
}

Session::Session(Model&& model, const SessionOptions& options) {
  const std::string name = model.impl() ? model.impl()->name : "";
  impl_ = api::guarded(name, [&] {
    Model::Impl& m = loaded(model.impl());
    return make_session(std::move(m.model), name, options);
  });
}

NamedTensors Session::run(const NamedTensors& inputs, const std::vector<std::string>& output_names) const {
  return api::guarded(impl_->name, [&] {
    ::octet::NamedTensors in;
    in.reserve(inputs.size());
    for (const auto& [name, tensor] : inputs) in.emplace_back(name, api::unwrap(tensor, name));
    ::octet::NamedTensors out = impl_->session->run(in);
    NamedTensors result;
    if (output_names.empty()) {
      for (auto& [name, tensor] : out) result.emplace_back(name, api::wrap(std::move(tensor)));
      return result;
    }
    for (const std::string& want : output_names) {
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& o) { return o.first == want; });
      if (it == out.end()) {
        std::string names;
        for (const auto& o : out) names += (names.empty() ? "" : ", ") + o.first;
        fail("output '", want, "' is not an output of the model (outputs: ", names, ")");
      }
      result.emplace_back(want, api::wrap(it->second));
    }
    return result;
  });
}

std::vector<TensorInfo> Session::inputs() const { return impl_->inputs; }
std::vector<TensorInfo> Session::outputs() const { return impl_->outputs; }
int Session::threads() const { return impl_->session->threads(); }
const std::string& Session::model_name() const { return impl_->name; }

}  // namespace octet::v1
