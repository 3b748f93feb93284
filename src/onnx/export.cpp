// Model -> ModelProto -> file.
//
// The proto starts from Model::preserved_proto, so whatever import did not model
// (functions, training_info, newer fields) is written back; the graph is rebuilt from the
// IR. Files are written to a temporary name and renamed, so a failed save leaves the old
// file intact and a model can be saved over the file its weights are mapped from.
#include <onnx/onnx_pb.h>

#include <set>

#include "onnx/model_io.h"
#include "onnx/proto_convert.h"

namespace octet {

namespace {

namespace fs = std::filesystem;

// The side file name is written into the model and joined to the output folder; a path
// there could make us write (and later read) outside that folder.
std::string side_file_name(const fs::path& path, const SaveOptions& options) {
  std::string name = options.external_file.empty() ? path.filename().string() + ".data" : options.external_file;
  if (name == "." || name == ".." || name.find('/') != std::string::npos || name.find('\0') != std::string::npos)
    fail(path.string(), ": external data file '", name, "' must be a plain file name in the model's folder");
  if (name == path.filename().string())
    fail(path.string(), ": external data file '", name, "' would overwrite the model itself");
  return name;
}

size_t tensor_payload(const Tensor& t) {
  if (t.dtype() != DType::String) return t.bytes();
  size_t n = 0;
  for (const auto& s : t.string_data()) n += s.size() + 8;
  return n;
}

class Exporter {
 public:
  Exporter(const Model& model, const fs::path& path, const SaveOptions& options)
      : model_(model), graph_(*model.graph), path_(path), options_(options) {}

  std::vector<std::string> run() {
    const std::string file = path_.string();
    bool external = options_.external_data;
    // Decided before building, so a huge model is never copied into a proto that could
    // not be serialized anyway. The default limit leaves 64 MiB for the rest of the graph;
    // write_proto_file checks the real size at the end.
    uint64_t inline_bytes = 0;
    for (const Value* v : graph_.initializers()) {
      if (!v->constant())
        fail(file, ": initializer '", v->name(), "' has no data (",
             v->data_released() ? "a Session released it after packing the weight; save the model before creating "
                                  "the session, or set SessionOptions::release_packed_weights = false"
                                : "none was loaded",
             ")");
      inline_bytes += tensor_payload(*v->constant());
    }
    std::unique_ptr<onnx_io::ExternalDataWriter> writer;
    std::string side_name;
    if (!external && inline_bytes > options_.max_inline_bytes) {
      external = true;
      warnings_.push_back(file + ": initializers take " + std::to_string(inline_bytes) +
                          " bytes, too many for one protobuf file; wrote those of " +
                          std::to_string(options_.external_threshold) + " bytes or more to '" +
                          side_file_name(path_, options_) + "'");
    }
    if (external) {
      side_name = side_file_name(path_, options_);
      fs::path folder = path_.parent_path();
      writer = std::make_unique<onnx_io::ExternalDataWriter>(folder / side_name, file);
    }

    onnx::ModelProto proto;
    if (!model_.preserved_proto.empty())
      OCTET_ASSERT(proto.ParseFromString(model_.preserved_proto), "Model::preserved_proto does not parse");
    fill_model_fields(proto);
    onnx::GraphProto* g = proto.mutable_graph();
    fill_graph(g, writer.get(), side_name);

    onnx_io::write_proto_file(path_, proto, [&] {
      if (writer && !writer->empty()) writer->commit();
    });
    return warnings_;
  }

 private:
  void fill_model_fields(onnx::ModelProto& proto) {
    proto.set_ir_version(model_.ir_version);
    proto.set_producer_name(model_.producer_name);
    proto.set_producer_version(model_.producer_version);
    proto.set_domain(model_.domain);
    proto.set_model_version(model_.model_version);
    proto.set_doc_string(model_.doc_string);
    proto.clear_metadata_props();
    for (const auto& [k, v] : model_.metadata) {
      auto* kv = proto.add_metadata_props();
      kv->set_key(k);
      kv->set_value(v);
    }
    proto.clear_opset_import();
    for (const auto& [domain, version] : graph_.opset_imports) {
      auto* op = proto.add_opset_import();
      op->set_domain(domain);
      op->set_version(version);
    }
  }

  void fill_graph(onnx::GraphProto* g, onnx_io::ExternalDataWriter* writer, const std::string& side_name) {
    g->clear_node();
    g->clear_initializer();
    g->clear_sparse_initializer();
    g->clear_input();
    g->clear_output();
    g->clear_value_info();
    g->set_name(graph_.name.empty() ? "main" : graph_.name);
    g->set_doc_string(graph_.doc_string);

    for (const Value* v : graph_.inputs()) write_value_info(g->add_input(), v->name(), v->type);
    // IR < 4 requires every initializer to be listed as an input as well.
    if (model_.ir_version < 4)
      for (const Value* v : graph_.initializers()) write_value_info(g->add_input(), v->name(), v->type);

    for (const Value* v : graph_.initializers()) {
      onnx::TensorProto* t = g->add_initializer();
      t->set_name(v->name());
      const Tensor& data = *v->constant();
      if (writer && data.dtype() != DType::String && data.bytes() >= options_.external_threshold) {
        write_external(t, data, writer, side_name);
      } else {
        tensor_to_proto(data, t);
      }
    }

    for (const Node* n : graph_.nodes()) {
      onnx::NodeProto* p = g->add_node();
      p->set_name(n->name());
      p->set_op_type(n->op_type());
      if (!n->domain().empty()) p->set_domain(n->domain());
      for (const Value* in : n->inputs()) p->add_input(in ? in->name() : "");
      for (const Value* out : n->outputs()) p->add_output(out ? out->name() : "");
      for (const Attribute& a : n->attributes()) onnx_io::attribute_to_proto(a, p->add_attribute());
      if (!n->doc_string.empty()) p->set_doc_string(n->doc_string);
    }

    std::set<std::string> listed;
    for (const Value* v : graph_.inputs()) listed.insert(v->name());
    for (const Value* v : graph_.initializers()) listed.insert(v->name());
    for (const Value* v : graph_.outputs()) {
      write_value_info(g->add_output(), v->name(), output_type(v));
      listed.insert(v->name());
    }

    if (options_.write_value_info) {
      for (const Node* n : graph_.nodes())
        for (const Value* v : n->outputs()) {
          if (!v || listed.count(v->name()) || !v->type.known()) continue;
          write_value_info(g->add_value_info(), v->name(), v->type);
          listed.insert(v->name());
        }
    }

    // Annotations about values that passes removed would dangle.
    auto* ann = g->mutable_quantization_annotation();
    for (int i = ann->size() - 1; i >= 0; --i)
      if (!graph_.find_value(ann->Get(i).tensor_name())) ann->DeleteSubrange(i, 1);
  }

  // Inference may know less than the file did (an op without a rule yet): keep the
  // file's shape then rather than write a graph output without one.
  TensorType output_type(const Value* v) const {
    auto it = model_.declared.find(v->name());
    if (v->type.known() && v->type.has_rank()) return v->type;
    if (it != model_.declared.end() && it->second.known()) return it->second;
    return v->type;
  }

  static void write_value_info(onnx::ValueInfoProto* vi, const std::string& name, const TensorType& type) {
    vi->set_name(name);
    if (type.known()) onnx_io::type_to_proto(type, vi->mutable_type());
  }

  void write_external(onnx::TensorProto* t, const Tensor& data, onnx_io::ExternalDataWriter* writer,
                      const std::string& side_name) {
    for (int64_t d : data.shape()) t->add_dims(d);
    t->set_data_type(dtype_to_onnx(data.dtype()));
    uint64_t offset = writer->append(data.raw(), data.bytes());
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* key, const std::string& value) {
      auto* kv = t->add_external_data();
      kv->set_key(key);
      kv->set_value(value);
    };
    add("location", side_name);
    add("offset", std::to_string(offset));
    add("length", std::to_string(data.bytes()));
  }

  const Model& model_;
  const Graph& graph_;
  fs::path path_;
  SaveOptions options_;
  std::vector<std::string> warnings_;
};

}  // namespace

std::vector<std::string> save_model(const Model& model, const fs::path& path, const SaveOptions& options) {
  if (!model.graph) fail(path.string(), ": cannot save a model without a graph");
  try {
    return Exporter(model, path, options).run();
  } catch (const std::bad_alloc&) {
    fail(onnx_io::one_line(path.string()), ": out of memory while saving the model");
  } catch (const Error& e) {
    throw Error(onnx_io::one_line(e.what()));
  }
}

}  // namespace octet
