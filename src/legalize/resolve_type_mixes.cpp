// Inputs bound to one ONNX type variable with different element types (Add(int32,
// float16), Mul(float32 weight, float16 hidden)) get the fewest Casts that make them
// agree, node by node in topological order, each node re-typed before its readers are
// looked at, so a fix upstream never leaves a new mix downstream unseen.
//
// Which type they meet at:
//   - floats: the widest float among them, as torch's type promotion would (float16 and
//     bfloat16 meet at float32); --compute-dtype fp32/fp16 picks that type instead;
//   - an integer meeting a float is cast to the float (the integer is a value, e.g.
//     unpacked int4 weights minus zero points);
//   - the int32 accumulator of MatMulInteger/ConvInteger is a value times
//     scale_a * scale_b: it is cast to float32, multiplied by both scales (read from the
//     QuantizeLinear/DynamicQuantizeLinear that made the operand, or the
//     DequantizeLinear that reads a constant operand) and cast to the meeting type. When
//     a scale cannot be found the problem is left unresolved, never guessed;
//   - integers of different widths meet at the widest.
#include "check/onnx_schema.h"
#include "legalize/cast_builder.h"
#include "legalize/rewrites.h"
#include "ops/infer.h"

namespace octet::legalize {

namespace {

bool is_accumulator(const Value* v) {
  const Node* p = v->producer();
  return p && p->domain().empty() && (p->op_type() == "MatMulInteger" || p->op_type() == "ConvInteger") &&
         v->type.dtype == DType::Int32;
}

// The scale that dequantizes quantized operand `q` (an input of MatMulInteger/ConvInteger).
Value* operand_scale(Value* q) {
  if (const Node* p = q->producer()) {
    if (p->op_type() == "DynamicQuantizeLinear") return p->output(1);
    if (p->op_type() == "QuantizeLinear") return p->input(1);
  }
  for (const Use& u : q->uses())
    if (!u.implicit && u.index == 0 && u.node->op_type() == "DequantizeLinear") return u.node->input(1);
  return nullptr;
}

std::string type_list(const Node& n) {
  std::string s;
  for (const Value* v : n.inputs())
    if (v) s += (s.empty() ? "" : ", ") + v->name() + ": " + (v->type.known() ? dtype_name(v->type.dtype) : "?");
  return s;
}

class Resolver {
 public:
  Resolver(Graph& g, const LegalizeOptions& o, RewriteLog& log, std::vector<std::string>& unresolved)
      : graph_(g), options_(o), log_(log), unresolved_(unresolved), casts_(g) {}

  void run() {
    for (Node* node : graph_.nodes()) {
      if (auto schema = check::find_onnx_schema(*node)) fix(*node, *schema);
      reinfer(*node);
    }
  }

 private:
  DType meeting_type(const std::vector<Value*>& vals) const {
    DType flt = DType::Undefined, integer = DType::Undefined;
    for (const Value* v : vals) {
      const DType t = v->type.dtype;
      if (dtype_is_float(t)) flt = flt == DType::Undefined ? t : common_float_type(flt, t);
      else if (dtype_is_integer(t) && (integer == DType::Undefined || dtype_bits(t) > dtype_bits(integer))) integer = t;
    }
    if (flt == DType::Undefined) return integer;
    if (options_.compute == ComputeDType::Float32) return DType::Float32;
    if (options_.compute == ComputeDType::Float16) return DType::Float16;
    return flt;
  }

  // The accumulator, dequantized to float32 then cast to `to`; nullptr when a scale is missing.
  Value* dequantized_accumulator(Value* acc, DType to) {
    Node* mm = acc->producer();
    Value* sa = operand_scale(mm->input(0));
    Value* sb = mm->input(1) ? operand_scale(mm->input(1)) : nullptr;
    if (!sa || !sb) return nullptr;
    GraphPatch patch = make_patch(graph_);
    Node* cast = patch.add_node("Cast", {acc}, 1, {Attribute::make_int("to", dtype_to_onnx(DType::Float32))}, "",
                                acc->name() + "_to_float32");
    Value* scaled = cast->output(0);
    for (Value* s : {sa, sb}) {
      Value* s32 = s;
      if (s->type.dtype != DType::Float32)
        s32 = patch.add_node("Cast", {s}, 1, {Attribute::make_int("to", dtype_to_onnx(DType::Float32))}, "",
                             s->name() + "_to_float32")
                  ->output(0);
      scaled = patch.add_node("Mul", {scaled, s32}, 1, {}, "", acc->name() + "_scaled")->output(0);
    }
    patch.apply();
    return casts_.as_type(scaled, to);
  }

  void fix(Node& node, const check::NodeSchema& schema) {
    std::map<std::string, std::vector<std::pair<size_t, Value*>>> by_var;
    for (size_t i = 0; i < node.inputs().size(); ++i) {
      const check::FormalParam* p = schema.input_param(i);
      Value* v = node.input(i);
      if (!p || !v || !v->type.known() || !p->homogeneous || !schema.allowed.count(p->type_str)) continue;
      by_var[p->type_str].emplace_back(i, v);
    }
    for (auto& [var, slots] : by_var) {
      std::vector<Value*> vals;
      for (auto& [i, v] : slots) vals.push_back(v);
      const DType to = meeting_type(vals);
      bool mixed = false;
      for (Value* v : vals) mixed |= v->type.dtype != vals.front()->type.dtype;
      if (!mixed || to == DType::Undefined) continue;
      const std::string before = type_list(node);
      bool all_fixed = true;
      for (auto& [slot, v] : slots) {
        if (v->type.dtype == to) continue;
        Value* replacement =
            is_accumulator(v) && dtype_is_float(to) ? dequantized_accumulator(v, to) : casts_.as_type(v, to);
        if (!replacement) {
          all_fixed = false;
          unresolved_.push_back(node.describe() + ": int32 accumulator '" + v->name() + "' meets " +
                                dtype_name(to) + " but the scales of its MatMulInteger/ConvInteger operands "
                                "could not be found (no QuantizeLinear/DynamicQuantizeLinear/DequantizeLinear)");
          continue;
        }
        casts_.set_input(&node, slot, replacement);
      }
      if (all_fixed)
        log_.note(node.describe() + ": type " + var + " mixed [" + before + "] -> all " + dtype_name(to));
    }
  }

  Graph& graph_;
  const LegalizeOptions& options_;
  RewriteLog& log_;
  std::vector<std::string>& unresolved_;
  CastBuilder casts_;
};

}  // namespace

DType common_float_type(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
  return DType::Float32;  // f32 with anything narrower, or f16 with bf16
}

void resolve_type_mixes(Graph& graph, const LegalizeOptions& options, RewriteLog& log,
                        std::vector<std::string>& unresolved) {
  Resolver(graph, options, log, unresolved).run();
}

}  // namespace octet::legalize
