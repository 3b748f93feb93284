// Conv whose kernel tiles its input (stride == kernel, no padding), read as tokens or
// channels-last -> patches + MatMul.
//
// A ViT's patch embedding is Conv(X[N,C,H,W], W[OC,C,k,k], stride k): every output pixel
// reads its own k x k patch, no two patches overlap, so the Conv is one GEMM:
//   Y[n, oc, oh, ow] = sum_{c,i,j} X[n, c, oh*k+i, ow*k+j] * W[oc, c, i, j] + B[oc].
// Written as plain ops:
//   Reshape(X, [0, C, OH, k, OW, k]) -> Transpose(0,2,4,1,3,5) -> Reshape([0, OH*OW, C*k*k])
//   -> MatMul(W as [C*k*k, OC], a new initializer) [-> Add(B)]       = [N, OH*OW, OC]
// (fuse_matmul_bias then makes the MatMul + Add an octet.MatMulBias). The GEMM writes
// channels-last, which is what the models read next, so the rewrite is taken only then:
//   - tokens: Reshape(Y, [N, OC, OH*OW]) -> Transpose(0,2,1) (ViT, Swin's patch_embed,
//     torch's flatten(2).transpose(1, 2)): both nodes go. With a symbolic batch the
//     flatten's target comes from Shape(Y), which is rebuilt from X's batch dim;
//   - channels-last: Transpose(Y, [0, 2, ..., s+1, 1]) (ConvNeXt's permute(0, 2, 3, 1),
//     a Conv1d's transpose(1, 2)): the MatMul output reshaped to [N, O1, ..., Os, OC].
// Measured (octet bench, [1,3,224,224] unless said, one binary: the Conv graph with its
// input sizes symbolic, which keeps this rewrite off, against the static one, alternated,
// median p50 ratio at 1 / 2 threads; a shared machine, load 1.4-1.7):
//   tokens / channels-last: ViT 16x16 (64 filters) 0.79 / 0.61x and 0.77 / 0.58x; a 4x4
//   stem (96) 0.30 / 0.44x; 2x2 (64) 0.50 / 0.94x; 1x1 [64 -> 128, 56x56] 0.36 / 0.56x
//   (oneDNN's convolution reorders X to channels-last and Y back every run, then the
//   tail's Transpose moves Y again);
//   read as NCHW, with a Transpose back: 16x16 0.81 / 0.80x, 14x14 0.94 / 0.95x, 8x8
//   0.86 / 0.99x, 4x4 0.59 / 1.04x, 2x2 2.8 / 2.5x, 1x1 1.55 / 1.49x. Not a dependable
//   win, so a Conv read as NCHW stays.
// The same holds for 1-D and 3-D Convs, with one (size, k) axis pair per spatial dim.
//
// Matched: ai.onnx Conv, float32 X/W/B, W a constant (not an overridable graph input) of
// rank 3..5, group 1, kernel_shape absent or W's, dilations 1, strides equal to the
// kernel, pads absent or 0 (any auto_pad: at stride == kernel and an input divisible by
// it every mode pads 0), X's channel and spatial dims known numbers and each spatial dim
// a multiple of its kernel (otherwise the Conv drops the ragged border, which a Reshape
// cannot), and one of the two tails above. X's batch dim may be symbolic: the Reshapes
// copy it with 0. W is never changed in place; the transposed copy is a new initializer.
//
// A quantized patch embedding (a QDQ model: X = DQ(Q(x)) per tensor, W = DQ(int8 W_q)
// per filter or per tensor, zero points zero, the bias a constant) stays int8: the
// patches are cut from Q(x)'s bytes (quantization is elementwise, so it commutes with the
// Reshape/Transpose, which then move a quarter of the bytes) and a static octet.QMatMul
// multiplies them by W_q as [K, OC] with the Conv's bias: the same int8 products as the
// QDQ Conv, where the float form ran an fp32 GEMM on the dequantized values (DINOv2-S at
// batch 8: 2.6 ms of fp32 GEMM + 0.5 ms of Q/DQ passes per run). fold_constants leaves
// such a Conv's weight DequantizeLinear for this rewrite (int8_patch_conv below). A bias
// may still be a DequantizeLinear of int32 constants (onnxruntime's quantizer): it is
// folded in the same sweep, and the rewrite waits a round for it.
// Either form takes a Q/DQ on Y (onnxruntime's QDQ quantizer writes one on the Conv's
// output, and again after the flatten with the same parameters, which changes nothing
// once Y is quantized): one Q/DQ of those parameters on the tokens.
#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/quantized_readers.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

// The int8 sides of a quantized patch Conv: X = DQ(Q(x)), W = DQ(W_q).
struct Int8Sides {
  FakeQuant x;
  const Node* w_dq = nullptr;  // DequantizeLinear(W_q, scale[, zero point])
};

struct Match {
  Node* conv = nullptr;
  const Tensor* w = nullptr;  // float W, or W_q when int8
  std::optional<Int8Sides> int8;
  int64_t channels = 0, filters = 0;
  std::vector<int64_t> kernel, out;  // per spatial dim: k and the number of patches
  // The tail: flatten (tokens only) and the Transpose whose output the MatMul replaces.
  Node* flatten = nullptr;
  Node* transpose = nullptr;
  std::vector<Node*> shapes;  // Shape(Y) nodes beside the tail, rebuilt from X's shape
  // Y = Conv's output, or its fake quantization Q/DQ (onnxruntime's QDQ quantizer writes
  // one on a Conv's output): then the tokens get the same Q/DQ. It also writes one after
  // the flatten, of the same parameters: re-quantizing a quantized value changes nothing,
  // so those pairs go (requants).
  std::optional<FakeQuant> y_quant;
  std::vector<FakeQuant> requants;
};

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [&](int64_t e) { return e == x; });
}

int64_t product(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{1}, std::multiplies<int64_t>());
}

std::vector<int64_t> channels_last_perm(int64_t spatial) {
  std::vector<int64_t> perm = {0};
  for (int64_t i = 0; i < spatial; ++i) perm.push_back(2 + i);
  perm.push_back(1);
  return perm;
}

// True when `t` is an ai.onnx Transpose with exactly this perm whose output may be replaced.
bool is_transpose(const Node* t, const std::vector<int64_t>& perm) {
  return is_op(t, "Transpose") && t->attr_ints("perm") == perm && !read_by_subgraph(t->output(0));
}

// Y's per-tensor fake quantization Q/DQ when it is Y's only reader, else nullopt.
std::optional<FakeQuant> output_fake_quant(const Value* y) {
  const Node* q = sole_consumer(y);
  if (!is_op(q, "QuantizeLinear") || q->input(0) != y) return std::nullopt;
  const Node* dq = sole_consumer(q->output(0));  // none when Q's output is a graph output
  if (!dq) return std::nullopt;
  auto fq = fake_quant_of(dq->output(0));
  if (!fq || fq->x != y) return std::nullopt;
  return fq;
}

// v, or past a Q/DQ pair with y_quant's parameters that is v's only reader.
const Value* past_requant(const Value* v, Match& m) {
  if (!m.y_quant) return v;
  auto fq = output_fake_quant(v);
  if (!fq || !same_numbers(fq->scale, m.y_quant->scale) || !same_numbers(fq->zero_point, m.y_quant->zero_point))
    return v;
  const Value* out = fq->dequantize->output(0);
  if (out->is_graph_output() || read_by_subgraph(out)) return v;
  m.requants.push_back(*fq);
  return out;
}

// Finds the tail (see the top of the file). Y may also be read by Shape nodes without
// start/end, which are rebuilt as Concat(Shape(X)[0:1], [OC, O1, ..., Os]) so Y can go.
bool match_tail(const Graph& g, const Value* x, Match& m) {
  const Value* y = m.conv->output(0);
  if (y->is_graph_output()) return false;
  if ((m.y_quant = output_fake_quant(y))) {
    y = m.y_quant->dequantize->output(0);
    if (y->is_graph_output() || read_by_subgraph(y)) return false;
  }
  Node* reader = nullptr;
  for (const Use& u : y->uses()) {
    if (u.implicit) return false;
    if (is_op(u.node, "Shape") && !u.node->has_attr("start") && !u.node->has_attr("end") &&
        onnx_opset_at_least(g, 13)) {
      m.shapes.push_back(u.node);
    } else if (!reader && u.index == 0) {
      reader = u.node;
    } else {
      return false;
    }
  }
  const int64_t spatial = static_cast<int64_t>(m.out.size());
  if (is_transpose(reader, channels_last_perm(spatial))) {
    m.transpose = reader;
    return true;
  }
  if (!is_op(reader, "Reshape")) return false;
  const Value* flat = reader->output(0);
  if (!flat || !flat->type.dims || *flat->type.dims != DimVector{(*x->type.dims)[0], m.filters, product(m.out)})
    return false;
  Node* transpose = sole_consumer(past_requant(flat, m));
  if (!is_transpose(transpose, {0, 2, 1})) return false;
  m.flatten = reader;
  m.transpose = transpose;
  return true;
}

// W = DQ(W_q) with W_q a constant int8 [OC, C, k...], its scale one float or one per
// filter (axis 0), its zero point absent or zeros (what octet.QMatMul's int8 kernel
// takes); X a per-tensor fake quantization. Else nullopt: the float form.
std::optional<Int8Sides> int8_sides(const Value* x, const Value* w) {
  auto fq = fake_quant_of(x);
  const Node* dq = producer(w, "DequantizeLinear");
  if (!fq || !dq || (dq->has_attr("block_size") && dq->attr_int("block_size", 0) != 0)) return std::nullopt;
  const Tensor* data = constant_value(dq->input(0));
  const Tensor* scale = constant_value(dq->input(1));
  if (!data || data->dtype() != DType::Int8 || data->rank() < 3 || !scale || scale->dtype() != DType::Float32)
    return std::nullopt;
  if (scale->numel() != 1 && (scale->rank() != 1 || scale->numel() != data->shape()[0] || dq->attr_int("axis", 1) != 0))
    return std::nullopt;
  if (const Value* zp = dq->input(2)) {
    const Tensor* z = constant_value(zp);
    if (!z || z->dtype() != DType::Int8 || z->numel() != scale->numel()) return std::nullopt;
    const int8_t* v = z->data<int8_t>();
    if (std::any_of(v, v + z->numel(), [](int8_t e) { return e != 0; })) return std::nullopt;
  }
  return Int8Sides{*fq, dq};
}

// A bias fold_constants is about to fold: onnxruntime's quantizer writes a Conv's bias as
// DequantizeLinear of int32 constants, folded in the same sweep that must keep W's.
bool folding_bias(const Value* b) {
  const Node* dq = producer(b, "DequantizeLinear");
  if (!dq) return false;
  for (const Value* in : dq->inputs())
    if (in && !constant_value(in)) return false;
  return true;
}

bool match(Node* conv, Match& m) {
  const Value* x = conv->input(0);
  const Value* w = conv->input(1);
  const Value* b = conv->input(2);
  const Value* y = conv->output(0);
  if (!x || !w || !y || x->type.dtype != DType::Float32) return false;
  std::optional<Int8Sides> int8 = int8_sides(x, w);
  if (b && !constant_value(b) && !folding_bias(b)) int8.reset();  // octet.QMatMul's bias is a constant
  const Tensor* wt = int8 ? constant_value(int8->w_dq->input(0)) : constant_value(w);
  if (!wt || (!int8 && wt->dtype() != DType::Float32) || wt->rank() < 3 || wt->rank() > 5 || wt->numel() == 0)
    return false;
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
  m = Match{conv, wt, std::move(int8), wt->shape()[1], wt->shape()[0], kernel, out, nullptr, nullptr, {}, {}, {}};
  return match_tail(*conv->graph(), x, m);
}

Value* shape_constant(GraphPatch& patch, const std::string& name, const std::vector<int64_t>& dims) {
  return patch.add_initializer(name, int64s(dims));
}

// W [OC, K] (K = C * prod(kernel)) transposed to [K, OC]: the MatMul's B.
template <typename T>
Tensor columns_of(const Tensor& w) {
  const int64_t oc = w.shape()[0], k = w.numel() / oc;
  Tensor t(w.dtype(), {k, oc});
  const T* src = w.data<T>();
  T* dst = t.mutable_data<T>();
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < k; ++i) dst[i * oc + o] = src[o * k + i];
  return t;
}

Tensor weight_as_columns(const Tensor& w) {
  return w.dtype() == DType::Int8 ? columns_of<int8_t>(w) : columns_of<float>(w);
}

bool apply(Graph& g, PassContext& ctx, const Match& m) {
  // An int8 Conv's DequantizeLinear bias becomes a constant in fold_constants' next sweep.
  if (m.int8 && m.conv->input(2) && !constant_value(m.conv->input(2))) return false;
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

  // The int8 form cuts the patches from X's quantized bytes (Q(x), before its DQ).
  Value* x = m.int8 ? m.int8->x.quantize->output(0) : m.conv->input(0);
  Node* cut = patch.add_node("Reshape", {x, shape_constant(patch, base + "_patch_grid", split)}, 1, {}, "",
                             base + "_patch_grid");
  Node* gather = patch.add_node("Transpose", {cut->output(0)}, 1, {Attribute::make_ints("perm", perm)}, "",
                                base + "_patches");
  Node* rows = patch.add_node("Reshape",
                              {gather->output(0), shape_constant(patch, base + "_patch_rows", {0, patches, patch_size})},
                              1, {}, "", base + "_patch_rows");
  Value* w = patch.add_initializer(base + "_weight_columns", weight_as_columns(*m.w));
  Value* tokens = nullptr;  // [N, patches, OC]
  if (m.int8) {
    // octet.QMatMul on the quantized patches (static: X's scale and zero point) and W_q's
    // columns (W's scales, now one per column), with the Conv's bias.
    const FakeQuant& fq = m.int8->x;
    const Node* w_dq = m.int8->w_dq;
    tokens = patch
                 .add_node("QMatMul",
                           {rows->output(0), fq.scale, fq.zero_point, w, w_dq->input(1), w_dq->input(2),
                            m.conv->input(2)},
                           1, {}, "octet", base + "_qmatmul")
                 ->output(0);
  } else {
    tokens = patch.add_node("MatMul", {rows->output(0), w}, 1, {}, "", base + "_matmul")->output(0);
    if (Value* bias = m.conv->input(2))
      tokens = patch.add_node("Add", {tokens, bias}, 1, {}, "", base + "_bias")->output(0);
  }

  if (m.y_quant) {  // Y's Q/DQ, elementwise: the same on the tokens
    const FakeQuant& fq = *m.y_quant;
    Node* q = patch.add_node("QuantizeLinear", {tokens, fq.scale, fq.zero_point}, 1, {}, "", base + "_tokens_quantize");
    tokens = patch.add_node("DequantizeLinear", {q->output(0), fq.scale, fq.zero_point}, 1, {}, "",
                            base + "_tokens_dequantize")
                 ->output(0);
    for (const FakeQuant& pair : m.requants) {
      patch.remove_node(pair.quantize);
      patch.remove_node(pair.dequantize);
    }
    patch.remove_node(fq.quantize);
    patch.remove_node(fq.dequantize);
  }
  // [N, patches, OC] is the tokens; channels-last wants [N, O1, ..., Os, OC] (a view).
  Value* result = tokens;
  if (!m.flatten && spatial > 1) {
    std::vector<int64_t> grid = {0};
    grid.insert(grid.end(), m.out.begin(), m.out.end());
    grid.push_back(m.filters);
    result = patch.add_node("Reshape", {tokens, shape_constant(patch, base + "_channels_last", grid)}, 1, {}, "",
                            base + "_channels_last")
                 ->output(0);
  }
  if (!can_replace(m.transpose->output(0), result)) return false;
  patch.replace_uses(m.transpose->output(0), result);
  patch.remove_node(m.transpose);
  if (m.flatten) patch.remove_node(m.flatten);
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
  patch.remove_node(m.conv);
  if (!ctx.apply(patch)) return false;
  if (m.int8) import_octet_domain(g);
  ctx.count(std::string(m.int8 ? "int8 " : "") +
            (m.flatten ? "Conv patches -> MatMul, tokens out" : "Conv patches -> MatMul, channels-last out"));
  return true;
}

bool run(Graph& g, PassContext& ctx) {
  // A token tail's Reshape/Transpose and shape nodes go with their Conv.
  return sweep_rewrites(g, "Conv", [&](Node* n, const RemovedNodes&) {
    Match m;
    if (!match(n, m) || !apply(g, ctx, m)) return std::vector<Node*>{};
    std::vector<Node*> gone{m.conv, m.flatten, m.transpose};
    if (m.y_quant) gone.insert(gone.end(), {m.y_quant->quantize, m.y_quant->dequantize});
    for (const FakeQuant& pair : m.requants) gone.insert(gone.end(), {pair.quantize, pair.dequantize});
    gone.insert(gone.end(), m.shapes.begin(), m.shapes.end());
    return gone;
  });
}

}  // namespace

Pass conv_patches_to_matmul() { return {"conv_patches_to_matmul", run}; }

bool int8_patch_conv(Node* conv) {
  Match m;
  return is_op(conv, "Conv") && match(conv, m) && m.int8.has_value();
}

}  // namespace octet::passes
