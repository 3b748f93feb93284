#include "analysis/macs.h"

#include <map>

namespace octet {

namespace {

const DimVector* dims_of(const Value* v) {
  return v && v->type.dims ? &*v->type.dims : nullptr;
}

// numel(output) * K, where K is the contracted length read from input `a`'s last axis
// (or its first axis when transposed).
std::optional<Dim> matmul_like(const Node& n, size_t a_index, bool a_transposed) {
  const DimVector* a = dims_of(n.input(a_index));
  const DimVector* out = dims_of(n.output(0));
  if (!a || !out || a->empty()) return std::nullopt;
  Dim k = a_transposed && a->size() == 2 ? (*a)[0] : a->back();
  return dims_product(*out) * k;
}

std::optional<Dim> conv_macs(const Node& n, size_t w_index) {
  const DimVector* w = dims_of(n.input(w_index));
  const DimVector* out = dims_of(n.output(0));
  if (!w || !out || w->size() < 3) return std::nullopt;
  // Each output element reads Cin/group channels times the kernel window, and W's
  // shape [Cout, Cin/group, k...] already holds exactly that per output channel.
  Dim per_output = 1;
  for (size_t i = 1; i < w->size(); ++i) per_output = per_output * (*w)[i];
  return dims_product(*out) * per_output;
}

// ConvTranspose scatters instead: every input element meets the taps of the M/group
// filters of its group, W's shape [Cin, M/group, k...] holding that per input channel.
std::optional<Dim> conv_transpose_macs(const Node& n) {
  const DimVector* w = dims_of(n.input(1));
  const DimVector* x = dims_of(n.input(0));
  if (!w || !x || w->size() < 3) return std::nullopt;
  Dim per_input = 1;
  for (size_t i = 1; i < w->size(); ++i) per_input = per_input * (*w)[i];
  return dims_product(*x) * per_input;
}

// Einsum: numel(output) * product of the contracted letters' sizes.
std::optional<Dim> einsum_macs(const Node& n) {
  std::string eq = n.attr_string("equation", "");
  std::string lhs = eq.substr(0, eq.find("->"));
  std::string rhs = eq.find("->") == std::string::npos ? "" : eq.substr(eq.find("->") + 2);
  std::map<char, Dim> size_of;
  size_t input = 0;
  std::string term;
  auto take_term = [&]() -> bool {
    const DimVector* d = dims_of(n.input(input++));
    if (!d) return false;
    std::string letters;
    for (char c : term)
      if (c != ' ' && c != '.') letters += c;
    size_t ellipsis = term.find("...") == std::string::npos ? 0 : d->size() - letters.size();
    size_t axis = 0;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term[i] == '.') {
        if (term.compare(i, 3, "...") == 0) {
          axis += ellipsis;
          i += 2;
        }
        continue;
      }
      if (term[i] == ' ') continue;
      if (axis >= d->size()) return false;
      size_of.emplace(term[i], (*d)[axis++]);
    }
    term.clear();
    return true;
  };
  for (char c : lhs) {
    if (c == ',') {
      if (!take_term()) return std::nullopt;
    } else {
      term += c;
    }
  }
  if (!take_term()) return std::nullopt;
  const DimVector* out = dims_of(n.output(0));
  if (!out) return std::nullopt;
  Dim macs = dims_product(*out);
  for (const auto& [letter, size] : size_of)
    if (rhs.find(letter) == std::string::npos && eq.find("->") != std::string::npos) macs = macs * size;
  return macs;
}

// octet.Attention: Q.K^T and P.V over every head, B*Sq*Sk*(H*Dk + H*Dv); the channel
// widths H*Dk and H*Dv are Q's and V's last dims whatever the layout (seq_first swaps
// only the leading two axes), or the lengths of their channel_ranges. Causal masking
// skips no MACs in the count, as the decomposed graph's MatMuls do not.
std::optional<Dim> attention_macs(const Node& n) {
  const DimVector* q = dims_of(n.input(0));
  const DimVector* k = dims_of(n.input(1));
  const DimVector* v = dims_of(n.input(2));
  if (!q || !k || !v || q->size() != 3 || k->size() != 3 || v->size() != 3) return std::nullopt;
  bool seq_first = n.attr_int("seq_first", 0) != 0;
  Dim batch = seq_first ? (*q)[1] : (*q)[0];
  Dim sq = seq_first ? (*q)[0] : (*q)[1];
  Dim sk = seq_first ? (*k)[0] : (*k)[1];
  Dim qc = (*q)[2], vc = (*v)[2];
  const Attribute* r = n.find_attr("channel_ranges");
  if (r && r->kind == Attribute::Kind::Ints && r->ints.size() == 6) {
    qc = Dim(r->ints[1] - r->ints[0]);
    vc = Dim(r->ints[5] - r->ints[4]);
  }
  return batch * sq * sk * (qc + vc);
}

}  // namespace

namespace {
std::optional<Dim> count_macs(const Node& node) {
  const std::string& op = node.op_type();
  if (node.domain().empty()) {
    if (op == "MatMul" || op == "MatMulInteger" || op == "QLinearMatMul")
      return matmul_like(node, 0, false);
    if (op == "Gemm") return matmul_like(node, 0, node.attr_int("transA", 0) != 0);
    if (op == "Conv" || op == "ConvInteger") return conv_macs(node, 1);
    if (op == "QLinearConv") return conv_macs(node, 3);
    if (op == "ConvTranspose") return conv_transpose_macs(node);
    if (op == "Einsum") return einsum_macs(node);
  }
  // The optimizer's fused Linear layer: a MatMul (the bias add is no MAC).
  // The int8 ones count the same MACs on their A (input 0) and the same Q, K, V.
  if (node.domain() == "octet" && (op == "MatMulBias" || op == "QMatMul")) return matmul_like(node, 0, false);
  if (node.domain() == "octet" && (op == "Attention" || op == "QAttention")) return attention_macs(node);
  if ((node.domain() == "com.microsoft" || node.domain() == "octet") && op == "MatMulNBits") {
    const DimVector* out = dims_of(node.output(0));
    if (!out) return std::nullopt;
    return dims_product(*out) * node.attr_int("K", 0);
  }
  return std::nullopt;
}
}  // namespace

std::optional<Dim> node_macs(const Node& node) {
  // A count past int64 (dims from a hostile file: the arithmetic is checked) is no count:
  // reports show it as unknown rather than failing the command that wanted an estimate.
  try {
    return count_macs(node);
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::optional<int64_t> evaluate_macs(const Dim& macs, const Bindings& bindings) {
  try {
    return macs.evaluate(bindings);
  } catch (const Error&) {
    return std::nullopt;
  }
}

}  // namespace octet
