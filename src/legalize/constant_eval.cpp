#include "legalize/constant_eval.h"

#include <set>

#include "kernels/kernel.h"
#include "octet/error.h"

namespace octet::legalize {

namespace {

class Evaluator {
 public:
  explicit Evaluator(size_t max_nodes) : max_nodes_(max_nodes) {}

  const Tensor* eval(Value* v) {
    if (auto it = memo_.find(v); it != memo_.end()) return it->second.get();
    if (v->is_graph_input()) return nullptr;
    if (v->constant()) {
      if (seen_leaves_.insert(v).second) result_.leaves.push_back(v);
      memo_[v] = v->constant();
      return v->constant().get();
    }
    Node* p = v->producer();
    if (!p || result_.nodes.size() >= max_nodes_) return nullptr;
    KernelFn kernel = KernelRegistry::reference().find(p->domain(), p->op_type());
    if (!kernel) return nullptr;
    std::vector<const Tensor*> inputs;
    for (Value* in : p->inputs()) {
      if (!in) {
        inputs.push_back(nullptr);
        continue;
      }
      const Tensor* t = eval(in);
      if (!t) return nullptr;
      inputs.push_back(t);
    }
    KernelContext kc(*p, std::move(inputs));
    try {
      kernel(kc);
    } catch (const Error&) {
      return nullptr;
    }
    result_.nodes.push_back(p);
    for (size_t i = 0; i < p->outputs().size(); ++i)
      if (Value* o = p->output(i)) memo_[o] = std::make_shared<const Tensor>(std::move(kc.outputs()[i]));
    return memo_.at(v).get();
  }

  ConstantExpression& result() { return result_; }

 private:
  size_t max_nodes_;
  std::map<const Value*, std::shared_ptr<const Tensor>> memo_;
  std::set<const Value*> seen_leaves_;
  ConstantExpression result_;
};

}  // namespace

std::optional<ConstantExpression> evaluate_constant(Value* v, size_t max_nodes) {
  if (v->constant() || v->is_graph_input()) return std::nullopt;  // nothing computes it
  Evaluator e(max_nodes);
  const Tensor* t = e.eval(v);
  if (!t) return std::nullopt;
  ConstantExpression out = std::move(e.result());
  out.value = std::make_shared<const Tensor>(t->deep_copy());
  return out;
}

}  // namespace octet::legalize
