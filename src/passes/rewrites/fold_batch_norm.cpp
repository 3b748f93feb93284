// Inference BatchNormalization -> folded into the Conv/ConvTranspose before it, or a
// per-channel Mul + Add.
//
// At inference BatchNormalization is an affine map per channel c:
//   Y = X * a[c] + b[c],  a = scale / sqrt(var + epsilon),  b = B - mean * a.
// When X is the output of a Conv or ConvTranspose read by the BatchNormalization alone,
// the map goes into the convolution's weights and bias (the decoders of vision models:
// ConvTranspose -> BatchNormalization -> Relu):
//   Conv          W'[m, ...] = W[m, ...] * a[m]             (W is [M, C/group, k...])
//   ConvTranspose W'[c, f, ...] = W[c, f, ...] * a[m]       (W is [C, M/group, k...],
//                                                             m = group_of(c) * M/group + f)
//   B' = B * a + b (B absent: b).
// W' and B' are new initializers; the original W and B are never changed, and the fold
// is taken only when the convolution is their only reader, so the originals die with it
// (folding a shared weight would keep two copies). Otherwise the BatchNormalization
// becomes Mul(X, a) then Add(b), a and b shaped [C, 1, ..., 1], which the optimized
// elementwise kernels run.
//
// Matched: ai.onnx BatchNormalization, training_mode 0 and only output 0 used, X float32
// with a known rank >= 2, scale/B/mean/var float32 constants of one value per channel.
// The folded parameters are computed in double and rounded once.
#include <cmath>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

struct Affine {
  std::vector<double> a, b;  // per channel: Y = X * a + b
};

std::optional<Affine> batch_norm_affine(const Node* bn) {
  if (!is_op(bn, "BatchNormalization") || bn->attr_int("training_mode", 0) != 0) return std::nullopt;
  for (size_t i = 1; i < bn->outputs().size(); ++i)
    if (bn->output(i)) return std::nullopt;
  const Value* x = bn->input(0);
  if (!x || x->type.dtype != DType::Float32 || !x->type.dims || x->type.rank() < 2) return std::nullopt;
  std::vector<const Tensor*> params;
  for (size_t i = 1; i < 5; ++i) {
    const Tensor* t = constant_value(bn->input(i));
    if (!t || t->dtype() != DType::Float32 || t->rank() != 1) return std::nullopt;
    if (!params.empty() && t->numel() != params[0]->numel()) return std::nullopt;
    params.push_back(t);
  }
  const int64_t channels = params[0]->numel();
  if ((*x->type.dims)[1] != Dim(channels)) return std::nullopt;
  const double epsilon = bn->attr_float("epsilon", 1e-5f);
  const float *scale = params[0]->data<float>(), *bias = params[1]->data<float>();
  const float *mean = params[2]->data<float>(), *var = params[3]->data<float>();
  Affine f;
  for (int64_t c = 0; c < channels; ++c) {
    const double a = static_cast<double>(scale[c]) / std::sqrt(static_cast<double>(var[c]) + epsilon);
    f.a.push_back(a);
    f.b.push_back(static_cast<double>(bias[c]) - static_cast<double>(mean[c]) * a);
  }
  return f;
}

// The Conv/ConvTranspose producing the BatchNormalization's input when the fold applies.
Node* foldable_conv(const Node* bn, int64_t channels) {
  const Value* x = bn->input(0);
  Node* conv = producer(x, "Conv");
  if (!conv) conv = producer(x, "ConvTranspose");
  if (!conv || sole_consumer(x) != bn || read_by_subgraph(x)) return nullptr;
  const Value* w = conv->input(1);
  const Tensor* wt = constant_value(w);
  if (!wt || wt->dtype() != DType::Float32 || wt->rank() < 3 || w->uses().size() != 1) return nullptr;
  if (const Value* b = conv->input(2)) {
    const Tensor* bt = constant_value(b);
    if (!bt || bt->dtype() != DType::Float32 || bt->numel() != channels || b->uses().size() != 1) return nullptr;
  }
  const int64_t group = conv->attr_int("group", 1);
  const int64_t filters = conv->op_type() == "Conv" ? wt->shape()[0] : wt->shape()[1] * group;
  if (group < 1 || filters != channels) return nullptr;
  return conv;
}

bool fold_into_conv(Graph& g, PassContext& ctx, Node* bn, Node* conv, const Affine& f) {
  const Tensor& w = *constant_value(conv->input(1));
  const int64_t channels = static_cast<int64_t>(f.a.size());
  const int64_t group = conv->attr_int("group", 1);
  const bool transpose = conv->op_type() == "ConvTranspose";
  const int64_t d0 = w.shape()[0], d1 = w.shape()[1], taps = w.numel() / std::max<int64_t>(d0 * d1, 1);
  Tensor w2(DType::Float32, w.shape());
  const float* src = w.data<float>();
  float* dst = w2.mutable_data<float>();
  for (int64_t i = 0; i < d0; ++i)
    for (int64_t j = 0; j < d1; ++j) {
      // The output channel this slice of W feeds.
      const int64_t m = transpose ? (i / (d0 / group)) * d1 + j : i;
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t k = (i * d1 + j) * taps + t;
        dst[k] = static_cast<float>(static_cast<double>(src[k]) * f.a[m]);
      }
    }
  Tensor b2(DType::Float32, {channels});
  const Tensor* b = constant_value(conv->input(2));
  for (int64_t m = 0; m < channels; ++m)
    b2.mutable_data<float>()[m] =
        static_cast<float>((b ? static_cast<double>(b->data<float>()[m]) : 0.0) * f.a[m] + f.b[m]);
  GraphPatch patch = make_patch(g);
  Value* wv = patch.add_initializer(conv->input(1)->name() + "_bn", std::move(w2));
  Value* bv = patch.add_initializer((b ? conv->input(2)->name() : conv->name() + "_bias") + "_bn", std::move(b2));
  Node* folded = patch.add_node(conv->op_type(), {conv->input(0), wv, bv}, 1, conv->attributes(), "",
                                conv->name() + "_bn");
  patch.replace_uses(bn->output(0), folded->output(0));
  patch.remove_node(bn);
  patch.remove_node(conv);
  if (!ctx.apply(patch)) return false;
  ctx.count(transpose ? "into ConvTranspose" : "into Conv");
  return true;
}

bool to_scale_shift(Graph& g, PassContext& ctx, Node* bn, const Affine& f) {
  const Value* x = bn->input(0);
  const int64_t channels = static_cast<int64_t>(f.a.size());
  std::vector<int64_t> shape(static_cast<size_t>(x->type.rank() - 1), 1);  // [C, 1, ..., 1]
  shape[0] = channels;
  Tensor a(DType::Float32, shape), b(DType::Float32, shape);
  for (int64_t c = 0; c < channels; ++c) {
    a.mutable_data<float>()[c] = static_cast<float>(f.a[c]);
    b.mutable_data<float>()[c] = static_cast<float>(f.b[c]);
  }
  if (!can_replace(bn->output(0), bn->input(0))) return false;
  GraphPatch patch = make_patch(g);
  Value* av = patch.add_initializer(bn->name() + "_scale", std::move(a));
  Value* bv = patch.add_initializer(bn->name() + "_shift", std::move(b));
  Node* mul = patch.add_node("Mul", {bn->input(0), av}, 1, {}, "", bn->name() + "_mul");
  Node* add = patch.add_node("Add", {mul->output(0), bv}, 1, {}, "", bn->name() + "_add");
  patch.replace_uses(bn->output(0), add->output(0));
  patch.remove_node(bn);
  if (!ctx.apply(patch)) return false;
  ctx.count("as Mul + Add");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  RemovedNodes removed;
  bool changed = false;
  for (Node* n : g.nodes()) {
    if (removed.contains(n)) continue;
    std::optional<Affine> f = batch_norm_affine(n);
    if (!f) continue;
    if (Node* conv = foldable_conv(n, static_cast<int64_t>(f->a.size()))) {
      if (removed.contains(conv)) continue;
      if (fold_into_conv(g, ctx, n, conv, *f)) {
        removed.add({n, conv});
        changed = true;
      }
      continue;
    }
    if (to_scale_shift(g, ctx, n, *f)) {
      removed.add({n});
      changed = true;
    }
  }
  return changed;
}

}  // namespace

Pass fold_batch_norm() { return {"fold_batch_norm", run}; }

}  // namespace octet::passes
