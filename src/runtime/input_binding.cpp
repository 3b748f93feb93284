#include "runtime/input_binding.h"

#include "core/tensor.h"
#include "octet/error.h"

namespace octet {

void InputBinder::add(const std::string& name, const DimVector* dims) {
  Input in;
  in.name = name;
  in.has_dims = dims != nullptr;
  if (dims) {
    in.declared = *dims;
    for (const Dim& d : *dims) {
      Compiled c{Compiled::Constant, -1, 0};
      if (auto v = d.constant()) {
        c.value = *v;
      } else if (const std::string* sym = d.symbol_name_ptr()) {
        auto [it, inserted] = symbol_index_.emplace(*sym, static_cast<int32_t>(symbols_.size()));
        if (inserted) symbols_.push_back(*sym);
        c = {Compiled::Symbol, it->second, 0};
      } else {
        auto [it, inserted] = expression_index_.emplace(d, static_cast<int32_t>(expressions_.size()));
        if (inserted) expressions_.push_back(d);
        c = {Compiled::Expression, it->second, 0};
      }
      in.dims.push_back(c);
    }
  }
  inputs_.push_back(std::move(in));
}

InputBinder::State InputBinder::start() const {
  State s;
  s.symbols.assign(symbols_.size(), kUnbound);
  return s;
}

void InputBinder::bind(int input, const std::vector<int64_t>& actual, State& state) const {
  const Input& in = inputs_[static_cast<size_t>(input)];
  if (!in.has_dims) return;
  if (in.dims.size() != actual.size())
    fail("input '", in.name, "' has rank ", actual.size(), " (shape ", shape_to_string(actual), "), expected rank ",
         in.dims.size(), " ", dims_to_string(in.declared));
  for (size_t i = 0; i < in.dims.size(); ++i) {
    const Compiled& c = in.dims[i];
    switch (c.kind) {
      case Compiled::Constant:
        if (c.value != actual[i])
          fail("input '", in.name, "' dim ", i, " is ", actual[i], ", expected ", c.value);
        break;
      case Compiled::Symbol: {
        int64_t& bound = state.symbols[static_cast<size_t>(c.index)];
        if (bound == kUnbound) bound = actual[i];
        else if (bound != actual[i])
          fail("input '", in.name, "' dim ", i, " is ", actual[i], " but '", symbols_[static_cast<size_t>(c.index)],
               "' is already ", bound, " from another input");
        break;
      }
      case Compiled::Expression:
        state.deferred.push_back({input, static_cast<uint32_t>(i), actual[i]});
        break;
    }
  }
}

void InputBinder::finish(State& state) const {
  if (state.deferred.empty()) return;
  const Bindings all = bindings(state);
  // Per expression: 0 not evaluated yet, 1 evaluated to value[e], 2 not decided by the
  // inputs' symbols (left to the kernels and the output checks, as before binding).
  std::vector<char> done(expressions_.size(), 0);
  std::vector<int64_t> value(expressions_.size(), 0);
  for (const State::Deferred& d : state.deferred) {
    const Input& in = inputs_[static_cast<size_t>(d.input)];
    const size_t e = static_cast<size_t>(in.dims[d.dim].index);
    if (!done[e]) {
      auto v = expressions_[e].evaluate(all);
      done[e] = v ? 1 : 2;
      value[e] = v.value_or(0);
    }
    if (done[e] == 1 && value[e] != d.actual)
      fail("input '", in.name, "' dim ", d.dim, " is ", d.actual, ", expected ", value[e], " (",
           expressions_[e].to_string(), ")");
  }
}

Bindings InputBinder::bindings(const State& state) const {
  Bindings out;
  for (size_t i = 0; i < symbols_.size(); ++i)
    if (state.symbols[i] != kUnbound) out.emplace_hint(out.end(), symbols_[i], state.symbols[i]);
  return out;
}

}  // namespace octet
