// Binding a run's input shapes to the graph's symbolic dims, compiled once per session.
//
// Every run binds each symbol of the graph inputs' declared dims from the tensors given
// ("batch" from input_ids' dim 0, ...) and checks every other dim. A decode step of a
// 30-layer model gives some 180 inputs, most of them the same few dims ("batch",
// "past + seq"): looking each symbol up by name in a std::map and evaluating each dim
// expression per input cost more than a step's small kernels. Compiled, a symbol is an
// index into a vector, and an expression dim (the present views' "past + seq") is
// evaluated once per run however many inputs declare it, after every input is bound, so
// the check no longer depends on the order the inputs come in.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/dim.h"

namespace octet {

class InputBinder {
 public:
  // Registers graph input number `input` (dense, from 0) with its declared dims; call once
  // per input, in order. `dims` null: rank unknown, nothing to bind or check.
  void add(const std::string& name, const DimVector* dims);

  // One run's bindings: a value per symbol (kUnbound where no input bound it).
  static constexpr int64_t kUnbound = INT64_MIN;
  struct State {
    std::vector<int64_t> symbols;
    struct Deferred {
      int input;
      uint32_t dim;
      int64_t actual;
    };
    std::vector<Deferred> deferred;  // expression dims, checked by finish()
  };
  State start() const;
  // Binds input `input`'s symbols from `actual` and checks its constant dims; expression
  // dims are checked by finish(). Errors name the input as "input 'NAME'".
  void bind(int input, const std::vector<int64_t>& actual, State& state) const;
  // Checks the expression dims against the bindings of all inputs (each distinct
  // expression evaluated once).
  void finish(State& state) const;
  // The bindings as the rest of the runtime takes them (symbol name -> value).
  Bindings bindings(const State& state) const;

 private:
  struct Compiled {
    enum Kind : uint8_t { Constant, Symbol, Expression } kind;
    int32_t index;   // Symbol: into symbols_; Expression: into expressions_
    int64_t value;   // Constant: the value
  };
  struct Input {
    std::string name;
    bool has_dims = false;
    DimVector declared;  // for error messages
    std::vector<Compiled> dims;
  };
  std::vector<Input> inputs_;
  std::vector<std::string> symbols_;
  std::map<std::string, int32_t> symbol_index_;
  std::vector<Dim> expressions_;
  std::map<Dim, int32_t> expression_index_;
};

}  // namespace octet
