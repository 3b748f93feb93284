// Einsum: the equation gives each input's axes a letter (or '...' for a run of
// broadcast axes); the output takes its dims from the letters it names, or in implicit
// mode (no '->') from the letters used exactly once, in alphabetical order, after the
// broadcast axes.
#include <algorithm>
#include <map>
#include <string>

#include "ops/op_registry.h"
#include "ops/shape_helpers.h"

namespace octet {

using namespace shape_rules;

namespace {

// One operand's subscripts: letters, with the ellipsis (if any) at `ellipsis_at`.
struct Term {
  std::string letters;
  int64_t ellipsis_at = -1;  // index into letters where '...' stands
};

Term parse_term(const InferContext& ctx, const std::string& text) {
  Term t;
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    if (c == '.') {
      if (text.compare(i, 3, "...") != 0) ctx.fail("malformed ellipsis in einsum term '", text, "'");
      if (t.ellipsis_at >= 0) ctx.fail("more than one ellipsis in einsum term '", text, "'");
      t.ellipsis_at = static_cast<int64_t>(t.letters.size());
      i += 3;
    } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      t.letters += c;
      ++i;
    } else {
      ctx.fail("invalid character '", std::string(1, c), "' in einsum term '", text, "'");
    }
  }
  return t;
}

// Einsum letters name one size: two known sizes must agree unless one is 1
// (broadcast, as numpy allows).
Dim unify_letter(const InferContext& ctx, char letter, const Dim& a, const Dim& b) {
  auto d = broadcast_dim(a, b);
  if (!d) ctx.fail("letter '", std::string(1, letter), "' has size ", a, " in one place and ", b, " in another");
  return *d;
}

void infer_einsum(InferContext& ctx) {
  const DType dtype = ctx.input_dtype(0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.input_dtype(i) != dtype)
      ctx.fail("input ", i, " is ", ctx.input_type(i).to_string(), " but input 0 is ", ctx.input_type(0).to_string());
  if (!ctx.node().has_attr("equation")) ctx.fail("needs an 'equation' attribute");
  std::string eq = ctx.node().attr_string("equation", "");
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(ctx, lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ctx.num_inputs())
    ctx.fail("equation '", eq, "' has ", terms.size(), " operands but the node has ", ctx.num_inputs(), " inputs");

  std::map<char, Dim> sizes;
  std::map<char, int> uses;
  bool any_ellipsis = false, ellipsis_known = true;
  DimVector ellipsis;
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term& t = terms[i];
    for (char c : t.letters) ++uses[c];
    any_ellipsis |= t.ellipsis_at >= 0;
    const auto& dims = ctx.input_dims(i);
    if (!dims) {
      ellipsis_known &= t.ellipsis_at < 0;
      continue;
    }
    const int64_t n_letters = static_cast<int64_t>(t.letters.size());
    const int64_t rank = static_cast<int64_t>(dims->size());
    if (t.ellipsis_at < 0 ? rank != n_letters : rank < n_letters)
      ctx.fail("operand ", i, " ", ctx.input_type(i).to_string(), " does not fit its subscripts in '", eq, "'");
    const int64_t ell_rank = rank - n_letters;
    for (int64_t k = 0; k < n_letters; ++k) {
      int64_t axis = (t.ellipsis_at >= 0 && k >= t.ellipsis_at) ? k + ell_rank : k;
      char c = t.letters[k];
      auto it = sizes.find(c);
      if (it == sizes.end()) sizes.emplace(c, (*dims)[axis]);
      else it->second = unify_letter(ctx, c, it->second, (*dims)[axis]);
    }
    if (t.ellipsis_at >= 0) {
      DimVector e(dims->begin() + t.ellipsis_at, dims->begin() + t.ellipsis_at + ell_rank);
      auto b = broadcast_shapes(ellipsis, e);
      if (!b) ctx.fail("the '...' dims of operand ", i, " ", ctx.input_type(i).to_string(), " do not broadcast");
      ellipsis = *b;
    }
  }

  Term out;
  if (arrow != std::string::npos) {
    out = parse_term(ctx, eq.substr(arrow + 2));
    std::string seen;
    for (char c : out.letters) {
      if (!uses.count(c)) ctx.fail("output letter '", std::string(1, c), "' appears in no input of '", eq, "'");
      if (seen.find(c) != std::string::npos) ctx.fail("output letter '", std::string(1, c), "' is repeated in '", eq, "'");
      seen += c;
    }
  } else {
    if (any_ellipsis) out.ellipsis_at = 0;
    for (const auto& [c, count] : uses)  // std::map: alphabetical (ASCII) order
      if (count == 1) out.letters += c;
  }
  if (out.ellipsis_at >= 0 && any_ellipsis && !ellipsis_known) {
    ctx.set_output(0, dtype, std::nullopt);
    return;
  }
  DimVector dims;
  for (size_t k = 0; k <= out.letters.size(); ++k) {
    if (static_cast<int64_t>(k) == out.ellipsis_at) dims.insert(dims.end(), ellipsis.begin(), ellipsis.end());
    if (k == out.letters.size()) break;
    auto it = sizes.find(out.letters[k]);
    dims.push_back(it != sizes.end() ? it->second : Dim::fresh("einsum"));
  }
  ctx.set_output(0, dtype, dims);
}

}  // namespace

namespace shape_rules {
void register_linalg_einsum_ops(OpRegistry& r) { add_rule<infer_einsum>(r, "Einsum"); }
}  // namespace shape_rules

}  // namespace octet
