#include "runtime/session.h"

#include <omp.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

namespace octet {

namespace {

std::string op_label(const Node& n) {
  std::ostringstream out;
  out << (n.domain().empty() ? "ai.onnx" : n.domain()) << "::" << n.op_type() << " (opset " << n.opset();
  return out.str();
}

}  // namespace

void bind_dims(const DimVector& declared, const std::vector<int64_t>& actual,
               const std::string& what, Bindings& bindings) {
  if (declared.size() != actual.size())
    fail(what, " has rank ", actual.size(), " (shape ", shape_to_string(actual), "), expected rank ",
         declared.size(), " ", dims_to_string(declared));
  for (size_t i = 0; i < declared.size(); ++i) {
    const Dim& d = declared[i];
    if (d.is_symbol()) {
      const std::string name = d.symbol_name();
      auto [it, inserted] = bindings.emplace(name, actual[i]);
      if (!inserted && it->second != actual[i])
        fail(what, " dim ", i, " is ", actual[i], " but '", name, "' is already ", it->second,
             " from another input");
      continue;
    }
    auto expected = d.evaluate(bindings);
    if (expected && *expected != actual[i])
      fail(what, " dim ", i, " is ", actual[i], ", expected ", *expected,
           d.is_constant() ? "" : " (" + d.to_string() + ")");
  }
}

Session::Session(std::shared_ptr<const Graph> graph, SessionOptions options)
    : graph_(std::move(graph)), options_(options) {
  OCTET_ASSERT(options_.threads >= 0, "SessionOptions.threads must be >= 0");
  threads_ = options_.threads > 0 ? options_.threads : std::max(1, omp_get_num_procs());
  const KernelRegistry& reference = KernelRegistry::reference();
  // Every unsupported op at once, so the user learns the whole gap in one go.
  std::map<std::string, std::vector<std::string>> missing;
  for (const Node* n : graph_->nodes())
    if (!reference.find(n->domain(), n->op_type())) missing[op_label(*n)].push_back(n->name());
  if (!missing.empty()) {
    std::ostringstream msg;
    msg << "model uses " << missing.size() << " op(s) octet cannot run:";
    for (const auto& [op, nodes] : missing) {
      msg << "\n  " << op << ", node '" << nodes.front() << "'";
      if (nodes.size() > 1) msg << " and " << nodes.size() - 1 << " more";
      msg << ")";
    }
    fail(msg.str());
  }

  for (const Value* v : graph_->values()) slots_.emplace(v, static_cast<int>(slots_.size()));
  std::map<int, size_t> last_reader;
  for (const Node* n : graph_->nodes()) {
    Step step{n, reference.find_def(n->domain(), n->op_type()), nullptr, {}, {}, {}};
    if (options_.kernels == KernelChoice::Optimized) {
      const KernelDef* fast = KernelRegistry::optimized().find_def(n->domain(), n->op_type());
      std::unique_ptr<KernelState> state;
      if (fast && (!fast->prepare || fast->prepare(*n, state))) {
        step.kernel = fast;
        step.state = std::move(state);
      }
    }
    for (const Value* v : n->inputs()) {
      step.inputs.push_back(v ? slot_of(v) : -1);
      if (v) last_reader[slot_of(v)] = steps_.size();
    }
    for (const Value* v : n->implicit_inputs()) last_reader[slot_of(v)] = steps_.size();
    for (const Value* v : n->outputs()) step.outputs.push_back(v ? slot_of(v) : -1);
    steps_.push_back(std::move(step));
  }
  std::set<int> keep;  // graph outputs and constants live for the whole run
  for (const Value* v : graph_->outputs()) keep.insert(slot_of(v));
  for (const Value* v : graph_->initializers()) keep.insert(slot_of(v));
  for (const auto& [slot, step] : last_reader)
    if (!keep.count(slot)) steps_[step].release.push_back(slot);
}

int Session::slot_of(const Value* v) const { return slots_.at(v); }

int Session::optimized_nodes() const {
  int count = 0;
  for (const Step& step : steps_)
    if (step.kernel != KernelRegistry::reference().find_def(step.node->domain(), step.node->op_type())) ++count;
  return count;
}

std::map<std::string, int> Session::reference_ops() const {
  std::map<std::string, int> out;
  for (const Step& step : steps_)
    if (step.kernel == KernelRegistry::reference().find_def(step.node->domain(), step.node->op_type()))
      ++out[(step.node->domain().empty() ? "ai.onnx" : step.node->domain()) + "::" + step.node->op_type()];
  return out;
}

std::vector<const Value*> Session::required_inputs() const {
  std::vector<const Value*> out;
  for (const Value* v : graph_->inputs())
    if (!v->is_initializer()) out.push_back(v);
  return out;
}

NamedTensors Session::run(const NamedTensors& inputs) const {
  // oneDNN and the kernels' parallel loops size their teams from this thread's setting.
  omp_set_num_threads(threads_);
  std::vector<std::shared_ptr<const Tensor>> values(slots_.size());
  for (const Value* v : graph_->initializers()) values[slot_of(v)] = v->constant();

  // Bind and validate inputs.
  Bindings bindings;
  std::set<std::string> given;
  for (const auto& [name, tensor] : inputs) {
    const Value* v = graph_->find_value(name);
    if (!v || !v->is_graph_input()) {
      std::string expected;
      for (const Value* r : required_inputs()) expected += (expected.empty() ? "" : ", ") + r->name();
      fail("'", name, "' is not an input of this model (inputs: ", expected, ")");
    }
    if (!given.insert(name).second) fail("input '", name, "' is given twice");
    if (v->type.known() && tensor.dtype() != v->type.dtype)
      fail("input '", name, "' is ", dtype_name(tensor.dtype()), ", the model expects ",
           dtype_name(v->type.dtype));
    if (v->type.dims) bind_dims(*v->type.dims, tensor.shape(), "input '" + name + "'", bindings);
    values[slot_of(v)] = std::make_shared<const Tensor>(tensor);
  }
  for (const Value* v : required_inputs())
    if (!given.count(v->name())) fail("input '", v->name(), "' (", v->type.to_string(), ") is missing");

  for (const Step& step : steps_) {
    std::vector<const Tensor*> in;
    for (int slot : step.inputs) {
      OCTET_ASSERT(slot < 0 || values[slot], "value not computed before ", step.node->describe());
      in.push_back(slot >= 0 ? values[slot].get() : nullptr);
    }
    KernelContext ctx(*step.node, std::move(in));
    ctx.set_state(step.state.get());
    ctx.set_threads(threads_);
    step.kernel->run(ctx);
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) continue;
      Tensor& out = ctx.outputs()[i];
      const Value* v = step.node->output(i);
      if (out.dtype() == DType::Undefined)
        fail(step.node->describe(), ": kernel produced no output ", i);
      if (options_.check_inferred_shapes && v->type.known()) {
        if (v->type.dtype != out.dtype())
          fail("internal error: ", step.node->describe(), " output '", v->name(), "' is ",
               dtype_name(out.dtype()), " but inference said ", dtype_name(v->type.dtype));
        // Symbols first seen here (fresh ones from unknown dims) get bound by the result.
        if (v->type.dims)
          bind_dims(*v->type.dims, out.shape(),
                    "internal error: " + step.node->describe() + " output '" + v->name() + "'", bindings);
      }
      values[step.outputs[i]] = std::make_shared<const Tensor>(std::move(out));
    }
    for (int slot : step.release) values[slot].reset();
  }

  NamedTensors outputs;
  for (const Value* v : graph_->outputs()) {
    OCTET_ASSERT(values[slot_of(v)], "graph output '", v->name(), "' was not computed");
    outputs.emplace_back(v->name(), *values[slot_of(v)]);
  }
  return outputs;
}

}  // namespace octet
