#include "ir/dim.h"

#include <algorithm>
#include <atomic>
#include <ostream>
#include <regex>
#include <sstream>

#include "octet/error.h"

namespace octet {

struct DimAtom {
  enum class Kind { Symbol, FloorDiv, Mod, Max, Min };
  Kind kind = Kind::Symbol;
  std::string name;       // symbol name, or the op's printed form
  std::vector<Dim> args;  // operands of an op atom
  std::string key;        // canonical key: equality and ordering
};

namespace {

using AtomPtr = std::shared_ptr<const DimAtom>;

std::string monomial_key(const std::vector<Dim::Factor>& factors) {
  std::string key;
  for (const auto& f : factors) {
    if (!key.empty()) key += '*';
    key += f.atom->key;
    key += '^';
    key += std::to_string(f.exponent);
  }
  return key;
}

const char* op_name(DimAtom::Kind k) {
  switch (k) {
    case DimAtom::Kind::FloorDiv: return "floordiv";
    case DimAtom::Kind::Mod: return "mod";
    case DimAtom::Kind::Max: return "max";
    case DimAtom::Kind::Min: return "min";
    default: return "symbol";
  }
}

int64_t mul(int64_t a, int64_t b);
int64_t floordiv_int(int64_t a, int64_t b) {
  if (b == -1) return mul(a, -1);  // INT64_MIN / -1 traps (SIGFPE) instead of overflowing
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Dims come from files and tensor data, so their arithmetic is checked: a wrapped
// product would turn a huge shape into a small (or negative) one.
[[noreturn]] void overflow() { fail("symbolic shape: a dimension overflows int64"); }
int64_t mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}
int64_t add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}

int64_t ipow(int64_t base, int exp) {
  int64_t r = 1;
  for (int i = 0; i < exp; ++i) r = mul(r, base);
  return r;
}

}  // namespace

// Friend of Dim: the polynomial algebra on the private term list.
struct DimAlgebra {
  static Dim from_terms(std::vector<Dim::Term> terms) {
    std::vector<std::pair<std::string, Dim::Term>> keyed;
    keyed.reserve(terms.size());
    for (auto& t : terms) keyed.emplace_back(monomial_key(t.factors), std::move(t));
    std::stable_sort(keyed.begin(), keyed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    Dim d;
    d.terms_.clear();
    for (size_t i = 0; i < keyed.size();) {
      size_t j = i;
      int64_t coef = 0;
      while (j < keyed.size() && keyed[j].first == keyed[i].first) coef = add(coef, keyed[j++].second.coef);
      if (coef != 0) d.terms_.push_back({keyed[i].second.factors, coef});
      i = j;
    }
    return d;
  }

  static Dim from_atom(AtomPtr atom) {
    Dim d;
    d.terms_ = {{{{std::move(atom), 1}}, 1}};
    return d;
  }

  static Dim make_op(DimAtom::Kind kind, Dim a, Dim b) {
    if ((kind == DimAtom::Kind::Max || kind == DimAtom::Kind::Min) && b < a) std::swap(a, b);
    auto atom = std::make_shared<DimAtom>();
    atom->kind = kind;
    atom->name = std::string(op_name(kind)) + "(" + a.to_string() + ", " + b.to_string() + ")";
    atom->key = "~" + atom->name;  // after every symbol key ("$...") in sort order
    atom->args = {std::move(a), std::move(b)};
    return from_atom(std::move(atom));
  }

  static std::vector<Dim::Factor> multiply_factors(const std::vector<Dim::Factor>& a,
                                                   const std::vector<Dim::Factor>& b) {
    std::vector<Dim::Factor> out = a;
    for (const auto& f : b) {
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const Dim::Factor& g) { return g.atom->key == f.atom->key; });
      if (it != out.end())
        it->exponent += f.exponent;
      else
        out.push_back(f);
    }
    std::sort(out.begin(), out.end(),
              [](const Dim::Factor& x, const Dim::Factor& y) { return x.atom->key < y.atom->key; });
    return out;
  }

  // Divides `factors` by `divisor` when every divisor factor appears with at least its
  // exponent; nullopt otherwise.
  static std::optional<std::vector<Dim::Factor>> divide_factors(
      const std::vector<Dim::Factor>& factors, const std::vector<Dim::Factor>& divisor) {
    std::vector<Dim::Factor> out = factors;
    for (const auto& d : divisor) {
      auto it = std::find_if(out.begin(), out.end(),
                             [&](const Dim::Factor& g) { return g.atom->key == d.atom->key; });
      if (it == out.end() || it->exponent < d.exponent) return std::nullopt;
      it->exponent -= d.exponent;
      if (it->exponent == 0) out.erase(it);
    }
    return out;
  }

  // Exact division of a polynomial by a single-term divisor, when every term divides.
  static std::optional<Dim> exact_divide(const Dim& a, const Dim& b) {
    if (b.terms_.size() != 1) return std::nullopt;
    const Dim::Term& div = b.terms_[0];
    std::vector<Dim::Term> out;
    for (const auto& t : a.terms_) {
      if (t.coef % div.coef != 0) return std::nullopt;
      auto f = divide_factors(t.factors, div.factors);
      if (!f) return std::nullopt;
      out.push_back({*f, t.coef / div.coef});
    }
    return from_terms(std::move(out));
  }

  static const std::vector<Dim::Term>& terms(const Dim& d) { return d.terms_; }

  // The atom when `d` is exactly one atom (a symbol or an op) with coefficient and exponent 1.
  static const DimAtom* sole_atom(const Dim& d) {
    if (d.terms_.size() != 1 || d.terms_[0].coef != 1 || d.terms_[0].factors.size() != 1) return nullptr;
    const Dim::Factor& f = d.terms_[0].factors[0];
    return f.exponent == 1 ? f.atom.get() : nullptr;
  }

  // Absorption, exact for all values: max(a, min(a, x)) = a, max(a, max(a, x)) = max(a, x),
  // and the same with max and min swapped. Keeps broadcasting seq against the sliced
  // min(seq, 128) of a position buffer from growing max(min(128, seq), seq).
  static std::optional<Dim> absorb(DimAtom::Kind kind, const Dim& a, const Dim& b) {
    const DimAtom::Kind dual = kind == DimAtom::Kind::Max ? DimAtom::Kind::Min : DimAtom::Kind::Max;
    for (int side = 0; side < 2; ++side) {
      const Dim& plain = side ? b : a;
      const Dim& other = side ? a : b;
      const DimAtom* atom = sole_atom(other);
      if (!atom || (atom->kind != DimAtom::Kind::Max && atom->kind != DimAtom::Kind::Min)) continue;
      if (atom->args[0] != plain && atom->args[1] != plain) continue;
      if (atom->kind == dual) return plain;
      if (atom->kind == kind) return other;
    }
    return std::nullopt;
  }
};

Dim::Dim(int64_t value) {
  if (value != 0) terms_.push_back({{}, value});
}

Dim Dim::symbol(const std::string& name) {
  if (name.empty()) return fresh();
  auto atom = std::make_shared<DimAtom>();
  atom->kind = DimAtom::Kind::Symbol;
  atom->name = name;
  atom->key = "$" + name;
  return DimAlgebra::from_atom(std::move(atom));
}

Dim Dim::fresh(const std::string& hint) {
  static std::atomic<int64_t> counter{0};
  int64_t n = ++counter;
  return symbol((hint.empty() ? std::string("unk") : hint) + "?" + std::to_string(n));
}

bool Dim::is_anonymous_name(const std::string& name) {
  static const std::regex anonymous(R"((unk__\d+|DynamicDimension\.\d+|\?|.*\?\d+))");
  return name.empty() || std::regex_match(name, anonymous);
}

Dim operator+(const Dim& a, const Dim& b) {
  std::vector<Dim::Term> t = DimAlgebra::terms(a);
  const auto& tb = DimAlgebra::terms(b);
  t.insert(t.end(), tb.begin(), tb.end());
  return DimAlgebra::from_terms(std::move(t));
}

Dim Dim::operator-() const {
  std::vector<Term> t = terms_;
  for (auto& term : t) term.coef = mul(term.coef, -1);
  return DimAlgebra::from_terms(std::move(t));
}

Dim operator-(const Dim& a, const Dim& b) { return a + (-b); }

Dim operator*(const Dim& a, const Dim& b) {
  std::vector<Dim::Term> out;
  for (const auto& x : DimAlgebra::terms(a))
    for (const auto& y : DimAlgebra::terms(b))
      out.push_back({DimAlgebra::multiply_factors(x.factors, y.factors), mul(x.coef, y.coef)});
  return DimAlgebra::from_terms(std::move(out));
}

Dim Dim::floor_div(const Dim& a, const Dim& b) {
  auto ca = a.constant(), cb = b.constant();
  if (cb && *cb == 0) fail("symbolic shape: division of ", a.to_string(), " by zero");
  if (ca && cb) return floordiv_int(*ca, *cb);
  if (cb && *cb == 1) return a;
  if (a == b) return 1;
  if (auto exact = DimAlgebra::exact_divide(a, b)) return *exact;
  return DimAlgebra::make_op(DimAtom::Kind::FloorDiv, a, b);
}

Dim Dim::mod(const Dim& a, const Dim& b) {
  auto ca = a.constant(), cb = b.constant();
  if (cb && *cb == 0) fail("symbolic shape: ", a.to_string(), " mod zero");
  if (ca && cb) return *ca - mul(floordiv_int(*ca, *cb), *cb);
  if (DimAlgebra::exact_divide(a, b)) return 0;
  return DimAlgebra::make_op(DimAtom::Kind::Mod, a, b);
}

Dim Dim::max(const Dim& a, const Dim& b) {
  auto ca = a.constant(), cb = b.constant();
  if (ca && cb) return std::max(*ca, *cb);
  if (a == b) return a;
  if (auto r = DimAlgebra::absorb(DimAtom::Kind::Max, a, b)) return *r;
  return DimAlgebra::make_op(DimAtom::Kind::Max, a, b);
}

Dim Dim::min(const Dim& a, const Dim& b) {
  auto ca = a.constant(), cb = b.constant();
  if (ca && cb) return std::min(*ca, *cb);
  if (a == b) return a;
  if (auto r = DimAlgebra::absorb(DimAtom::Kind::Min, a, b)) return *r;
  return DimAlgebra::make_op(DimAtom::Kind::Min, a, b);
}

bool Dim::operator==(const Dim& other) const {
  if (terms_.size() != other.terms_.size()) return false;
  for (size_t i = 0; i < terms_.size(); ++i) {
    if (terms_[i].coef != other.terms_[i].coef) return false;
    if (monomial_key(terms_[i].factors) != monomial_key(other.terms_[i].factors)) return false;
  }
  return true;
}

bool Dim::operator<(const Dim& other) const { return to_string() < other.to_string(); }

bool Dim::is_constant() const { return terms_.empty() || (terms_.size() == 1 && terms_[0].factors.empty()); }

std::optional<int64_t> Dim::constant() const {
  if (terms_.empty()) return int64_t{0};
  if (terms_.size() == 1 && terms_[0].factors.empty()) return terms_[0].coef;
  return std::nullopt;
}

int64_t Dim::value() const {
  auto c = constant();
  if (!c) fail("dimension '", to_string(), "' is symbolic; bind its symbols first");
  return *c;
}

bool Dim::is_symbol() const {
  return terms_.size() == 1 && terms_[0].coef == 1 && terms_[0].factors.size() == 1 &&
         terms_[0].factors[0].exponent == 1 &&
         terms_[0].factors[0].atom->kind == DimAtom::Kind::Symbol;
}

std::string Dim::symbol_name() const { return is_symbol() ? terms_[0].factors[0].atom->name : ""; }

const std::string* Dim::symbol_name_ptr() const { return is_symbol() ? &terms_[0].factors[0].atom->name : nullptr; }

std::set<std::string> Dim::symbols() const {
  std::set<std::string> out;
  for (const auto& t : terms_)
    for (const auto& f : t.factors) {
      if (f.atom->kind == DimAtom::Kind::Symbol) {
        out.insert(f.atom->name);
      } else {
        for (const auto& arg : f.atom->args) {
          auto inner = arg.symbols();
          out.insert(inner.begin(), inner.end());
        }
      }
    }
  return out;
}

namespace {
std::optional<int64_t> evaluate_atom(const DimAtom& atom, const Bindings& bindings) {
  if (atom.kind == DimAtom::Kind::Symbol) {
    auto it = bindings.find(atom.name);
    if (it == bindings.end()) return std::nullopt;
    return it->second;
  }
  auto a = atom.args[0].evaluate(bindings);
  auto b = atom.args[1].evaluate(bindings);
  if (!a || !b) return std::nullopt;
  switch (atom.kind) {
    case DimAtom::Kind::FloorDiv:
      if (*b == 0) return std::nullopt;
      return floordiv_int(*a, *b);
    case DimAtom::Kind::Mod:
      if (*b == 0) return std::nullopt;
      return *a - floordiv_int(*a, *b) * *b;
    case DimAtom::Kind::Max: return std::max(*a, *b);
    case DimAtom::Kind::Min: return std::min(*a, *b);
    default: return std::nullopt;
  }
}

Dim substitute_atom(const std::shared_ptr<const DimAtom>& atom, const Bindings& bindings) {
  if (atom->kind == DimAtom::Kind::Symbol) {
    auto it = bindings.find(atom->name);
    return it == bindings.end() ? Dim::symbol(atom->name) : Dim(it->second);
  }
  Dim a = atom->args[0].substitute(bindings), b = atom->args[1].substitute(bindings);
  switch (atom->kind) {
    case DimAtom::Kind::FloorDiv: return Dim::floor_div(a, b);
    case DimAtom::Kind::Mod: return Dim::mod(a, b);
    case DimAtom::Kind::Max: return Dim::max(a, b);
    default: return Dim::min(a, b);
  }
}
}  // namespace

std::optional<int64_t> Dim::evaluate(const Bindings& bindings) const {
  int64_t total = 0;
  for (const auto& t : terms_) {
    int64_t v = t.coef;
    for (const auto& f : t.factors) {
      auto a = evaluate_atom(*f.atom, bindings);
      if (!a) return std::nullopt;
      v = mul(v, ipow(*a, f.exponent));
    }
    total = add(total, v);
  }
  return total;
}

Dim Dim::substitute(const Bindings& bindings) const {
  Dim total = 0;
  for (const auto& t : terms_) {
    Dim v = t.coef;
    for (const auto& f : t.factors) {
      Dim a = substitute_atom(f.atom, bindings);
      for (int e = 0; e < f.exponent; ++e) v = v * a;
    }
    total = total + v;
  }
  return total;
}

std::string Dim::to_string() const {
  if (terms_.empty()) return "0";
  // Highest-degree terms first, the constant last: "2*seq + past - 1".
  std::vector<const Term*> order;
  for (const auto& t : terms_) order.push_back(&t);
  std::stable_sort(order.begin(), order.end(), [](const Term* a, const Term* b) {
    return a->factors.size() > b->factors.size();
  });
  std::ostringstream out;
  bool first = true;
  for (const Term* t : order) {
    int64_t coef = t->coef;
    if (!first) {
      out << (coef < 0 ? " - " : " + ");
      coef = coef < 0 ? -coef : coef;
    } else if (coef < 0 && !t->factors.empty()) {
      out << "-";
      coef = -coef;
    }
    first = false;
    bool wrote = false;
    if (t->factors.empty() || coef != 1) {
      out << coef;
      wrote = true;
    }
    for (const auto& f : t->factors) {
      if (wrote) out << "*";
      out << f.atom->name;
      if (f.exponent != 1) out << "^" << f.exponent;
      wrote = true;
    }
  }
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Dim& d) { return out << d.to_string(); }

std::string dims_to_string(const DimVector& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s.append(i ? "," : "").append(dims[i].to_string());
  return s + "]";
}

std::optional<Dim> broadcast_dim(const Dim& a, const Dim& b) {
  if (a == b) return a;
  auto ca = a.constant(), cb = b.constant();
  if (ca && *ca == 1) return b;
  if (cb && *cb == 1) return a;
  if (ca && cb) return std::nullopt;  // two different known sizes, neither 1
  // A known size other than 1 decides: the symbol must equal it (or be 1).
  if (ca) return a;
  if (cb) return b;
  return Dim::max(a, b);
}

std::optional<DimVector> broadcast_shapes(const DimVector& a, const DimVector& b) {
  size_t rank = std::max(a.size(), b.size());
  DimVector out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim one = 1;
    const Dim& da = i < rank - a.size() ? one : a[i - (rank - a.size())];
    const Dim& db = i < rank - b.size() ? one : b[i - (rank - b.size())];
    auto d = broadcast_dim(da, db);
    if (!d) return std::nullopt;
    out[i] = *d;
  }
  return out;
}

Dim dims_product(const DimVector& dims) {
  Dim p = 1;
  for (const auto& d : dims) p = p * d;
  return p;
}

}  // namespace octet
