#include "runtime/dim_table.h"

#include "octet/error.h"

namespace octet {

DimTable::Span DimTable::add(const DimVector& dims) {
  Span span{static_cast<uint32_t>(constant_.size()), static_cast<uint32_t>(dims.size())};
  for (const Dim& d : dims) {
    if (auto c = d.constant()) {
      constant_.push_back(*c);
      symbolic_.push_back(-1);
      continue;
    }
    auto [it, inserted] = index_.emplace(d, static_cast<int32_t>(dims_.size()));
    if (inserted) dims_.push_back(d);
    symbolic_entries_.push_back(static_cast<uint32_t>(constant_.size()));
    constant_.push_back(0);
    symbolic_.push_back(it->second);
  }
  OCTET_ASSERT(constant_.size() < (uint64_t{1} << 31), "too many dims for one session");
  return span;
}

void DimTable::evaluate(const Bindings& bindings, std::vector<int64_t>& values, std::vector<char>& known) const {
  std::vector<int64_t> dim_value(dims_.size(), 0);
  std::vector<char> dim_known(dims_.size(), 0);
  for (size_t i = 0; i < dims_.size(); ++i)
    if (auto v = dims_[i].evaluate(bindings)) {
      dim_value[i] = *v;
      dim_known[i] = 1;
    }
  values = constant_;
  known.assign(constant_.size(), 1);
  for (uint32_t e : symbolic_entries_) {
    values[e] = dim_value[symbolic_[e]];
    known[e] = dim_known[symbolic_[e]];
  }
}

}  // namespace octet
