// A symbolic tensor dimension: an integer polynomial over atoms, where an atom is a named
// symbol (`batch`, `seq`) or an opaque operation on dims (floordiv, mod, max, min).
//
// Why polynomials: exporters compute shapes with Shape/Gather/Concat/Reshape chains, so
// Reshape(x, [batch*seq, 768]) followed by Reshape(y, [batch, seq, 12, 64]) must
// simplify back to the same symbols; `seq+past` and `2*seq` must stay symbolic and be
// compared structurally. The representation is canonical (sorted terms, merged
// coefficients), so operator== is structural equality.
//
// An unknown or anonymous dimension in a model is never an error: it becomes a fresh
// symbol (Dim::fresh) that is bound when real inputs arrive.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace octet {

struct DimAtom;  // defined in dim.cpp
using Bindings = std::map<std::string, int64_t>;

class Dim {
 public:
  Dim() : Dim(int64_t{0}) {}
  Dim(int64_t value);  // NOLINT: implicit, so shape code can mix ints and dims
  Dim(int value) : Dim(static_cast<int64_t>(value)) {}  // NOLINT

  static Dim symbol(const std::string& name);
  // A new symbol no other dim equals; `hint` only makes the printed name readable.
  static Dim fresh(const std::string& hint = "");
  // True for names that exporters and shape inference write for "unknown":
  // empty, unk__N, DynamicDimension.N, '?', or names made by Dim::fresh.
  static bool is_anonymous_name(const std::string& name);

  static Dim floor_div(const Dim& a, const Dim& b);
  static Dim mod(const Dim& a, const Dim& b);
  static Dim max(const Dim& a, const Dim& b);
  static Dim min(const Dim& a, const Dim& b);

  friend Dim operator+(const Dim& a, const Dim& b);
  friend Dim operator-(const Dim& a, const Dim& b);
  friend Dim operator*(const Dim& a, const Dim& b);
  Dim operator-() const;

  bool operator==(const Dim& other) const;
  bool operator!=(const Dim& other) const { return !(*this == other); }
  bool operator<(const Dim& other) const;  // arbitrary but stable order, for maps

  bool is_constant() const;
  std::optional<int64_t> constant() const;
  // Throws octet::Error if the dim is symbolic.
  int64_t value() const;
  // True when the dim is exactly one named symbol (coefficient 1, exponent 1).
  bool is_symbol() const;
  // The symbol's name; empty unless is_symbol().
  std::string symbol_name() const;
  // The symbol's name without a copy; nullptr unless is_symbol() (binding inputs' dims at
  // every run: no string copy per dim).
  const std::string* symbol_name_ptr() const;

  // Every symbol name this dim mentions, through opaque atoms too.
  std::set<std::string> symbols() const;
  // The value under these bindings; nullopt when a symbol is unbound or a division by 0.
  std::optional<int64_t> evaluate(const Bindings& bindings) const;
  // Replaces bound symbols by their values and simplifies; unbound ones stay.
  Dim substitute(const Bindings& bindings) const;

  // "seq", "2*seq + past", "64*batch*seq", "floordiv(seq, 2)".
  std::string to_string() const;

  // Internal representation, exposed for dim.cpp helpers.
  struct Factor {
    std::shared_ptr<const DimAtom> atom;
    int exponent;
  };
  struct Term {
    std::vector<Factor> factors;  // sorted by atom key; empty for the constant term
    int64_t coef;
  };

 private:
  friend struct DimAlgebra;
  std::vector<Term> terms_;  // sorted by monomial key, no zero coefficients
};

std::ostream& operator<<(std::ostream& out, const Dim& d);

// A shape whose rank is known; each dim may be symbolic.
using DimVector = std::vector<Dim>;
std::string dims_to_string(const DimVector& dims);

// ONNX multidirectional broadcasting over symbolic dims. Where two different symbols
// meet, the result is max(a, b): correct whenever the model is valid (one of them is 1
// or both are equal), and checked against real values at run time.
// Returns nullopt when two known dims conflict (e.g. 3 vs 4).
std::optional<Dim> broadcast_dim(const Dim& a, const Dim& b);
std::optional<DimVector> broadcast_shapes(const DimVector& a, const DimVector& b);

// Product of dims (1 for an empty list).
Dim dims_product(const DimVector& dims);

}  // namespace octet
