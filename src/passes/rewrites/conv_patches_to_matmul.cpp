// Conv whose kernel tiles its input (stride == kernel, no padding) -> patches + MatMul.
//
// A ViT's patch embedding is Conv(X[N,C,H,W], W[OC,C,k,k], stride k): every output pixel
// reads its own k x k patch, no two patches overlap, so the Conv is one GEMM:
//   Y[n, oc, oh, ow] = sum_{c,i,j} X[n, c, oh*k+i, ow*k+j] * W[oc, c, i, j] + B[oc].
// Written as plain ops:
//   Reshape(X, [0, C, OH, k, OW, k]) -> Transpose(0,2,4,1,3,5) -> Reshape([0, OH*OW, C*k*k])
//   -> MatMul(W as [C*k*k, OC], a new initializer) [-> Add(B)]       = [N, OH*OW, OC]
// (fuse_matmul_bias then makes the MatMul + Add an octet.MatMulBias). The patch Transpose
// moves runs of k contiguous elements, and the GEMM runs on oneDNN's matmul; measured on
// vit_tiny (2 threads) this beats oneDNN's convolution, which wants channels-last src/dst
// and so reorders X in and Y out on every run (docs in kernels/cpu/dnnl_conv.h).
//
// When Y is only flattened and transposed to tokens, as every ViT does next
// (Reshape [N, OC, OH*OW] then Transpose(0,2,1)), the MatMul already wrote [N, OH*OW, OC]:
// both nodes go (with a symbolic batch the flatten's target comes from Shape(Y), which is
// rebuilt from X's batch dim). Otherwise a Reshape [0, OH, OW, OC] and Transpose(0,3,1,2) give Y back.
// The same holds for 1-D and 3-D Convs, with one (size, k) axis pair per spatial dim.
//
// Matched: ai.onnx Conv, float32 X/W/B, W a constant (not an overridable graph input) of
// rank 3..5, group 1, kernel_shape absent or W's, dilations 1, strides equal to the
// kernel, pads absent or 0 (any auto_pad: at stride == kernel and an input divisible by
// it every mode pads 0), X's channel and spatial dims known numbers and each spatial dim
// a multiple of its kernel (otherwise the Conv drops the ragged border, which a Reshape
// cannot). X's batch dim may be symbolic: the Reshapes copy it with 0. W is never
// changed in place; the transposed copy is a new initializer.
#include <algorithm>
#include <functional>
#include <numeric>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

struct Match {
  Node* conv = nullptr;
  const Tensor* w = nullptr;
  int64_t channels = 0, filters = 0;
  std::vector<int64_t> kernel, out;  // per spatial dim: k and the number of patches
  // The ViT tail (Reshape to [N, OC, patches], Transpose(0,2,1)) when it follows.
  Node* flatten = nullptr;
  Node* to_tokens = nullptr;
  std::vector<Node*> shapes;  // Shape(Y) nodes beside the tail, rebuilt from X's shape
};

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [&](int64_t e) { return e == x; });
}

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<int64_t>());
}

// Reshape(Y, [N, OC, patches]) read only by Transpose(perm 0,2,1), both typed as such.
// Y may also be read by Shape nodes (no start/end): with a symbolic batch the exporter's
// flatten computes its target from Shape(Y), which then becomes
// Concat(Shape(X)[0:1], [OC, O1, ..., Os]) so that Y itself can go.
void match_token_tail(const Graph& g, const Value* x, Match& m) {
  const Value* y = m.conv->output(0);
  if (y->is_graph_output()) return;
  Node* flatten = nullptr;
  std::vector<Node*> shapes;
  for (const Use& u : y->uses()) {
    if (u.implicit) return;
    if (is_op(u.node, "Reshape") && u.index == 0 && !flatten) {
      flatten = u.node;
    } else if (is_op(u.node, "Shape") && !u.node->has_attr("start") && !u.node->has_attr("end") &&
               onnx_opset_at_least(g, 13)) {
      shapes.push_back(u.node);
    } else {
      return;
    }
  }
  if (!flatten) return;
  const Value* flat = flatten->output(0);
  const int64_t patches = product(m.out);
  if (!flat || !flat->type.dims || *flat->type.dims != DimVector{(*x->type.dims)[0], m.filters, patches}) return;
  Node* transpose = sole_consumer(flat);
  if (!is_op(transpose, "Transpose") || transpose->attr_ints("perm") != std::vector<int64_t>{0, 2, 1}) return;
  if (!can_replace(transpose->output(0), flat) || read_by_subgraph(transpose->output(0))) return;
  m.flatten = flatten;
  m.to_tokens = transpose;
  m.shapes = std::move(shapes);
}

bool match(Node* conv, Match& m) {
  const Value* x = conv->input(0);
  const Value* w = conv->input(1);
  const Value* b = conv->input(2);
  const Value* y = conv->output(0);
  if (!x || !w || !y || x->type.dtype != DType::Float32) return false;
  const Tensor* wt = constant_value(w);
  if (!wt || wt->dtype() != DType::Float32 || wt->rank() < 3 || wt->rank() > 5 || wt->numel() == 0) return false;
  if (b && (b->type.dtype != DType::Float32 || !b->type.dims || *b->type.dims != DimVector{wt->shape()[0]}))
    return false;
  const int64_t rank = wt->rank(), spatial = rank - 2;
  if (!x->type.dims || x->type.rank() != rank || conv->attr_int("group", 1) != 1) return false;
  const std::vector<int64_t> kernel(wt->shape().begin() + 2, wt->shape().end());
  if (conv->has_attr("kernel_shape") && conv->attr_ints("kernel_shape") != kernel) return false;
  if (conv->attr_ints("strides", std::vector<int64_t>(spatial, 1)) != kernel) return false;
  if (!all_equal(conv->attr_ints("dilations", std::vector<int64_t>(spatial, 1)), 1)) return false;
  if (!all_equal(conv->attr_ints("pads", std::vector<int64_t>(2 * spatial, 0)), 0)) return false;
  const DimVector& xd = *x->type.dims;
  if (xd[1] != Dim(wt->shape()[1])) return false;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < spatial; ++i) {
    const std::optional<int64_t> in = xd[static_cast<size_t>(2 + i)].constant();
    if (!in || *in <= 0 || *in % kernel[static_cast<size_t>(i)] != 0) return false;
    out.push_back(*in / kernel[static_cast<size_t>(i)]);
  }
  if (read_by_subgraph(y)) return false;
  m = Match{conv, wt, wt->shape()[1], wt->shape()[0], kernel, out, nullptr, nullptr, {}};
  match_token_tail(*conv->graph(), x, m);
  return true;
}

Value* shape_constant(GraphPatch& patch, const std::string& name, const std::vector<int64_t>& dims) {
  return patch.add_initializer(name, Tensor::from_vector<int64_t>({static_cast<int64_t>(dims.size())}, dims));
}

// W [OC, K] (K = C * prod(kernel)) transposed to [K, OC]: the MatMul's B.
Tensor weight_as_columns(const Tensor& w) {
  const int64_t oc = w.shape()[0], k = w.numel() / oc;
  Tensor t(DType::Float32, {k, oc});
  const float* src = w.data<float>();
  float* dst = t.mutable_data<float>();
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < k; ++i) dst[i * oc + o] = src[o * k + i];
  return t;
}

bool apply(Graph& g, PassContext& ctx, const Match& m) {
  const std::string& base = m.conv->name();
  const int64_t spatial = static_cast<int64_t>(m.kernel.size());
  const int64_t patches = product(m.out), patch_size = m.channels * product(m.kernel);
  GraphPatch patch = make_patch(g);

  // [N, C, O1, k1, O2, k2, ...] -> [N, O1, O2, ..., C, k1, k2, ...]
  std::vector<int64_t> split = {0, m.channels}, perm = {0};
  for (int64_t i = 0; i < spatial; ++i) {
    split.push_back(m.out[static_cast<size_t>(i)]);
    split.push_back(m.kernel[static_cast<size_t>(i)]);
    perm.push_back(2 + 2 * i);
  }
  perm.push_back(1);
  for (int64_t i = 0; i < spatial; ++i) perm.push_back(3 + 2 * i);

  Node* cut = patch.add_node("Reshape", {m.conv->input(0), shape_constant(patch, base + "_patch_grid", split)}, 1,
                             {}, "", base + "_patch_grid");
  Node* gather = patch.add_node("Transpose", {cut->output(0)}, 1, {Attribute::make_ints("perm", perm)}, "",
                                base + "_patches");
  Node* rows = patch.add_node("Reshape",
                              {gather->output(0), shape_constant(patch, base + "_patch_rows", {0, patches, patch_size})},
                              1, {}, "", base + "_patch_rows");
  Value* w = patch.add_initializer(base + "_weight_columns", weight_as_columns(*m.w));
  Node* gemm = patch.add_node("MatMul", {rows->output(0), w}, 1, {}, "", base + "_matmul");
  Value* tokens = gemm->output(0);  // [N, patches, OC]
  if (Value* bias = m.conv->input(2)) tokens = patch.add_node("Add", {tokens, bias}, 1, {}, "", base + "_bias")->output(0);

  if (m.to_tokens) {
    patch.replace_uses(m.to_tokens->output(0), tokens);
    patch.remove_node(m.to_tokens);
    patch.remove_node(m.flatten);
    for (Node* shape : m.shapes) {
      std::vector<int64_t> rest = {m.filters};
      rest.insert(rest.end(), m.out.begin(), m.out.end());
      Node* x_shape = patch.add_node("Shape", {m.conv->input(0)}, 1, {}, "", base + "_x_shape");
      Node* batch = patch.add_node("Slice",
                                   {x_shape->output(0), shape_constant(patch, base + "_zero", {0}),
                                    shape_constant(patch, base + "_one", {1})},
                                   1, {}, "", base + "_batch");
      Node* y_shape = patch.add_node("Concat", {batch->output(0), shape_constant(patch, base + "_y_dims", rest)}, 1,
                                     {Attribute::make_int("axis", 0)}, "", base + "_y_shape");
      patch.replace_uses(shape->output(0), y_shape->output(0));
      patch.remove_node(shape);
    }
  } else {
    // Back to [N, OC, O1, ..., Os] for whatever reads Y.
    std::vector<int64_t> grid = {0}, back = {0, spatial + 1};
    grid.insert(grid.end(), m.out.begin(), m.out.end());
    grid.push_back(m.filters);
    for (int64_t i = 0; i < spatial; ++i) back.push_back(1 + i);
    Node* unflat = patch.add_node("Reshape", {tokens, shape_constant(patch, base + "_out_grid", grid)}, 1, {}, "",
                                  base + "_out_grid");
    Node* nchw = patch.add_node("Transpose", {unflat->output(0)}, 1, {Attribute::make_ints("perm", back)}, "",
                                base + "_out");
    if (!can_replace(m.conv->output(0), nchw->output(0))) return false;
    patch.replace_uses(m.conv->output(0), nchw->output(0));
  }
  patch.remove_node(m.conv);
  if (!ctx.apply(patch)) return false;
  ctx.count(m.to_tokens ? "Conv patches -> MatMul, tokens out" : "Conv patches -> MatMul, NCHW out");
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  RemovedNodes removed;  // a token tail's Reshape/Transpose go with their Conv
  for (Node* n : g.nodes()) {
    if (removed.contains(n) || !is_op(n, "Conv")) continue;
    Match m;
    if (match(n, m) && apply(g, ctx, m)) removed.add({m.conv, m.flatten, m.to_tokens});
      removed.add(m.shapes);
  }
  return removed.any();
}

}  // namespace

Pass conv_patches_to_matmul() { return {"conv_patches_to_matmul", run}; }

}  // namespace octet::passes
