// See quantized_readers.h.
#include "passes/rewrites/quantized_readers.h"

#include <algorithm>
#include <cstring>

#include "passes/pattern.h"

namespace octet::passes {
namespace {

bool static_reader(const Node* q, bool channel_scale_ok) {
  if (q->domain() != "octet" || q->op_type() != "QMatMul") return false;
  if (!channel_scale_ok && input_or_null(q, 8)) return false;
  const Value* a = q->input(0);
  if (!a || a->type.dtype != DType::Float32) return false;
  const Tensor* s = constant_value(input_or_null(q, 1));
  if (!s || s->dtype() != DType::Float32 || s->numel() != 1 || s->rank() > 1) return false;
  if (const Value* z = input_or_null(q, 2)) {
    const Tensor* t = constant_value(z);
    if (!t || (t->dtype() != DType::UInt8 && t->dtype() != DType::Int8) || t->numel() != 1 || t->rank() > 1)
      return false;
  }
  if (const Value* c = input_or_null(q, 8)) {
    const Tensor* t = constant_value(c);
    if (!t || t->dtype() != DType::Float32 || t->rank() != 1) return false;
  }
  for (size_t i = 1; i < q->inputs().size(); ++i)
    if (q->input(i) == a) return false;  // also read as its residual
  return true;
}

// A per-token (dynamic) QMatMul: no a_scale / a_zero_point / a_channel_scale, float A
// read only as A.
bool per_token_reader(const Node* q) {
  if (q->domain() != "octet" || q->op_type() != "QMatMul") return false;
  if (input_or_null(q, 1) || input_or_null(q, 2) || input_or_null(q, 8)) return false;
  const Value* a = q->input(0);
  if (!a || a->type.dtype != DType::Float32) return false;
  for (size_t i = 1; i < q->inputs().size(); ++i)
    if (q->input(i) == a) return false;
  return true;
}

bool is_dead(const Node* n) {
  for (const Value* v : n->outputs())
    if (v && (!v->uses().empty() || v->is_graph_output())) return false;
  return true;
}

}  // namespace

bool same_numbers(const Value* x, const Value* y) {
  if (x == y) return true;
  const Tensor* a = x ? constant_value(x) : nullptr;
  const Tensor* b = y ? constant_value(y) : nullptr;
  return a && b && a->dtype() == b->dtype() && a->shape() == b->shape() &&
         (a->numel() == 0 || std::memcmp(a->raw(), b->raw(), a->bytes()) == 0);
}

QuantizedReaders quantized_readers(const Value* y, bool channel_scale_ok) {
  QuantizedReaders r;
  for (const Use& u : y->uses()) {
    if (is_dead(u.node)) {
      r.dead = true;  // dead-code elimination removes it first
    } else if (!u.implicit && u.index == 0 && static_reader(u.node, channel_scale_ok)) {
      if (std::find(r.qmatmuls.begin(), r.qmatmuls.end(), u.node) == r.qmatmuls.end()) r.qmatmuls.push_back(u.node);
    } else {
      r.others = true;
    }
  }
  const Node* first = r.qmatmuls.empty() ? nullptr : r.qmatmuls[0];
  for (const Node* q : r.qmatmuls)
    for (size_t i : {size_t{1}, size_t{2}, size_t{8}})
      if (!same_numbers(input_or_null(first, i), input_or_null(q, i))) return QuantizedReaders{{}, true, r.dead};
  return r;
}

QuantizedReaders per_token_readers(const Value* y) {
  QuantizedReaders r;
  for (const Use& u : y->uses()) {
    if (is_dead(u.node)) {
      r.dead = true;
    } else if (!u.implicit && u.index == 0 && per_token_reader(u.node)) {
      if (std::find(r.qmatmuls.begin(), r.qmatmuls.end(), u.node) == r.qmatmuls.end()) r.qmatmuls.push_back(u.node);
    } else {
      r.others = true;
    }
  }
  for (const Node* q : r.qmatmuls)
    if (q->attr_string("dynamic_type", "uint8") != r.qmatmuls[0]->attr_string("dynamic_type", "uint8"))
      return QuantizedReaders{{}, true, r.dead};
  return r;
}

}  // namespace octet::passes
