// Drivers of GPTQ (gptq.h) over a model: the Gram matrices of the quantized layers' inputs
// on calibration samples, and the rounding of every weight that can take it.
#include <algorithm>
#include <set>

#include "octet/error.h"
#include "quant/gptq.h"
#include "runtime/session.h"

namespace octet::quant {
namespace {

// A planned weight GPTQ can round: B of a MatMul ([K, N]) or of a Gemm ([K, N], or [N, K]
// with transB), read by this one quantized node.
struct Candidate {
  const QuantizedNode* q = nullptr;
  Value* weight = nullptr;
  bool transposed = false;  // Gemm transB: the stored weight is [N, K]
  std::string input;        // the activation whose Gram matrix it needs
  int64_t k = 0, n = 0;
};

std::vector<Candidate> candidates(const QuantizePlan& plan, GptqSummary& summary) {
  std::map<const Value*, int> readers;
  for (const QuantizedNode& q : plan.nodes)
    if (q.kind == QuantKind::Weight) ++readers[q.node->input(static_cast<size_t>(q.weight_input))];
  std::vector<Candidate> out;
  for (const QuantizedNode& q : plan.nodes) {
    if (q.kind != QuantKind::Weight) continue;
    const std::string& op = q.node->op_type();
    Value* w = q.node->input(static_cast<size_t>(q.weight_input));
    if (op != "MatMul" && op != "Gemm") {
      summary.skipped.push_back({q.node, "GPTQ rounds MatMul and Gemm weights; " + op + " keeps nearest rounding"});
      continue;
    }
    if (readers[w] > 1) {
      summary.skipped.push_back({q.node, "its weight is read by " + std::to_string(readers[w]) +
                                             " quantized nodes with different inputs: nearest rounding"});
      continue;
    }
    const Tensor& t = *w->constant();
    if (t.rank() != 2 || t.dtype() != DType::Float32) continue;
    Candidate c{&q, w, op == "Gemm" && q.node->attr_int("transB", 0) != 0, q.node->input(0)->name(), 0, 0};
    c.k = t.shape()[c.transposed ? 1 : 0];
    c.n = t.shape()[c.transposed ? 0 : 1];
    out.push_back(c);
  }
  return out;
}

}  // namespace

double gptq_damping(bool per_token) { return per_token ? 0.1 : 0.01; }

std::map<std::string, GramObserver> observe_grams(const Session& session,
                                                  const std::vector<std::pair<std::string, int64_t>>& inputs,
                                                  const CalibrationSource& source, const std::vector<size_t>& samples,
                                                  const std::function<void()>& sample_done,
                                                  const std::set<std::string>& per_token, DType row_type) {
  std::map<std::string, GramObserver> grams;
  for (const auto& [name, k] : inputs)
    grams.emplace(name, GramObserver(name, k, per_token.count(name) ? std::optional<DType>(row_type) : std::nullopt));
  for (size_t index : samples) {
    session.run(source.sample(index), [&](const Value& v, const Tensor& t) {
      if (auto it = grams.find(v.name()); it != grams.end()) it->second.observe(t);
    });
    if (sample_done) sample_done();
  }
  return grams;
}

std::shared_ptr<const PreparedWeights> gptq_weights(const Session& session, const QuantizePlan& plan,
                                                    const CalibrationSource& source,
                                                    const std::vector<size_t>& samples, bool per_channel,
                                                    DType row_type, const std::function<void(size_t, size_t)>& progress,
                                                    GptqSummary& summary, size_t max_gram_bytes) {
  auto prepared = std::make_shared<PreparedWeights>();
  const std::vector<Candidate> all = candidates(plan, summary);
  // Inputs whose every quantized reader takes them per token: Gram matrices of rows in
  // their quantization steps (gptq.h).
  std::set<std::string> per_token, calibrated;
  for (const QuantizedNode& q : plan.nodes)
    if (q.kind == QuantKind::Weight) (q.per_token ? per_token : calibrated).insert(q.node->input(0)->name());
  for (const std::string& name : calibrated) per_token.erase(name);
  // Inputs in first-use order, split into passes whose Gram matrices fit the budget.
  std::vector<std::pair<std::string, int64_t>> inputs;
  for (const Candidate& c : all)
    if (std::none_of(inputs.begin(), inputs.end(), [&](const auto& p) { return p.first == c.input; }))
      inputs.emplace_back(c.input, c.k);
  std::vector<std::vector<std::pair<std::string, int64_t>>> passes;
  size_t bytes = 0;
  for (const auto& in : inputs) {
    const size_t b = static_cast<size_t>(in.second) * static_cast<size_t>(in.second) * sizeof(float);
    if (passes.empty() || (bytes + b > max_gram_bytes && !passes.back().empty())) passes.emplace_back(), bytes = 0;
    passes.back().push_back(in);
    bytes += b;
  }
  const size_t total = passes.size() * samples.size() + all.size();
  size_t done = 0;
  double err_nearest = 0, err_gptq = 0;
  for (const auto& pass : passes) {
    std::map<std::string, GramObserver> grams = observe_grams(session, pass, source, samples, [&] {
      if (progress) progress(++done, total);
    }, per_token, row_type);
    ++summary.calibration_passes;
    for (const Candidate& c : all) {
      auto g = grams.find(c.input);
      if (g == grams.end()) continue;
      if (progress) progress(++done, total);
      if (g->second.rows() == 0) {
        summary.skipped.push_back({c.q->node, "its input '" + c.input + "' was never computed on the samples"});
        continue;
      }
      const Tensor kn = c.transposed ? transpose_matrix(*c.weight->constant()) : *c.weight->constant();
      QuantizedWeight qw = quantize_weight(kn, 1, per_channel, c.weight->name());
      std::vector<float> scales(qw.scale.data<float>(), qw.scale.data<float>() + qw.scale.numel());
      const float* w = kn.data<float>();
      const std::vector<double> h = g->second.matrix();
      const std::vector<int8_t> q = gptq_round(w, c.k, c.n, scales, h, gptq_damping(per_token.count(c.input) > 0));
      err_nearest += output_error(w, qw.data.data<int8_t>(), c.k, c.n, scales, h);
      err_gptq += output_error(w, q.data(), c.k, c.n, scales, h);
      std::copy(q.begin(), q.end(), qw.data.mutable_data<int8_t>());
      if (c.transposed) qw.data = transpose_matrix(qw.data);  // back to the stored [N, K]
      (*prepared)[c.weight->name()] = std::move(qw);
      ++summary.layers;
    }
  }
  if (summary.layers) {
    summary.error_nearest = err_nearest / static_cast<double>(summary.layers);
    summary.error_gptq = err_gptq / static_cast<double>(summary.layers);
  }
  return prepared;
}

}  // namespace octet::quant
