#include "analysis/model_files.h"

#include <onnx/onnx_pb.h>

#include <set>

#include "onnx/external_data.h"
#include "onnx/proto_convert.h"

namespace octet {

namespace fs = std::filesystem;

std::vector<fs::path> ModelFiles::all() const {
  std::vector<fs::path> out{model};
  out.insert(out.end(), external.begin(), external.end());
  return out;
}

namespace {

void collect(const onnx::TensorProto& t, const fs::path& base_dir, const std::string& file,
             std::set<fs::path>& out) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
  for (const auto& entry : t.external_data())
    if (entry.key() == "location")
      out.insert(onnx_io::resolve_external_location(base_dir, entry.value(),
                                                    file + ": tensor '" + t.name() + "'"));
}

}  // namespace

ModelFiles model_files(const fs::path& path) {
  onnx::ModelProto proto;
  onnx_io::read_proto_file(path, proto, "ONNX model");
  const fs::path base_dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const std::string file = path.string();
  std::set<fs::path> external;
  const onnx::GraphProto& g = proto.graph();
  for (const auto& t : g.initializer()) collect(t, base_dir, file, external);
  for (const auto& s : g.sparse_initializer()) {
    collect(s.values(), base_dir, file, external);
    collect(s.indices(), base_dir, file, external);
  }
  for (const auto& n : g.node())
    for (const auto& a : n.attribute())
      if (a.has_t()) collect(a.t(), base_dir, file, external);

  ModelFiles out;
  out.model = path;
  out.external.assign(external.begin(), external.end());
  std::error_code ec;
  for (const fs::path& p : out.all()) {
    const uintmax_t size = fs::file_size(p, ec);
    if (!ec) out.bytes += size;
  }
  return out;
}

}  // namespace octet
