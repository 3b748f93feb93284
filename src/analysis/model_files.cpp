#include "analysis/model_files.h"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/wire_format_lite.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <climits>
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

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;

// Field numbers of onnx.proto that lead to external data locations.
constexpr int kModelGraph = 7;
constexpr int kGraphNode = 1, kGraphInitializer = 5, kGraphSparseInitializer = 15;
constexpr int kNodeAttribute = 5;
constexpr int kAttributeTensor = 5;
constexpr int kSparseValues = 1, kSparseIndices = 2;
constexpr int kTensorName = 8, kTensorExternalData = 13, kTensorDataLocation = 14;

// A streaming walk over the ModelProto's wire format that descends only into the messages
// above and skips everything else unread (FileInputStream seeks over it): the tensor
// payloads are never copied. A full ModelProto parse would hold the whole file in memory
// once more: 656 MB while `octet quantize` already holds SmolLM2-135M's weights, which was
// the quantizer's peak RSS. False on anything malformed; the caller then parses for real
// and reports the error as every reader does.
class LocationSkimmer {
 public:
  // (tensor name, location) of every tensor whose data is external, in file order.
  using Locations = std::vector<std::pair<std::string, std::string>>;
  LocationSkimmer(CodedInputStream& in, Locations& out) : in_(in), out_(out) {}

  bool model() {
    return fields([&](int field) { return field == kModelGraph ? nested([&] { return graph(); }) : skip(); });
  }

 private:
  template <typename OnField>
  bool fields(OnField&& on_field) {
    while (true) {
      tag_ = in_.ReadTag();
      if (tag_ == 0) return in_.ConsumedEntireMessage();  // the end, or a zero tag (corrupt)
      if (!on_field(WireFormatLite::GetTagFieldNumber(tag_))) return false;
    }
  }
  bool delimited() const { return WireFormatLite::GetTagWireType(tag_) == WireFormatLite::WIRETYPE_LENGTH_DELIMITED; }
  bool skip() { return WireFormatLite::SkipField(&in_, tag_); }
  template <typename Body>
  bool nested(Body&& body) {
    uint32_t length = 0;
    if (!delimited() || !in_.ReadVarint32(&length)) return false;
    const CodedInputStream::Limit limit = in_.PushLimit(static_cast<int>(length));
    const bool ok = body() && in_.BytesUntilLimit() == 0;
    in_.PopLimit(limit);
    return ok;
  }

  bool graph() {
    return fields([&](int f) {
      if (f == kGraphInitializer) return nested([&] { return tensor(); });
      if (f == kGraphSparseInitializer)
        return nested([&] {
          return fields([&](int g) { return g == kSparseValues || g == kSparseIndices ? nested([&] { return tensor(); }) : skip(); });
        });
      if (f == kGraphNode)
        return nested([&] {
          return fields([&](int g) {
            if (g != kNodeAttribute) return skip();
            return nested([&] { return fields([&](int h) { return h == kAttributeTensor ? nested([&] { return tensor(); }) : skip(); }); });
          });
        });
      return skip();
    });
  }

  bool tensor() {
    std::string name, location;
    uint64_t data_location = 0;
    const bool ok = fields([&](int f) {
      if (f == kTensorName) return delimited() && WireFormatLite::ReadString(&in_, &name);
      if (f == kTensorDataLocation) return in_.ReadVarint64(&data_location);
      if (f != kTensorExternalData) return skip();
      std::string entry;
      onnx::StringStringEntryProto kv;
      if (!delimited() || !WireFormatLite::ReadString(&in_, &entry) || !kv.ParseFromString(entry)) return false;
      if (kv.key() == "location") location = kv.value();
      return true;
    });
    if (ok && data_location == onnx::TensorProto::EXTERNAL) out_.emplace_back(name, location);
    return ok;
  }

  CodedInputStream& in_;
  Locations& out_;
  uint32_t tag_ = 0;
};

// Locations are resolved (and checked to stay in the folder) only once the whole file
// skimmed cleanly, so a broken file gets the full parse's error, not a half-read one.
bool skim_locations(const fs::path& path, const fs::path& base_dir, const std::string& file, std::set<fs::path>& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  LocationSkimmer::Locations found;
  bool ok = false;
  {
    google::protobuf::io::FileInputStream raw(fd);
    CodedInputStream in(&raw);
    in.SetTotalBytesLimit(INT_MAX);
    ok = LocationSkimmer(in, found).model() && raw.GetErrno() == 0;
  }
  ::close(fd);
  if (!ok) return false;
  for (const auto& [name, location] : found)
    out.insert(onnx_io::resolve_external_location(base_dir, location, file + ": tensor '" + name + "'"));
  return true;
}

void collect(const onnx::TensorProto& t, const fs::path& base_dir, const std::string& file,
             std::set<fs::path>& out) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
  for (const auto& entry : t.external_data())
    if (entry.key() == "location")
      out.insert(onnx_io::resolve_external_location(base_dir, entry.value(),
                                                    file + ": tensor '" + t.name() + "'"));
}

// The full parse: the reference for what skim_locations finds, and the error messages.
void parse_locations(const fs::path& path, const fs::path& base_dir, const std::string& file, std::set<fs::path>& external) {
  onnx::ModelProto proto;
  onnx_io::read_proto_file(path, proto, "ONNX model");
  const onnx::GraphProto& g = proto.graph();
  for (const auto& t : g.initializer()) collect(t, base_dir, file, external);
  for (const auto& s : g.sparse_initializer()) {
    collect(s.values(), base_dir, file, external);
    collect(s.indices(), base_dir, file, external);
  }
  for (const auto& n : g.node())
    for (const auto& a : n.attribute())
      if (a.has_t()) collect(a.t(), base_dir, file, external);
}

}  // namespace

ModelFiles model_files(const fs::path& path) {
  const fs::path base_dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const std::string file = path.string();
  std::set<fs::path> external;
  if (!skim_locations(path, base_dir, file, external)) {
    external.clear();
    parse_locations(path, base_dir, file, external);
  }

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
