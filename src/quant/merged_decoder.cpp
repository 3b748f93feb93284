#include "quant/merged_decoder.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "onnx/proto_convert.h"
#include "onnx/subgraph.h"
#include "quant/decoder_prompt.h"
#include "quant/raise_opset.h"

namespace octet::quant {

namespace fs = std::filesystem;

namespace {

using Initializers = std::map<std::string, onnx::TensorProto>;

// An initializer with its data inline (external data read in), named as in the file.
onnx::TensorProto inline_tensor(const onnx::TensorProto& t, const fs::path& file) {
  const Tensor v = tensor_from_proto(t, file.parent_path(), file.string() + ": initializer '" + t.name() + "'");
  onnx::TensorProto p;
  tensor_to_proto(v, &p);
  p.set_name(t.name());
  return p;
}

uint64_t payload(const onnx::TensorProto& t) {
  uint64_t n = t.raw_data().size();
  for (const std::string& s : t.string_data()) n += s.size();
  return n;
}

bool reads_past(const onnx::GraphProto& g) {
  for (const std::string& name : free_names(g))
    if (is_past(name)) return true;
  return false;
}

// Identity of a tensor's content: type, dims and data, the name left out.
std::string content_key(onnx::TensorProto t) {
  t.clear_name();
  t.clear_doc_string();
  return t.SerializeAsString();
}

// The float decoders' weights: for each initializer of `no_past` the name the same
// tensor has in `with_past` (torch's exporter numbers them independently: onnx::MatMul_838
// in one file is onnx::MatMul_668 in the other).
std::map<std::string, std::string> same_float_weights(const fs::path& no_past, const fs::path& with_past) {
  std::map<std::string, std::string> by_content, out;
  onnx::ModelProto m;
  onnx_io::read_proto_file(with_past, m, "ONNX model");
  for (const onnx::TensorProto& t : m.graph().initializer()) by_content[content_key(inline_tensor(t, with_past))] = t.name();
  m.Clear();
  onnx_io::read_proto_file(no_past, m, "ONNX model");
  for (const onnx::TensorProto& t : m.graph().initializer())
    if (auto it = by_content.find(content_key(inline_tensor(t, no_past))); it != by_content.end()) out[t.name()] = it->second;
  return out;
}

// DequantizeLinear nodes of quantized weights, by the float weight's name: quantize's QDQ
// rewrite (qdq_rewrite.cpp) names a weight w's int8 copy "<w>_quantized".
std::map<std::string, const onnx::NodeProto*> weight_dequantizers(const onnx::GraphProto& g, const Initializers& inits) {
  static const std::string suffix = "_quantized";
  std::map<std::string, const onnx::NodeProto*> out;
  for (const onnx::NodeProto& n : g.node()) {
    if (n.op_type() != "DequantizeLinear" || !n.domain().empty() || n.input_size() < 2) continue;
    const std::string& q = n.input(0);
    bool constant = true;
    for (const std::string& in : n.input()) constant &= in.empty() || inits.count(in) > 0;
    if (!constant || q.size() <= suffix.size() || q.compare(q.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    out[q.substr(0, q.size() - suffix.size())] = &n;
  }
  return out;
}

// Gives the no-past branch the with-past branch's quantized copy of every weight both
// float decoders share, where both quantized it plainly (a smoothed weight is renamed
// "<w>_smoothed" and comes with a rescaled activation, so it stays its own). Returns how
// many weights it unified.
size_t unify_weights(const std::map<std::string, std::string>& same, const onnx::GraphProto& no_past_graph,
                     const onnx::GraphProto& with_past_graph, Initializers& no_past, const Initializers& with_past) {
  const auto mine = weight_dequantizers(no_past_graph, no_past), theirs = weight_dequantizers(with_past_graph, with_past);
  size_t unified = 0;
  for (const auto& [weight, dq] : mine) {
    auto pair = same.find(weight);
    if (pair == same.end()) continue;
    auto other = theirs.find(pair->second);
    if (other == theirs.end() || other->second->input_size() != dq->input_size()) continue;
    bool fits = true;
    for (int i = 0; i < dq->input_size(); ++i) {
      if (dq->input(i).empty() != other->second->input(i).empty()) fits = false;
      if (dq->input(i).empty() || !fits) continue;
      const onnx::TensorProto &a = no_past.at(dq->input(i)), &b = with_past.at(other->second->input(i));
      fits = a.data_type() == b.data_type() &&
             std::equal(a.dims().begin(), a.dims().end(), b.dims().begin(), b.dims().end());
    }
    if (!fits) continue;
    for (int i = 0; i < dq->input_size(); ++i) {
      if (dq->input(i).empty()) continue;
      onnx::TensorProto t = with_past.at(other->second->input(i));
      t.set_name(dq->input(i));
      no_past[dq->input(i)] = std::move(t);
    }
    ++unified;
  }
  return unified;
}

// Every name `g` uses (inputs, outputs, initializers, node inputs and outputs).
void collect_names(const onnx::GraphProto& g, std::set<std::string>& names) {
  for (const auto& v : g.input()) names.insert(v.name());
  for (const auto& v : g.output()) names.insert(v.name());
  for (const auto& v : g.initializer()) names.insert(v.name());
  for (const auto& n : g.node()) {
    names.insert(n.input().begin(), n.input().end());
    names.insert(n.output().begin(), n.output().end());
  }
}

void rename_inputs(onnx::GraphProto& g, const std::map<std::string, std::string>& renamed) {
  for (onnx::NodeProto& n : *g.mutable_node())
    for (std::string& in : *n.mutable_input())
      if (auto it = renamed.find(in); it != renamed.end()) in = it->second;
  for (onnx::ValueInfoProto& v : *g.mutable_value_info())
    if (auto it = renamed.find(v.name()); it != renamed.end()) v.set_name(it->second);
}

// The quantized decoder `q` (file `path`) as the body of `float_branch`: its nodes, types
// and outputs in the float branch's order; its initializers go to `inits`.
onnx::GraphProto branch_from(const onnx::ModelProto& q, const fs::path& path, const onnx::GraphProto& float_branch,
                             const std::set<std::string>& outer_inputs, const fs::path& merged, Initializers& inits) {
  const onnx::GraphProto& qg = q.graph();
  if (qg.sparse_initializer_size() > 0) fail(path.string(), ": has sparse initializers; a merged decoder is not written");
  for (const onnx::TensorProto& t : qg.initializer()) inits[t.name()] = inline_tensor(t, path);
  for (const onnx::ValueInfoProto& in : qg.input())
    if (!inits.count(in.name()) && !outer_inputs.count(in.name()))
      fail(path.string(), ": input '", in.name(), "' is not an input of ", merged.string(),
           "; the quantized decoder does not fit the merged decoder's interface");
  onnx::GraphProto b;
  b.set_name(float_branch.name());
  *b.mutable_node() = qg.node();
  *b.mutable_value_info() = qg.value_info();
  std::map<std::string, const onnx::ValueInfoProto*> produced;
  for (const onnx::ValueInfoProto& o : qg.output()) produced[o.name()] = &o;
  for (const onnx::ValueInfoProto& want : float_branch.output()) {
    if (auto it = produced.find(want.name()); it != produced.end()) {
      *b.add_output() = *it->second;
      produced.erase(it);
      continue;
    }
    // optimum's with-past branch returns the cross-attention presents as constant empty
    // tensors (the with-past file only reads them): keep those nodes.
    const onnx::NodeProto* maker = nullptr;
    for (const onnx::NodeProto& n : float_branch.node())
      if (std::find(n.output().begin(), n.output().end(), want.name()) != n.output().end()) maker = &n;
    if (!maker || maker->input_size() != 0)
      fail(path.string(), ": has no output '", want.name(), "', which the '", float_branch.name(), "' branch of ",
           merged.string(), " returns");
    *b.add_node() = *maker;
    *b.add_output() = want;
  }
  if (!produced.empty())
    fail(path.string(), ": output '", produced.begin()->first, "' is not an output of the '", float_branch.name(),
         "' branch of ", merged.string());
  return b;
}

int64_t ai_onnx_opset(const onnx::ModelProto& m) {
  for (const onnx::OperatorSetIdProto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
}

// The two branches of one If share the model's opset. When one quantized decoder was raised
// to opset 21 (blocked or int16 quantization needs it) and the other was not, the other is
// raised too, rewritten in place (it is this job's own output), and read again.
void same_opset(const fs::path (&paths)[2], onnx::ModelProto (&q)[2], const SaveOptions& save) {
  const int64_t v[2] = {ai_onnx_opset(q[0]), ai_onnx_opset(q[1])};
  if (v[0] == v[1]) return;
  const int low = v[0] < v[1] ? 0 : 1;
  if (v[1 - low] != 21)
    fail(paths[low].string(), " is opset ", v[low], " and ", paths[1 - low].string(), " opset ", v[1 - low],
         "; the merged decoder's branches need one opset");
  Model m = load_model(paths[low]);
  raise_opset_to_21(*m.graph, paths[low].string(), "the merged decoder's other branch is opset 21");
  save_model(m, paths[low], save);
  q[low].Clear();
  onnx_io::read_proto_file(paths[low], q[low], "ONNX model");
}

}  // namespace

MergedDecoderSummary write_quantized_merged_decoder(const MergedDecoderFiles& files, const fs::path& out,
                                                    const SaveOptions& save) {
  const fs::path &float_merged = files.float_merged, &no_past = files.no_past, &with_past = files.with_past;
  const std::string file = float_merged.string();
  onnx::ModelProto merged;
  onnx_io::read_proto_file(float_merged, merged, "ONNX model");
  onnx::GraphProto& g = *merged.mutable_graph();
  if (g.node_size() != 1 || g.node(0).op_type() != "If" || !g.node(0).domain().empty())
    fail(file, ": not optimum's merged decoder (one If node on use_cache_branch); it has ", g.node_size(),
         " top-level nodes");
  onnx::NodeProto& if_node = *g.mutable_node(0);
  std::set<std::string> outer_inputs;
  for (const onnx::ValueInfoProto& in : g.input()) outer_inputs.insert(in.name());
  if (if_node.input_size() != 1 || !outer_inputs.count(if_node.input(0)))
    fail(file, ": the If's condition is not a graph input");

  onnx::ModelProto quantized[2];  // no past, with past
  onnx_io::read_proto_file(no_past, quantized[0], "ONNX model");
  onnx_io::read_proto_file(with_past, quantized[1], "ONNX model");
  same_opset({no_past, with_past}, quantized, save);
  Initializers inits[2];
  onnx::GraphProto* body[2] = {nullptr, nullptr};  // no past, with past
  for (onnx::AttributeProto& a : *if_node.mutable_attribute()) {
    if (a.name() != "then_branch" && a.name() != "else_branch") continue;
    if (!a.has_g()) fail(file, ": If attribute '", a.name(), "' holds no graph");
    const int which = reads_past(a.g()) ? 1 : 0;
    if (body[which])
      fail(file, ": both If branches ", which ? "read" : "do not read", " past_key_values.*; expected one no-past and "
           "one with-past branch");
    *a.mutable_g() = branch_from(quantized[which], which ? with_past : no_past, a.g(), outer_inputs, float_merged,
                                 inits[which]);
    body[which] = a.mutable_g();
  }
  if (!body[0] || !body[1]) fail(file, ": the If does not have both branches");

  MergedDecoderSummary summary;
  if (!files.float_no_past.empty() && !files.float_with_past.empty())
    summary.unified_weights = unify_weights(same_float_weights(files.float_no_past, files.float_with_past), *body[0],
                                            *body[1], inits[0], inits[1]);

  // Initializers of equal content in both branches live once, in the outer graph, under a
  // name neither branch uses; the rest stay in their branch.
  std::set<std::string> taken;
  for (const std::string& name : free_names(g)) taken.insert(name);
  for (const auto& v : g.input()) taken.insert(v.name());
  for (const onnx::GraphProto* b : body) collect_names(*b, taken);
  for (const Initializers& i : inits)
    for (const auto& kv : i) taken.insert(kv.first);
  std::set<std::string> in_branch[2], hoisted;
  for (int b = 0; b < 2; ++b) {
    collect_names(*body[b], in_branch[b]);
    for (const auto& kv : inits[b]) in_branch[b].insert(kv.first);
  }
  std::set<std::string> outputs;
  for (const onnx::GraphProto* b : body)
    for (const auto& v : b->output()) outputs.insert(v.name());
  std::map<std::string, std::vector<std::string>> by_content[2];
  for (int b = 0; b < 2; ++b)
    for (const auto& [name, t] : inits[b])
      if (!outputs.count(name)) by_content[b][content_key(t)].push_back(name);
  std::map<std::string, std::string> renamed[2];
  g.clear_initializer();
  g.clear_sparse_initializer();
  g.clear_value_info();
  for (const auto& [key, names0] : by_content[0]) {
    auto other = by_content[1].find(key);
    if (other == by_content[1].end()) continue;
    // The no-past name, unless the with-past branch uses it for something else.
    std::string name = names0.front();
    const bool free_in_other = !in_branch[1].count(name) || std::find(other->second.begin(), other->second.end(), name) != other->second.end();
    for (int k = 1; hoisted.count(name) || (!free_in_other && taken.count(name)); ++k)
      name = names0.front() + "_shared" + std::to_string(k);
    hoisted.insert(name);
    taken.insert(name);
    onnx::TensorProto t = inits[0].at(names0.front());
    t.set_name(name);
    summary.shared_bytes += payload(t);
    ++summary.shared_initializers;
    *g.add_initializer() = std::move(t);
    for (const std::string& n : names0) renamed[0][n] = name;
    for (const std::string& n : other->second) renamed[1][n] = name;
  }
  for (int b = 0; b < 2; ++b) {
    rename_inputs(*body[b], renamed[b]);
    for (const auto& [name, t] : inits[b]) {
      if (renamed[b].count(name)) continue;
      *body[b]->add_initializer() = t;
      ++summary.branch_initializers;
      summary.branch_bytes += payload(t);
    }
  }

  // The opsets and IR version both quantized files need.
  std::map<std::string, int64_t> opsets;
  for (const onnx::ModelProto* m : {&merged, &quantized[0], &quantized[1]})
    for (const onnx::OperatorSetIdProto& o : m->opset_import())
      opsets[o.domain()] = std::max(opsets[o.domain()], static_cast<int64_t>(o.version()));
  merged.clear_opset_import();
  for (const auto& [domain, version] : opsets) {
    onnx::OperatorSetIdProto* o = merged.add_opset_import();
    o->set_domain(domain);
    o->set_version(version);
  }
  merged.set_ir_version(std::max({merged.ir_version(), quantized[0].ir_version(), quantized[1].ir_version()}));

  // Through octet's importer and exporter: the result is checked the way every file octet
  // writes is, and external data (--external-data) is handled as for the other files.
  std::string bytes;
  if (!merged.SerializeToString(&bytes))
    fail(out.string(), ": the quantized merged decoder does not fit one protobuf (2 GiB)");
  merged.Clear();
  Model model = load_model_from_memory(bytes, out);
  bytes.clear();
  save_model(model, out, save);
  return summary;
}

}  // namespace octet::quant
