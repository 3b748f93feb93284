#include "quant/target_profile.h"

#include <set>
#include <sstream>

namespace octet::quant {
namespace {

bool is_constant(const Value* v) { return v && v->is_initializer() && !v->is_graph_input() && v->constant(); }

std::string where(const Node& n) { return n.describe(); }

// The axis a weight's channels run along for its consumer, or -1 when `dq_out` is not
// read as a weight (then a per-channel scale is not expected at all).
int output_channel_axis(const Value* dq_out) {
  int axis = -2;
  for (const Use& u : dq_out->uses()) {
    const Node& c = *u.node;
    int a = -1;
    if (c.op_type() == "MatMul" && u.index == 1) a = 1;
    else if (c.op_type() == "Gemm" && u.index == 1) a = c.attr_int("transB", 0) ? 0 : 1;
    else if (c.op_type() == "Conv" && u.index == 1) a = 0;
    else if (c.op_type() == "Gather" && u.index == 0) a = 0;  // embedding rows
    if (axis != -2 && axis != a) return -1;
    axis = a;
  }
  return axis == -2 ? -1 : axis;
}

class Checker {
 public:
  explicit Checker(Target t) : target_(t) {}

  void check(const Node& n) {
    if (!n.domain().empty() && n.domain() != "ai.onnx") {
      if (target_ != Target::Octet)
        problem(n, "domain '" + n.domain() + "' ops do not exist in " + target_name(target_) +
                       "; quantize with --target octet to run it in octet");
      return;
    }
    const std::string& op = n.op_type();
    if (target_ == Target::TensorRT) {
      static const std::set<std::string> dynamic_ops = {"DynamicQuantizeLinear", "MatMulInteger", "ConvInteger",
                                                        "QLinearMatMul", "QLinearConv"};
      if (dynamic_ops.count(op))
        problem(n, "TensorRT takes only QuantizeLinear/DequantizeLinear with constant scales (explicit "
                   "quantization); use --mode static");
    }
    if (op == "QuantizeLinear" || op == "DequantizeLinear") check_qdq(n);
  }

  std::vector<std::string> problems() && { return std::move(problems_); }

 private:
  void check_qdq(const Node& n) {
    const Value* scale = n.input(1);
    const Value* zp = n.input(2);
    if (!scale || !scale->type.known() || scale->type.dtype != DType::Float32)
      problem(n, "scale '" + (scale ? scale->name() : std::string("?")) + "' must be float32");
    // octet also runs int16 (its attention probabilities, QuantizeOptions::wide_probabilities).
    const bool int16_ok = target_ == Target::Octet && zp && zp->type.dtype == DType::Int16;
    if (zp && zp->type.known() && zp->type.dtype != DType::UInt8 && zp->type.dtype != DType::Int8 && !int16_ok)
      problem(n, "zero point '" + zp->name() + "' is " + dtype_name(zp->type.dtype) + "; " +
                     target_name(target_) + " runs uint8/int8 quantization" +
                     (target_ == Target::Octet ? " (and int16)" : ""));
    if (target_ != Target::TensorRT) return;
    if (!is_constant(scale)) problem(n, "scale '" + scale->name() + "' must be a constant initializer");
    if (!zp) {
      problem(n, "no zero point means uint8; TensorRT needs an int8 zero point of 0");
    } else if (!is_constant(zp) || zp->type.dtype != DType::Int8) {
      problem(n, "zero point '" + zp->name() + "' must be a constant int8 tensor of zeros");
    } else {
      for (int64_t v : zp->constant()->to_int64_vector())
        if (v != 0) {
          problem(n, "zero point '" + zp->name() + "' holds " + std::to_string(v) +
                         "; TensorRT quantization is symmetric (zero points 0)");
          break;
        }
    }
    if (n.op_type() == "DequantizeLinear" && is_constant(scale) && scale->constant()->numel() > 1) {
      const int want = output_channel_axis(n.output(0));
      const int64_t axis = n.attr_int("axis", 1);
      if (want < 0)
        problem(n, "per-channel scale on a tensor that is not a weight input of MatMul/Gemm/Conv/Gather");
      else if (axis != want)
        problem(n, "per-channel scale on axis " + std::to_string(axis) + ", but its consumer's output channels are on axis " +
                       std::to_string(want));
    }
  }

  void problem(const Node& n, const std::string& what) {
    std::ostringstream line;
    line << where(n) << ": " << what;
    problems_.push_back(line.str());
  }

  Target target_;
  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> check_target_profile(const Graph& graph, Target target) {
  Checker checker(target);
  for (const Node* n : graph.nodes()) checker.check(*n);
  return std::move(checker).problems();
}

void check_target_options(const QuantizeOptions& o, bool activation_type_given) {
  if (!o.per_token.empty() && o.target != Target::Octet)
    fail("--per-token needs --target octet: ONNX's DynamicQuantizeLinear has one scale per tensor, so ",
         target_name(o.target), " cannot quantize an input per token");
  if (!o.per_token.empty() && o.mode != Mode::Static)
    fail("--per-token applies to static mode (dynamic mode quantizes every input per token already)");
  if (o.target != Target::TensorRT) return;
  if (o.mode == Mode::Dynamic)
    fail("--target tensorrt --mode dynamic: TensorRT has no dynamic quantization (no DynamicQuantizeLinear); "
         "it needs static scales from calibration: pass --calib PATH with --mode static");
  if (activation_type_given && o.activation_type != DType::Int8)
    fail("--target tensorrt needs symmetric int8 activations; drop --activation-type uint8");
}

}  // namespace octet::quant
