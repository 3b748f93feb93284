#include "runtime/random_inputs.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <set>

namespace octet {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Ops that carry index values through unchanged (only their data input counts).
bool passes_values(const Use& use) {
  static const std::set<std::string> any_input = {"Concat"};
  static const std::set<std::string> first_input = {"Cast", "Reshape", "Unsqueeze", "Squeeze", "Flatten",
                                                    "Identity", "Expand", "Transpose", "Slice", "Tile"};
  const std::string& op = use.node->op_type();
  if (!use.node->domain().empty() || use.implicit) return false;
  return any_input.count(op) || (first_input.count(op) && use.index == 0);
}

struct GatherSize {
  std::optional<int64_t> smallest;  // over the Gathers whose axis size is known
  std::string node;                 // the Gather that gave it
  int found = 0;                    // Gathers reading the values as indices
};

// Follows `input` through value-preserving ops to Gather/GatherElements index inputs.
GatherSize find_gather_sizes(const Value& input, const Bindings& bindings) {
  GatherSize out;
  std::vector<const Value*> work = {&input};
  std::set<const Value*> seen = {&input};
  while (!work.empty()) {
    const Value* v = work.back();
    work.pop_back();
    for (const Use& use : v->uses()) {
      const Node& n = *use.node;
      if (n.domain().empty() && !use.implicit && use.index == 1 &&
          (n.op_type() == "Gather" || n.op_type() == "GatherElements")) {
        ++out.found;
        const Value* data = n.input(0);
        if (!data || !data->type.dims) continue;
        const int64_t rank = static_cast<int64_t>(data->type.dims->size());
        int64_t axis = n.attr_int("axis", 0);
        if (axis < 0) axis += rank;
        if (axis < 0 || axis >= rank) continue;
        auto size = (*data->type.dims)[axis].evaluate(bindings);
        if (size && *size > 0 && (!out.smallest || *size < *out.smallest)) {
          out.smallest = size;
          out.node = n.name();
        }
      } else if (passes_values(use)) {
        for (const Value* o : n.outputs())
          if (o && seen.insert(o).second) work.push_back(o);
      }
    }
  }
  return out;
}

bool has(const std::string& haystack, const char* needle) { return haystack.find(needle) != std::string::npos; }

// Deterministic across standard libraries (std:: distributions are not).
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
double standard_normal(std::mt19937_64& rng) {
  double u1 = 0;
  while (u1 <= 0) u1 = uniform01(rng);
  const double u2 = uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

template <typename T>
void fill_ints(Tensor& t, const std::vector<int64_t>& values) {
  T* out = reinterpret_cast<T*>(t.mutable_raw());
  for (size_t i = 0; i < values.size(); ++i) out[i] = static_cast<T>(values[i]);
}

}  // namespace

InputFill choose_input_fill(const Value& input, const Bindings& bindings) {
  const DType t = input.type.dtype;
  const std::string name = lower(input.name());
  const bool is_int = dtype_is_integer(t) && dtype_bits(t) >= 8;
  using R = InputFill::Rule;
  if ((is_int || t == DType::Bool || dtype_is_float(t)) && has(name, "mask"))
    return {R::Ones, 0, t == DType::Bool ? "true (a mask: attend everywhere)" : "ones (a mask: attend everywhere)"};
  if (t == DType::Bool) return {R::Ones, 0, "true"};
  if (dtype_is_float(t)) return {R::Normal, 0, "normal(0, 1)"};
  if (!is_int) return {R::Zeros, 0, "zeros"};
  if (has(name, "token_type") || has(name, "segment")) return {R::Zeros, 0, "zeros (token types: one segment)"};
  GatherSize g = find_gather_sizes(input, bindings);
  if (has(name, "position_ids")) {
    std::string d = "positions 0, 1, 2, ... along the last axis";
    if (g.smallest) d += " (modulo " + std::to_string(*g.smallest) + ")";
    return {R::Positions, g.smallest.value_or(0), d};
  }
  if (g.found) {
    if (!g.smallest) return {R::Zeros, 0, "zeros (Gather indices into an axis of unknown size)"};
    return {R::Indices, *g.smallest,
            "ids in [0, " + std::to_string(*g.smallest) + ") (indices of Gather '" + g.node + "')"};
  }
  return {R::Ones, 0, "ones"};
}

std::vector<int64_t> concrete_input_shape(const Value& input, const Bindings& bindings) {
  const std::string what = "input '" + input.name() + "'";
  if (!input.type.dims)
    fail(what, " has unknown rank, so --random cannot make it; give it with --input ", input.name(), "=FILE");
  std::vector<int64_t> shape;
  const DimVector& dims = *input.type.dims;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (auto v = dims[i].evaluate(bindings)) {
      if (*v < 0) fail(what, " dim ", i, " (", dims[i].to_string(), ") is ", *v, " under the given --dim values");
      shape.push_back(*v);
      continue;
    }
    std::string unbound;
    bool anonymous = false;
    for (const std::string& s : dims[i].symbols()) {
      if (bindings.count(s)) continue;
      if (Dim::is_anonymous_name(s)) anonymous = true;
      unbound += (unbound.empty() ? "" : ", ") + s;
    }
    if (anonymous)
      fail(what, " ", dims_to_string(dims), ": dim ", i, " has no name in the model, so --random cannot size it; ",
           "set it with --dim ", input.name(), ":", i, "=N");
    const std::string first = unbound.substr(0, unbound.find(','));
    if (dims[i].is_symbol())
      fail(what, " ", dims_to_string(dims), ": dim ", i, " '", first, "' is not bound, so --random cannot size it; ",
           "add --dim ", first, "=N");
    fail(what, " ", dims_to_string(dims), ": dim ", i, " is '", dims[i].to_string(), "' and '", unbound,
         "' is not bound, so --random cannot size it; add --dim ", first, "=N");
  }
  return shape;
}

Tensor make_input(DType dtype, const std::vector<int64_t>& shape, const InputFill& fill, std::mt19937_64& rng) {
  Tensor t(dtype, shape);
  const int64_t n = t.numel();
  using R = InputFill::Rule;
  if (dtype_is_float(dtype)) {
    if (dtype != DType::Float32 && dtype != DType::Float64 && dtype != DType::Float16 && dtype != DType::BFloat16)
      fail("--random cannot make ", dtype_name(dtype), " data; give this input with --input NAME=FILE");
    uint8_t* out = t.mutable_raw();
    for (int64_t i = 0; i < n; ++i) {
      double v = fill.rule == R::Normal ? standard_normal(rng) : fill.rule == R::Ones ? 1.0 : 0.0;
      float f = static_cast<float>(v);
      switch (dtype) {
        case DType::Float32: std::memcpy(out + 4 * i, &f, 4); break;
        case DType::Float64: std::memcpy(out + 8 * i, &v, 8); break;
        case DType::Float16: { uint16_t h = float_to_half(f); std::memcpy(out + 2 * i, &h, 2); break; }
        default: { uint16_t h = float_to_bfloat16(f); std::memcpy(out + 2 * i, &h, 2); break; }
      }
    }
    return t;
  }
  if (dtype != DType::Bool && !(dtype_is_integer(dtype) && dtype_bits(dtype) >= 8))
    fail("--random cannot make ", dtype_name(dtype), " data; give this input with --input NAME=FILE");
  std::vector<int64_t> values(static_cast<size_t>(n), 0);
  uint64_t limit = static_cast<uint64_t>(std::max<int64_t>(fill.limit, 1));
  if (dtype_bits(dtype) < 64) {  // ids must fit the type: int8 ids stay below 128
    const int value_bits = dtype_bits(dtype) - (dtype_is_signed(dtype) ? 1 : 0);
    limit = std::min(limit, uint64_t{1} << value_bits);
  }
  const int64_t last = shape.empty() ? 1 : shape.back();
  for (int64_t i = 0; i < n; ++i) {
    switch (fill.rule) {
      case R::Ones: values[i] = 1; break;
      case R::Zeros: case R::Normal: values[i] = 0; break;
      case R::Indices: values[i] = static_cast<int64_t>(rng() % limit); break;
      case R::Positions: values[i] = last ? (fill.limit ? (i % last) % fill.limit : i % last) : 0; break;
    }
  }
  switch (dtype) {
    case DType::Int64: fill_ints<int64_t>(t, values); break;
    case DType::Int32: fill_ints<int32_t>(t, values); break;
    case DType::Int16: fill_ints<int16_t>(t, values); break;
    case DType::Int8: fill_ints<int8_t>(t, values); break;
    case DType::UInt64: fill_ints<uint64_t>(t, values); break;
    case DType::UInt32: fill_ints<uint32_t>(t, values); break;
    case DType::UInt16: fill_ints<uint16_t>(t, values); break;
    default: fill_ints<uint8_t>(t, values); break;  // uint8, bool
  }
  return t;
}

}  // namespace octet
