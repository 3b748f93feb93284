// Symbolic dims compiled for cheap evaluation at every run.
//
// A run plan needs every value's shape under the run's bindings. Evaluating each Dim of
// each value (a polynomial whose atoms look their symbols up by name) costs more than the
// small kernels of a decode step, and the graph repeats the same few symbolic dims
// ("batch", "past + 1") thousands of times. The table keeps each dim list a session will
// evaluate as entries in one flat array: constants are stored as they are, and symbolic
// dims point at one copy of each distinct Dim, which a plan evaluates once.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "ir/dim.h"

namespace octet {

class DimTable {
 public:
  // Where one dim list lives in the flat arrays.
  struct Span {
    uint32_t offset = 0;
    uint32_t size = 0;
  };

  Span add(const DimVector& dims);

  // Every entry under `bindings`: values[i] and known[i] (0 where a symbol is unbound or a
  // division by zero leaves the dim undefined). Both are resized to size().
  void evaluate(const Bindings& bindings, std::vector<int64_t>& values, std::vector<char>& known) const;

  size_t size() const { return constant_.size(); }
  // Entries whose value does not depend on the bindings.
  bool is_constant(uint32_t entry) const { return symbolic_[entry] < 0; }

 private:
  std::vector<int64_t> constant_;  // per entry (0 where symbolic)
  std::vector<int32_t> symbolic_;  // per entry: index into dims_, -1 for a constant
  std::vector<uint32_t> symbolic_entries_;  // the entries with symbolic_ >= 0
  std::vector<Dim> dims_;                   // the distinct symbolic dims
  std::map<Dim, int32_t> index_;
};

}  // namespace octet
