// Reference Einsum: any number of operands, explicit ("ij,jk->ik") and implicit ("ij,jk")
// output, '...' ellipsis, repeated letters within an operand (diagonals), spaces.
//
// Semantics follow numpy.einsum (the ONNX reference):
// - letters are case-sensitive labels; the implicit output is the ellipsis dims followed
//   by the letters that occur exactly once in the equation, in ASCII order;
// - every '...' stands for the same broadcast dims, right-aligned across operands;
// - a label's size must agree across occurrences, except that size 1 broadcasts (numpy
//   and onnxruntime accept that too);
// - the output may repeat no label and may use only labels of the inputs; an explicit
//   output without '...' is an error when the ellipsis covers dims (as in numpy).
// Evaluation is the definition: for every output element, sum over all values of the
// contracted labels of the product of the operands. A label repeated in one operand
// gets the sum of its dims' strides, which walks the diagonal.
#include <algorithm>
#include <map>
#include <string>

#include "kernels/kernel.h"
#include "kernels/ref/ref_linalg_common.h"

namespace octet {
namespace ref_linalg {
namespace {

constexpr int kEllipsis = -1;  // marks '...' inside a parsed term

// Letters as their char code; kEllipsis for "...".
std::vector<int> parse_term(const KernelContext& ctx, const std::string& term, const std::string& eq) {
  std::vector<int> labels;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    const char c = term[i];
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      labels.push_back(c);
    } else if (c == '.' && term.compare(i, 3, "...") == 0 && !ellipsis) {
      labels.push_back(kEllipsis);
      ellipsis = true;
      i += 2;
    } else {
      ctx.fail("equation '", eq, "': bad term '", term, "'");
    }
  }
  return labels;
}

struct Plan {
  std::vector<int64_t> size;                      // per label id
  std::vector<std::vector<int64_t>> stride;       // [operand][label id]
  std::vector<int> out_labels, sum_labels;
};

Plan plan(const KernelContext& ctx, const std::string& equation, const std::vector<const Tensor*>& ops) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(ctx, lhs.substr(start, comma - start), equation));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ops.size())
    ctx.fail("equation '", equation, "' has ", terms.size(), " operand terms but the node has ", ops.size(), " inputs");

  // Width of the ellipsis: the most dims any operand's '...' covers.
  int64_t ellipsis_dims = 0;
  std::vector<int64_t> covered(ops.size(), 0);
  bool any_ellipsis = false;
  for (size_t i = 0; i < ops.size(); ++i) {
    const bool has = std::count(terms[i].begin(), terms[i].end(), kEllipsis) > 0;
    const int64_t letters = static_cast<int64_t>(terms[i].size()) - (has ? 1 : 0);
    covered[i] = ops[i]->rank() - letters;
    if (has ? covered[i] < 0 : covered[i] != 0)
      ctx.fail("equation '", equation, "': term ", i, " does not fit input ", ops[i]->describe());
    any_ellipsis |= has;
    ellipsis_dims = std::max(ellipsis_dims, covered[i]);
  }
  // Label ids: 0..127 letters (char code), 128+j the j-th ellipsis dim.
  const int labels = 128 + static_cast<int>(ellipsis_dims);
  Plan p;
  p.size.assign(labels, -1);
  p.stride.assign(ops.size(), std::vector<int64_t>(labels, 0));
  std::vector<int> count(labels, 0);
  std::vector<std::vector<int>> dim_labels(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    for (int l : terms[i]) {
      if (l != kEllipsis) {
        dim_labels[i].push_back(l);
        continue;
      }
      for (int64_t j = 0; j < covered[i]; ++j)
        dim_labels[i].push_back(128 + static_cast<int>(ellipsis_dims - covered[i] + j));
    }
    for (size_t d = 0; d < dim_labels[i].size(); ++d) {
      const int l = dim_labels[i][d];
      const int64_t n = ops[i]->shape()[d];
      ++count[l];
      if (p.size[l] < 0 || p.size[l] == 1) {
        p.size[l] = n;  // first sight, or a broadcast 1 that n replaces
      } else if (n != p.size[l] && n != 1) {
        ctx.fail("equation '", equation, "': dim ", d, " of input ", i, " ", ops[i]->describe(),
                 " has size ", n, " but its label already has size ", p.size[l]);
      }
    }
  }
  // Strides, now that every label's (broadcast) size is known.
  for (size_t i = 0; i < ops.size(); ++i) {
    int64_t stride = 1;
    for (size_t d = dim_labels[i].size(); d-- > 0;) {
      const int l = dim_labels[i][d];
      const int64_t n = ops[i]->shape()[d];
      if (!(n == 1 && p.size[l] != 1)) p.stride[i][l] += stride;
      stride *= n;
    }
  }

  if (arrow != std::string::npos) {
    std::vector<int> rhs = parse_term(ctx, eq.substr(arrow + 2), equation);
    bool rhs_ellipsis = false;
    for (int l : rhs) {
      if (l == kEllipsis) {
        rhs_ellipsis = true;
        for (int64_t j = 0; j < ellipsis_dims; ++j) p.out_labels.push_back(128 + static_cast<int>(j));
        continue;
      }
      if (count[l] == 0) ctx.fail("equation '", equation, "': output label '", char(l), "' is in no input");
      if (std::count(rhs.begin(), rhs.end(), l) > 1)
        ctx.fail("equation '", equation, "': output label '", char(l), "' is repeated");
      p.out_labels.push_back(l);
    }
    if (!rhs_ellipsis && ellipsis_dims > 0)
      ctx.fail("equation '", equation, "': the output has no '...' but the ellipsis covers ",
               ellipsis_dims, " dims");
  } else {
    if (any_ellipsis)
      for (int64_t j = 0; j < ellipsis_dims; ++j) p.out_labels.push_back(128 + static_cast<int>(j));
    for (int l = 0; l < 128; ++l)
      if (count[l] == 1) p.out_labels.push_back(l);
  }
  for (int l = 0; l < labels; ++l)
    if (count[l] > 0 && std::find(p.out_labels.begin(), p.out_labels.end(), l) == p.out_labels.end())
      p.sum_labels.push_back(l);
  return p;
}

void einsum_kernel(KernelContext& ctx) {
  if (ctx.num_inputs() == 0) ctx.fail("needs at least one input");
  std::vector<const Tensor*> ops;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    ops.push_back(&ctx.input(i));
    if (ops.back()->dtype() != ops[0]->dtype())
      ctx.fail("input ", i, " ", ops.back()->describe(), " differs in type from input 0 ", ops[0]->describe());
  }
  const std::string equation = ctx.node().attr_string("equation", "");
  if (!ctx.node().has_attr("equation")) ctx.fail("attribute 'equation' is required");
  const Plan p = plan(ctx, equation, ops);
  const size_t nops = ops.size();
  const size_t out_rank = p.out_labels.size(), sum_rank = p.sum_labels.size();

  std::vector<int64_t> out_shape, sum_shape;
  std::vector<std::vector<int64_t>> out_stride(nops), sum_stride(nops);
  for (int l : p.out_labels) out_shape.push_back(p.size[l]);
  for (int l : p.sum_labels) sum_shape.push_back(p.size[l]);
  for (size_t i = 0; i < nops; ++i) {
    for (int l : p.out_labels) out_stride[i].push_back(p.stride[i][l]);
    for (int l : p.sum_labels) sum_stride[i].push_back(p.stride[i][l]);
  }
  Tensor& out = ctx.allocate_output(0, ops[0]->dtype(), out_shape);
  const int64_t out_total = out.numel(), sum_total = shape_numel(sum_shape);

  dispatch(ctx, ops[0]->dtype(), [&](auto tag) {
    using Acc = decltype(tag);
    std::vector<std::vector<Acc>> data;
    for (const Tensor* t : ops) data.push_back(load<Acc>(*t));
    std::vector<Acc> y(static_cast<size_t>(out_total), Acc{0});
    // The innermost contracted label is a strided run; odometers walk the rest.
    const int64_t inner = sum_rank ? sum_shape.back() : 1;
    std::vector<int64_t> inner_stride(nops, 0);
    for (size_t i = 0; i < nops && sum_rank; ++i) inner_stride[i] = sum_stride[i].back();
    std::vector<int64_t> out_pos(out_rank, 0), base(nops, 0), sum_pos(sum_rank, 0), off(nops, 0);
    auto advance = [&](std::vector<int64_t>& pos, const std::vector<int64_t>& shape,
                       const std::vector<std::vector<int64_t>>& strides, std::vector<int64_t>& offset,
                       int64_t from) {
      for (int64_t d = from; d >= 0; --d) {
        for (size_t i = 0; i < nops; ++i) offset[i] += strides[i][d];
        if (++pos[d] < shape[d]) return;
        for (size_t i = 0; i < nops; ++i) offset[i] -= strides[i][d] * shape[d];
        pos[d] = 0;
      }
    };
    for (int64_t o = 0; o < out_total; ++o) {
      Acc sum{0};
      off = base;
      std::fill(sum_pos.begin(), sum_pos.end(), 0);
      for (int64_t row = 0; sum_total > 0 && row < sum_total / inner; ++row) {
        if (nops == 2) {
          const Acc* a = data[0].data() + off[0];
          const Acc* b = data[1].data() + off[1];
          for (int64_t t = 0; t < inner; ++t) sum += a[t * inner_stride[0]] * b[t * inner_stride[1]];
        } else {
          for (int64_t t = 0; t < inner; ++t) {
            Acc prod{1};
            for (size_t i = 0; i < nops; ++i) prod *= data[i][off[i] + t * inner_stride[i]];
            sum += prod;
          }
        }
        advance(sum_pos, sum_shape, sum_stride, off, static_cast<int64_t>(sum_rank) - 2);
      }
      y[o] = sum;
      advance(out_pos, out_shape, out_stride, base, static_cast<int64_t>(out_rank) - 1);
    }
    store(out, y);
  });
}

}  // namespace

void register_einsum(KernelRegistry& r) { r.add("", "Einsum", einsum_kernel); }

}  // namespace ref_linalg
}  // namespace octet
