#include "quant/qdq_rewrite.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "ops/infer.h"
#include "quant/quant_params.h"
#include "quant/raise_opset.h"

namespace octet::quant {
namespace {

Tensor zero_point_scalar(DType dtype, int32_t zp) {
  if (dtype == DType::UInt8) return Tensor::scalar<uint8_t>(static_cast<uint8_t>(zp));
  OCTET_ASSERT(dtype == DType::Int8, "activation type ", dtype_name(dtype));
  return Tensor::scalar<int8_t>(static_cast<int8_t>(zp));
}

// A float constant of n elements along the last axis and 1 on every other (a Linear
// layer's bias; Marian and BART keep final_logits_bias as [1, vocab]), with no more dims
// than the matmul output `y` so that adding it never grows the result; or null.
Value* bias_constant(Value* v, int64_t n, const Value* y) {
  if (!v || !v->is_initializer() || v->is_graph_input() || !v->constant()) return nullptr;
  const Tensor& t = *v->constant();
  if (t.dtype() != DType::Float32 || t.numel() != n || t.rank() < 1 || t.shape().back() != n) return nullptr;
  if (!y->type.dims || t.rank() > static_cast<int64_t>(y->type.dims->size())) return nullptr;
  return v;
}

class Rewriter {
 public:
  Rewriter(Graph& g, const ActivationTable& params, const QuantizeOptions& o, const PreparedWeights* prepared)
      : graph_(g), patch_(make_patch(g)), params_(params), o_(o), prepared_(prepared) {}

  void rewrite(const QuantizedNode& q) {
    if ((o_.mode == Mode::Dynamic || q.per_token) && q.kind == QuantKind::Weight) return rewrite_dynamic(q);
    if (q.kind == QuantKind::Activation && o_.row_probabilities)
      if (Node* softmax = row_softmax_of(q.node)) return rewrite_row_probabilities(q, softmax);
    for (int slot : q.activation_inputs) {
      Value* v = q.node->input(static_cast<size_t>(slot));
      patch_.set_input(q.node, static_cast<size_t>(slot), dequantized_activation(v));
    }
    if (q.kind == QuantKind::Activation) return record(q, q.node->output(0), q.node->output(0));
    Value* w = q.node->input(static_cast<size_t>(q.weight_input));
    const bool per_channel = q.kind == QuantKind::Embedding || o_.per_channel_weights;
    patch_.set_input(q.node, static_cast<size_t>(q.weight_input),
                     dequantized_weight(w, q.weight_axis, per_channel));
    (q.kind == QuantKind::Embedding ? result_.embeddings : result_.weights)++;
    record(q, q.node->output(0), q.node->output(0));
  }

  RewriteResult finish() {
    for (auto& [w, rewritten] : rewritten_uses_)
      if (rewritten == static_cast<int>(w->uses().size())) patch_.remove_initializer(w);
    patch_.apply();
    if (result_.dynamic_matmuls && o_.target == Target::Octet) graph_.opset_imports.emplace("octet", 1);
    return std::move(result_);
  }

 private:
  // One Q/DQ pair per activation, shared by every quantized reader.
  Value* dequantized_activation(Value* v) {
    if (auto it = dequantized_.find(v); it != dequantized_.end()) return it->second;
    auto p = params_.find(v->name());
    OCTET_ASSERT(p != params_.end(), "no calibrated range for '", v->name(), "'");
    Value* scale = patch_.add_initializer(v->name() + "_scale", Tensor::scalar<float>(p->second.scale));
    Value* zp = patch_.add_initializer(v->name() + "_zero_point", zero_point_scalar(p->second.dtype, p->second.zero_point));
    Node* q = patch_.add_node("QuantizeLinear", {v, scale, zp}, 1, {}, "", v->name() + "_quantize");
    Node* dq = patch_.add_node("DequantizeLinear", {q->output(0), scale, zp}, 1, {}, "", v->name() + "_dequantize");
    ++result_.activation_pairs;
    return dequantized_[v] = dq->output(0);
  }

  // The prepared (GPTQ) rounding of w when there is one for this layout, else nearest.
  // `transposed`: t is w's [N, K] transposed to [K, N] (dynamic Gemm with transB).
  QuantizedWeight weight_for(const Value* w, const Tensor& t, int axis, bool per_channel, bool transposed = false) {
    if (prepared_) {
      auto it = prepared_->find(w->name());
      if (it != prepared_->end() && it->second.scale.numel() == (per_channel ? t.shape()[static_cast<size_t>(axis)] : 1)) {
        QuantizedWeight qw{transposed ? transpose_matrix(it->second.data) : it->second.data, it->second.scale,
                           it->second.zero_point};
        if (qw.data.shape() == t.shape()) return qw;
      }
    }
    return quantize_weight(t, axis, per_channel, w->name());
  }

  Value* dequantized_weight(Value* w, int axis, bool per_channel) {
    QuantizedWeight qw = weight_for(w, *w->constant(), axis, per_channel);
    Value* data = patch_.add_initializer(w->name() + "_quantized", std::move(qw.data));
    Value* scale = patch_.add_initializer(w->name() + "_scale", std::move(qw.scale));
    Value* zp = patch_.add_initializer(w->name() + "_zero_point", std::move(qw.zero_point));
    std::vector<Attribute> attrs;
    if (per_channel) attrs.push_back(Attribute::make_int("axis", axis));
    Node* dq = patch_.add_node("DequantizeLinear", {data, scale, zp}, 1, std::move(attrs), "", w->name() + "_dequantize");
    ++rewritten_uses_[w];
    return dq->output(0);
  }

  // The Softmax over the last axis whose output only `matmul` reads, as its A; or null.
  Node* row_softmax_of(Node* matmul) {
    Value* p = matmul->input(0);
    Node* sm = p->producer();
    if (!sm || sm->op_type() != "Softmax" || !sm->domain().empty() || p->uses().size() != 1 || p->is_graph_output())
      return nullptr;
    const int64_t axis = sm->attr_int("axis", -1);
    const Value* s = sm->input(0);
    if (axis == -1) return sm;
    if (!s->type.dims || axis != static_cast<int64_t>(s->type.dims->size()) - 1) return nullptr;
    return sm;
  }

  // P.V with P = Softmax(S) -> (Q/DQ(E) . Q/DQ(V)) / sum(E), E = Exp(S - ReduceMax(S)):
  // E's rows all peak at exactly 1, so the fixed scale 1/255 (1/127 for int8; 1/4095 in
  // int16 with wide_probabilities) is each row's max over the levels (see
  // QuantizeOptions::row_probabilities).
  void rewrite_row_probabilities(const QuantizedNode& q, Node* softmax) {
    Node* n = q.node;
    const std::string base = n->name() + "_rows";
    Value* s = softmax->input(0);
    Value* axes = patch_.add_initializer(base + "_axes", Tensor::from_vector<int64_t>({1}, {-1}));
    const Attribute keep = Attribute::make_int("keepdims", 1);
    Node* mx = graph_.opset_version("") >= 18
                   ? patch_.add_node("ReduceMax", {s, axes}, 1, {keep}, "", base + "_max")
                   : patch_.add_node("ReduceMax", {s}, 1, {keep, Attribute::make_ints("axes", {-1})}, "", base + "_max");
    Node* shifted = patch_.add_node("Sub", {s, mx->output(0)}, 1, {}, "", base + "_shift");
    Node* e = patch_.add_node("Exp", {shifted->output(0)}, 1, {}, "", base + "_exp");
    Node* sum = patch_.add_node("ReduceSum", {e->output(0), axes}, 1, {keep}, "", base + "_sum");
    const bool int8 = o_.activation_type == DType::Int8;
    const bool wide = writes_wide_probabilities(o_);  // write_quantized_graph raised the opset to 21
    const float step = wide ? 1.0f / kWideProbabilityLevels : int8 ? 1.0f / 127 : 1.0f / 255;
    Value* scale = patch_.add_initializer(base + "_scale", Tensor::scalar<float>(step));
    Value* zp = patch_.add_initializer(base + "_zero_point", wide ? Tensor::scalar<int16_t>(0)
                                                                   : zero_point_scalar(o_.activation_type, 0));
    Node* qe = patch_.add_node("QuantizeLinear", {e->output(0), scale, zp}, 1, {}, "", base + "_quantize");
    Node* dqe = patch_.add_node("DequantizeLinear", {qe->output(0), scale, zp}, 1, {}, "", base + "_dequantize");
    ++result_.activation_pairs;
    Node* mm = patch_.add_node("MatMul", {dqe->output(0), dequantized_activation(n->input(1))}, 1, {}, "",
                               base + "_matmul");
    Node* y = patch_.add_node("Div", {mm->output(0), sum->output(0)}, 1, {}, "", base + "_normalize");
    patch_.replace_uses(n->output(0), y->output(0));
    patch_.remove_node(n);
    patch_.remove_node(softmax);
    record(q, n->output(0), y->output(0));
  }

  // Dynamic mode: the matmul and its bias become one node (octet) or the integer chain
  // onnxruntime runs (ort). B is always [K, N] here, output channels on axis 1.
  void rewrite_dynamic(const QuantizedNode& q) {
    Node* n = q.node;
    Value* w = n->input(1);
    Tensor b = *w->constant();
    Value* bias = nullptr;
    Value* out = n->output(0);
    std::vector<Node*> replaced{n};
    if (n->op_type() == "Gemm") {
      if (n->attr_int("transB", 0)) b = transpose_matrix(b);
      if (Value* c = n->input(2)) {
        bias = bias_constant(c, b.shape()[1], out);
        if (!bias || n->attr_float("alpha", 1) != 1 || n->attr_float("beta", 1) != 1)
          return skip(n, "dynamic mode takes a Gemm only with alpha = beta = 1 and a constant C of [N] or [1, N]");
      }
    } else if (out->uses().size() == 1 && !out->is_graph_output()) {
      // MatMul + Add(bias), as Linear layers export: fold the bias in.
      Node* add = out->uses()[0].node;
      if (add->op_type() == "Add" && add->domain().empty()) {
        Value* other = add->input(out->uses()[0].index == 0 ? 1 : 0);
        if ((bias = bias_constant(other, b.shape()[1], out))) {
          replaced.push_back(add);
          out = add->output(0);
        }
      }
    }
    QuantizedWeight qw = weight_for(w, b, 1, o_.per_channel_weights, n->op_type() == "Gemm" && n->attr_int("transB", 0));
    Value* data = patch_.add_initializer(w->name() + "_quantized", std::move(qw.data));
    Value* scale = patch_.add_initializer(w->name() + "_scale", std::move(qw.scale));
    Value* zp = patch_.add_initializer(w->name() + "_zero_point", std::move(qw.zero_point));
    Value* result = o_.target == Target::Octet ? octet_dynamic(n, data, scale, zp, bias)
                                               : ort_dynamic(n, data, scale, zp, bias);
    patch_.replace_uses(out, result);
    for (Node* r : replaced) patch_.remove_node(r);
    ++rewritten_uses_[w];
    ++result_.dynamic_matmuls;
    ++result_.weights;
    record(q, out, result);
  }

  // QMatMul's bias is 1-D [N]: a [1, N] one becomes a new 1-D initializer sharing its bytes
  // (the original may be read elsewhere and is never touched).
  Value* octet_dynamic(Node* n, Value* data, Value* scale, Value* zp, Value* bias) {
    if (bias && bias->constant()->rank() != 1) {
      const Tensor& t = *bias->constant();
      bias = patch_.add_initializer(bias->name() + "_1d", Tensor(t.dtype(), {t.numel()}, t.buffer()));
    }
    Node* qm = patch_.add_node("QMatMul", {n->input(0), nullptr, nullptr, data, scale, zp, bias}, 1,
                               {Attribute::make_string("dynamic_type", "uint8")}, "octet", n->name() + "_qmatmul");
    return qm->output(0);
  }

  // DynamicQuantizeLinear -> MatMulInteger -> Cast -> * (x_scale * w_scale) [+ bias].
  Value* ort_dynamic(Node* n, Value* data, Value* scale, Value* zp, Value* bias) {
    const std::string base = n->name();
    Node* dql = patch_.add_node("DynamicQuantizeLinear", {n->input(0)}, 3, {}, "", base + "_quantize_input");
    Node* mmi = patch_.add_node("MatMulInteger", {dql->output(0), data, dql->output(2), zp}, 1, {}, "", base + "_matmul_integer");
    Node* cast = patch_.add_node("Cast", {mmi->output(0)}, 1,
                                 {Attribute::make_int("to", static_cast<int64_t>(DType::Float32))}, "", base + "_to_float");
    Node* scales = patch_.add_node("Mul", {dql->output(1), scale}, 1, {}, "", base + "_scales");
    Node* y = patch_.add_node("Mul", {cast->output(0), scales->output(0)}, 1, {}, "", base + "_dequantize");
    if (!bias) return y->output(0);
    return patch_.add_node("Add", {y->output(0), bias}, 1, {}, "", base + "_bias")->output(0);
  }

  void record(const QuantizedNode& q, Value* float_output, Value* quantized_output) {
    result_.layers.push_back({q.node->name(), q.node->op_type(), q.kind, float_output->name(), quantized_output});
  }

  void skip(Node* n, std::string why) { result_.skipped.push_back({n, std::move(why)}); }

  Graph& graph_;
  GraphPatch patch_;
  const ActivationTable& params_;
  const QuantizeOptions& o_;
  const PreparedWeights* prepared_;
  RewriteResult result_;
  std::map<Value*, Value*> dequantized_;
  std::map<Value*, int> rewritten_uses_;
};

}  // namespace

QuantizedWeight quantize_weight(const Tensor& w, int axis, bool per_channel, const std::string& name) {
  OCTET_ASSERT(w.dtype() == DType::Float32, "quantize_weight on ", w.describe());
  const auto& shape = w.shape();
  const float* x = w.data<float>();
  const int64_t n = w.numel();
  std::vector<float> scales;
  int64_t channels = 1, inner = n;
  if (per_channel) {
    scales = weight_params_per_channel(x, shape, axis, DType::Int8, true, name).scales;
    channels = shape[static_cast<size_t>(axis)];
    inner = shape_numel(std::vector<int64_t>(shape.begin() + axis + 1, shape.end()));
  } else {
    scales = {weight_params_per_tensor(x, static_cast<size_t>(n), DType::Int8, true, name).scale};
  }
  // Element i belongs to channel (i / inner) % channels; symmetric int8 never uses -128.
  QuantizedWeight q;
  q.data = Tensor(DType::Int8, shape);
  int8_t* out = q.data.mutable_data<int8_t>();
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::nearbyint(x[i] / scales[static_cast<size_t>((i / inner) % channels)]);
    out[i] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
  }
  if (per_channel) {
    q.scale = Tensor::from_vector<float>({channels}, scales);
    q.zero_point = Tensor(DType::Int8, {channels});
  } else {
    q.scale = Tensor::scalar<float>(scales[0]);
    q.zero_point = Tensor::scalar<int8_t>(0);
  }
  return q;
}

RewriteResult write_quantized_graph(Graph& graph, const QuantizePlan& plan, const ActivationTable& params,
                                    const QuantizeOptions& options, const PreparedWeights* prepared) {
  // QuantizeLinear to int16 (the probabilities' wide levels) is opset 21.
  const bool wide = writes_wide_probabilities(options) &&
                    std::any_of(plan.nodes.begin(), plan.nodes.end(),
                                [](const QuantizedNode& q) { return q.kind == QuantKind::Activation; });
  if (wide && graph.opset_version("") < 21)
    raise_opset_to_21(graph, "the quantized graph", "QuantizeLinear of the attention probabilities to int16 needs it");
  Rewriter rewriter(graph, params, options, prepared);
  for (const QuantizedNode& q : plan.nodes) rewriter.rewrite(q);
  return rewriter.finish();
}

}  // namespace octet::quant
