// Three int8 projections of one input feeding octet.QAttention -> one projection, read in
// place (the int8 twin of fuse_attention_qkv.cpp).
//
// A statically quantized BERT/ViT computes Q, K and V as three octet.QMatMul nodes of the
// same hidden state with the same activation parameters: each quantizes the same A (three
// passes over it) and runs a narrow [S, E] x [E, E] int8 product. One [S, E] x [E, 3E]
// QMatMul quantizes A once and gives oneDNN a wider N to block and thread over; the
// attention reads Q, K and V out of its result through channel_ranges. The arithmetic per
// output column is unchanged (the same a_scale / a_zero_point, that column's b_scale, its
// bias), so the outputs are the same numbers (issue 20's profile: three N = 384 products
// per layer were the least efficient GEMMs of MiniLM).
//
// Matched: an octet.QAttention without channel_ranges whose Q, K and V are the outputs of
// three distinct octet.QMatMul nodes, each read by this attention alone, that read the
// same A with the same static a_scale / a_zero_point (the same values, or equal scalar
// constants) or all per-row dynamic with one dynamic_type (octet quantize's per-token linear
// inputs), and the same a_channel_scale, with no activation, residual or output_scale; each B a constant 2-D int8 [K, N_i] of one K, b_scale a constant float32
// (per tensor or per column), b_zero_point absent or an all-zero int8 constant, bias
// absent or a constant float32 [N_i]. The packed B, per-column b_scale and bias are new
// initializers (absent biases are zeros); the originals are left to dead-code elimination.
#include <algorithm>
#include <array>
#include <cstring>

#include "ops/infer.h"
#include "passes/pattern.h"
#include "passes/rewrites/attention_packing.h"
#include "passes/rewrites/rewrites.h"

namespace octet::passes {
namespace {

// QMatMul's inputs (ops/octet_quant_ops.cpp).
enum : size_t { kA, kAScale, kAZero, kB, kBScale, kBZero, kBias, kResidual, kChannelScale };

Value* input_or_null(const Node* n, size_t i) { return i < n->inputs().size() ? n->input(i) : nullptr; }

// Two optional operands that hold the same numbers: one value, both absent, or constants
// of one type and shape with identical bytes.
bool same_operand(const Value* x, const Value* y) {
  if (x == y) return true;
  const Tensor* a = x ? constant_value(x) : nullptr;
  const Tensor* b = y ? constant_value(y) : nullptr;
  return a && b && a->dtype() == b->dtype() && a->shape() == b->shape() &&
         (a->numel() == 0 || std::memcmp(a->raw(), b->raw(), a->bytes()) == 0);
}

// A projection this pass can merge: a QMatMul with constant int8 B read by `attention`
// alone, static (a_scale) or per-row dynamic (no a_scale; dynamic_type, default uint8).
Node* projection(const Value* v, const Node* attention) {
  Node* p = v ? v->producer() : nullptr;
  if (!p || p->domain() != "octet" || p->op_type() != "QMatMul" || sole_consumer(v) != attention ||
      p->outputs().size() != 1)
    return nullptr;
  if (!p->attr_string("activation", "").empty()) return nullptr;
  if (input_or_null(p, kResidual) || input_or_null(p, kChannelScale + 1))
    return nullptr;  // a residual / output_scale after the product
  const Tensor* b = constant_value(input_or_null(p, kB));
  const Tensor* sb = constant_value(input_or_null(p, kBScale));
  if (!b || b->dtype() != DType::Int8 || b->rank() != 2) return nullptr;
  const int64_t n = b->shape()[1];
  if (!sb || sb->dtype() != DType::Float32 || sb->rank() > 1 || (sb->numel() != 1 && sb->numel() != n))
    return nullptr;
  if (const Value* zv = input_or_null(p, kBZero)) {
    const Tensor* zb = constant_value(zv);
    if (!zb || zb->dtype() != DType::Int8) return nullptr;
    const int8_t* z = zb->data<int8_t>();
    if (std::any_of(z, z + zb->numel(), [](int8_t x) { return x != 0; })) return nullptr;
  }
  if (const Value* bv = input_or_null(p, kBias)) {
    const Tensor* bias = constant_value(bv);
    if (!bias || bias->dtype() != DType::Float32 || bias->rank() != 1 || bias->numel() != n) return nullptr;
  }
  return p;
}

bool run(Graph& g, PassContext& ctx) {
  bool changed = false;
  RemovedNodes removed;
  for (Node* n : g.nodes()) {
    if (removed.contains(n) || n->domain() != "octet" || n->op_type() != "QAttention" ||
        n->has_attr("channel_ranges"))
      continue;
    std::array<Node*, 3> p = {projection(n->input(0), n), projection(n->input(1), n), projection(n->input(2), n)};
    if (!p[0] || !p[1] || !p[2] || p[0] == p[1] || p[1] == p[2] || p[0] == p[2]) continue;
    // The same A quantized the same way: equal static parameters, or the same dynamic type
    // (rows quantized at run time from the same A get the same scales).
    bool same_a = true;
    const bool is_dynamic = !input_or_null(p[0], kAScale);
    const std::string dynamic = p[0]->attr_string("dynamic_type", "uint8");
    for (int i = 1; i < 3; ++i)
      same_a = same_a && !input_or_null(p[i], kAScale) == is_dynamic && p[i]->attr_string("dynamic_type", "uint8") == dynamic;
    for (int i = 1; i < 3; ++i)
      for (size_t in : {kA, kAScale, kAZero, kChannelScale})
        same_a = same_a && same_operand(input_or_null(p[0], in), input_or_null(p[i], in));
    if (!same_a) continue;
    // B = [Bq | Bk | Bv] along N; b_scale and bias per column in the same order.
    std::array<int64_t, 4> offset{};
    std::optional<Tensor> weight = columns_side_by_side(
        {constant_value(p[0]->input(kB)), constant_value(p[1]->input(kB)), constant_value(p[2]->input(kB))}, offset);
    if (!weight) continue;
    Tensor scale(DType::Float32, {offset[3]}), bias(DType::Float32, {offset[3]});
    float* ps = scale.mutable_data<float>();
    float* pb = bias.mutable_data<float>();
    bool any_bias = false;
    for (int i = 0; i < 3; ++i) {
      const int64_t ni = offset[i + 1] - offset[i];
      const Tensor* sb = constant_value(p[i]->input(kBScale));
      for (int64_t c = 0; c < ni; ++c) ps[offset[i] + c] = sb->data<float>()[sb->numel() == 1 ? 0 : c];
      const Value* bv = input_or_null(p[i], kBias);
      any_bias = any_bias || bv;
      if (bv) std::copy(constant_value(bv)->data<float>(), constant_value(bv)->data<float>() + ni, pb + offset[i]);
      else std::fill(pb + offset[i], pb + offset[i] + ni, 0.0f);
    }

    GraphPatch patch = make_patch(g);
    const Node* first = p[0];
    std::vector<Value*> inputs(kChannelScale + 1, nullptr);
    inputs[kA] = first->input(kA);
    inputs[kAScale] = first->input(kAScale);
    inputs[kAZero] = input_or_null(first, kAZero);
    inputs[kB] = patch.add_initializer(first->name() + "_qkv_weight", std::move(*weight));
    inputs[kBScale] = patch.add_initializer(first->name() + "_qkv_scale", std::move(scale));
    if (any_bias) inputs[kBias] = patch.add_initializer(first->name() + "_qkv_bias", std::move(bias));
    inputs[kChannelScale] = input_or_null(first, kChannelScale);
    while (!inputs.empty() && !inputs.back()) inputs.pop_back();  // trailing optionals absent
    std::vector<Attribute> attrs;
    if (is_dynamic) attrs.push_back(Attribute::make_string("dynamic_type", dynamic));
    Node* packed = patch.add_node("QMatMul", inputs, 1, std::move(attrs), "octet", first->name() + "_qkv");
    changed |= finish_qkv_merge(patch, ctx, n, p, packed->output(0), offset, "int8 Q/K/V projections merged",
                                removed);
  }
  return changed;
}

}  // namespace

Pass fuse_qattention_qkv() { return {"fuse_qattention_qkv", run}; }

}  // namespace octet::passes
