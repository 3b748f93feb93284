// ModelProto -> Model.
//
// The file is untrusted: every problem it can have becomes one octet::Error line that
// starts with the file's path. Types the file stores are hints (Model::declared); the IR's
// own inference decides, so a stale value_info is a warning, never a failure.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <climits>
#include <set>
#include <unordered_map>

#include "onnx/model_io.h"
#include "onnx/subgraph.h"

#include "check/node_structure.h"
#include "onnx/proto_convert.h"

namespace octet {

namespace fs = std::filesystem;

namespace {

using onnx_io::TensorSource;

// Outer-scope names read by the subgraph attributes of `node` (If/Loop/Scan bodies).
std::vector<std::string> subgraph_free_names(const onnx::NodeProto& node) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add_all = [&](const onnx::GraphProto& g) {
    for (auto& name : free_names(g))
      if (seen.insert(name).second) out.push_back(name);
  };
  for (const auto& a : node.attribute()) {
    if (a.has_g()) add_all(a.g());
    for (const auto& g : a.graphs()) add_all(g);
  }
  return out;
}

}  // namespace

// Names a graph reads but does not define (so an enclosing scope must), in first-use
// order. Nested subgraphs count: what they read from outside this graph is read here too.
std::vector<std::string> free_names(const onnx::GraphProto& g) {
  std::set<std::string> defined;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& s : g.sparse_initializer()) defined.insert(s.values().name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) defined.insert(o);
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) out.push_back(name);
  };
  for (const auto& n : g.node()) {
    for (const auto& in : n.input()) use(in);
    for (const auto& name : subgraph_free_names(n)) use(name);
  }
  for (const auto& o : g.output()) use(o.name());
  return out;
}

namespace {

std::string describe_node(const onnx::NodeProto& n) {
  std::string op = n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type() : n.domain() + "." + n.op_type();
  return "node '" + n.name() + "' (" + op + ")";
}

// The format does not require nodes in topological order, and Graph::add_node needs
// every input defined first, so nodes are added in an order that satisfies both (the
// file's order wherever it is already valid).
std::vector<int> node_order(const onnx::GraphProto& g, const std::vector<std::vector<std::string>>& implicit) {
  const int n = g.node_size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i)
    for (const auto& o : g.node(i).output())
      if (!o.empty()) producer.emplace(o, i);  // a second producer is reported when added
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i) {
    std::set<int> deps;
    auto dep = [&](const std::string& name) {
      auto it = producer.find(name);
      if (it != producer.end()) deps.insert(it->second);
    };
    for (const auto& in : g.node(i).input()) dep(in);
    for (const auto& name : implicit[i]) dep(name);
    for (int d : deps) consumers[d].push_back(i);
    pending[i] = static_cast<int>(deps.size());
  }
  std::set<int> ready;
  for (int i = 0; i < n; ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int c : consumers[i])
      if (--pending[c] == 0) ready.insert(c);
  }
  for (int i = 0; i < n && static_cast<int>(order.size()) < n; ++i)
    if (pending[i] > 0) fail("the graph has a cycle through ", describe_node(g.node(i)));
  return order;
}

class Importer {
 public:
  Importer(Model& model, const fs::path& path) : model_(model), source_(path.parent_path()) {}

  void import_graph(onnx::GraphProto& g, const LoadOptions& options) {
    Graph& graph = *model_.graph;
    graph.name = g.name();
    graph.doc_string = g.doc_string();
    import_initializers(g);
    import_inputs(g);
    import_nodes(g);
    import_outputs(g);
    import_value_info(g);
    graph.sort_topologically();
    if (options.infer_types) {
      InferResult r = infer_graph(graph, model_.declared);
      model_.warnings.insert(model_.warnings.end(), r.warnings.begin(), r.warnings.end());
    } else {
      for (Node* node : graph.nodes())
        for (Value* out : node->outputs())
          if (out && !out->type.known()) {
            auto it = model_.declared.find(out->name());
            if (it != model_.declared.end()) out->type = it->second;
          }
    }
  }

 private:
  void import_initializers(onnx::GraphProto& g) {
    for (auto& t : *g.mutable_initializer()) {
      if (t.name().empty()) fail("an initializer has no name");
      Tensor data = onnx_io::tensor_from_proto(t, source_, "initializer '" + t.name() + "'", /*steal=*/true);
      model_.graph->add_initializer(t.name(), std::make_shared<const Tensor>(std::move(data)));
      initializer_names_.insert(t.name());
    }
    // The IR stores constants densely; sparse initializers (pruned models) are rare and
    // densifying them keeps every pass and kernel working unchanged.
    for (const auto& s : g.sparse_initializer()) {
      const std::string& name = s.values().name();
      if (name.empty()) fail("a sparse_initializer has no name");
      Tensor dense = onnx_io::sparse_to_dense(s, source_, "sparse_initializer '" + name + "'");
      model_.graph->add_initializer(name, std::make_shared<const Tensor>(std::move(dense)));
      initializer_names_.insert(name);
    }
  }

  void import_inputs(const onnx::GraphProto& g) {
    for (const auto& in : g.input()) {
      // Old exporters (IR < 4 required it) list initializers as inputs too: a weight the
      // caller could override. octet treats them as the constants they are in practice.
      if (initializer_names_.count(in.name())) continue;
      if (!in.has_type()) fail("graph input '", in.name(), "' has no type");
      std::string why;
      auto type = onnx_io::type_from_proto(in.type(), &why);
      if (!type)
        fail("graph input '", in.name(), "' has ", why,
             in.type().has_tensor_type() ? "" : "; octet supports tensor inputs only");
      model_.graph->add_input(in.name(), *type);
    }
  }

  void import_nodes(const onnx::GraphProto& g) {
    Graph& graph = *model_.graph;
    std::vector<std::vector<std::string>> implicit;
    implicit.reserve(g.node_size());
    std::set<std::string> node_names;
    for (const auto& n : g.node()) {
      implicit.push_back(subgraph_free_names(n));
      if (!n.name().empty()) node_names.insert(n.name());
    }
    int unnamed = 0;
    for (int i : node_order(g, implicit)) {
      const onnx::NodeProto& n = g.node(i);
      if (n.op_type().empty()) fail(describe_node(n), ": node has no op_type");
      // Messages and passes name nodes; give unnamed ones a stable, unique name.
      std::string name = n.name();
      while (name.empty() || (name != n.name() && node_names.count(name)))
        name = n.op_type() + "_" + std::to_string(unnamed++);
      node_names.insert(name);
      const std::string context = "node '" + name + "' (" + n.op_type() + ")";
      std::vector<Attribute> attrs;
      for (const auto& a : n.attribute())
        attrs.push_back(onnx_io::attribute_from_proto(a, source_, context + " attribute '" + a.name() + "'"));
      Node* node = graph.add_node(n.op_type(), {n.input().begin(), n.input().end()},
                                  {n.output().begin(), n.output().end()}, std::move(attrs), n.domain(), name);
      node->doc_string = n.doc_string();
      for (const auto& outer : implicit[i]) {
        Value* v = graph.find_value(outer);
        if (!v) fail(node->describe(), ": a subgraph reads '", outer, "', which the graph does not define");
        graph.add_implicit_input(node, v);
      }
    }
  }

  void import_outputs(const onnx::GraphProto& g) {
    for (const auto& out : g.output()) {
      Value* v = model_.graph->find_value(out.name());
      if (!v) fail("graph output '", out.name(), "' is not produced by any node, input or initializer");
      model_.graph->mark_output(v);
      if (!out.has_type()) continue;
      std::string why;
      auto type = onnx_io::type_from_proto(out.type(), &why);
      if (type) declare(out.name(), *type, "graph output");
      else if (out.type().value_case() != onnx::TypeProto::kTensorType)
        fail("graph output '", out.name(), "' has ", why, "; octet supports tensor outputs only");
      else
        model_.warnings.push_back("graph output '" + out.name() + "' has " + why + "; its stored type is ignored");
    }
  }

  void import_value_info(const onnx::GraphProto& g) {
    for (const auto& vi : g.value_info()) {
      std::string why;
      auto type = onnx_io::type_from_proto(vi.type(), &why);
      // Non-tensor values (sequences) have no IR type to hold them; nothing to check.
      if (type) declare(vi.name(), *type, "value_info");
      else if (vi.type().value_case() == onnx::TypeProto::kTensorType)
        model_.warnings.push_back("value_info '" + vi.name() + "' has " + why + "; ignored");
    }
  }

  // Records a stored type. Where the IR already knows the type (inputs, initializers)
  // the two are compared now; node outputs are compared by inference.
  void declare(const std::string& name, const TensorType& type, const char* where) {
    model_.declared[name] = type;
    const Value* v = model_.graph->find_value(name);
    if (v && !v->producer() && v->type.known() && types_conflict(type, v->type, {}))
      model_.warnings.push_back(std::string(where) + " says '" + name + "' is " + type.to_string() +
                                " but it is " + v->type.to_string() + "; using the latter");
  }

  Model& model_;
  TensorSource source_;
  std::set<std::string> initializer_names_;
};

void check_is_onnx(const onnx::ModelProto& proto, const std::string& file) {
  if (!proto.has_graph()) fail(file, ": not a valid ONNX model (no graph)");
  if (proto.ir_version() <= 0) fail(file, ": not a valid ONNX model (ir_version ", proto.ir_version(), ")");
  if (proto.opset_import_size() == 0) fail(file, ": not a valid ONNX model (no opset_import)");
}

// `path` names the model in messages and anchors external data (its folder).
Model load_impl(std::unique_ptr<onnx::ModelProto> proto, const fs::path& path, const LoadOptions& options) {
  const std::string file = path.string();
  check_is_onnx(*proto, file);

  Model model;
  model.source_path = path;
  model.graph = std::make_unique<Graph>();
  try {
    model.ir_version = proto->ir_version();
    model.producer_name = proto->producer_name();
    model.producer_version = proto->producer_version();
    model.domain = proto->domain();
    model.doc_string = proto->doc_string();
    model.model_version = proto->model_version();
    for (const auto& kv : proto->metadata_props()) model.metadata.emplace_back(kv.key(), kv.value());
    for (const auto& op : proto->opset_import()) {
      const std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
      model.graph->opset_imports[domain] = op.version();
    }
    for (std::string& w : check::check_model_versions(model.ir_version, model.graph->opset_imports))
      model.warnings.push_back(std::move(w));
    Importer(model, path).import_graph(*proto->mutable_graph(), options);
    for (const check::NodeIssue& issue : check::check_node_structure(*model.graph))
      model.warnings.push_back(issue.text());
  } catch (const Error& e) {
    fail(file, ": ", e.what());
  } catch (const std::bad_alloc&) {
    fail(file, ": out of memory while loading the model");
  } catch (const std::length_error&) {
    fail(file, ": out of memory while loading the model");
  }

  // What the IR does not model stays in the proto; the graph keeps only its extras.
  onnx::GraphProto* g = proto->mutable_graph();
  g->clear_node();
  g->clear_initializer();
  g->clear_sparse_initializer();
  g->clear_input();
  g->clear_output();
  g->clear_value_info();
  g->clear_name();
  g->clear_doc_string();
  proto->clear_metadata_props();
  proto->clear_opset_import();
  proto->SerializeToString(&model.preserved_proto);
  for (auto& w : model.warnings) w = onnx_io::one_line(w);
  return model;
}

}  // namespace

Model load_model(const fs::path& path, const LoadOptions& options) {
  try {
    auto proto = std::make_unique<onnx::ModelProto>();
    onnx_io::read_proto_file(path, *proto, "ONNX model");
    return load_impl(std::move(proto), path, options);
  } catch (const Error& e) {
    throw Error(onnx_io::one_line(e.what()));
  }
}

Model load_model_from_memory(std::string_view bytes, const fs::path& path, const LoadOptions& options) {
  try {
    if (bytes.empty()) fail(path.string(), ": no bytes (not an ONNX model)");
    if (bytes.size() > static_cast<size_t>(INT_MAX))
      fail(path.string(), ": ", bytes.size(), " bytes, over protobuf's 2 GiB limit; models this large must keep "
           "their weights in external data files");
    auto proto = std::make_unique<onnx::ModelProto>();
    if (!proto->ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
      fail(path.string(), ": not a valid ONNX model (protobuf parse failed: truncated or not ONNX)");
    return load_impl(std::move(proto), path, options);
  } catch (const Error& e) {
    throw Error(onnx_io::one_line(e.what()));
  }
}

}  // namespace octet
