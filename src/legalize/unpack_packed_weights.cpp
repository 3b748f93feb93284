// GPTQ/AWQ QuantLinear weights that the graph unpacks at run time from int32-packed
// initializers become standard 4-bit weights with scales and zero points.
//
// Recognition does not pattern-match the unpacking ops (exporters write `(q >> s) & 15`
// as BitShift/BitwiseAnd, as Div/Mod with floor fix-ups, or fold parts of it): for each
// MatMul whose weight B is computed from constants only, B is evaluated with the
// reference kernels, and the initializers it was computed from are decoded under the
// known packings until one reproduces B:
//   qweight int32 [K/8, N] (GPTQ: eight 4-bit rows per int32, lowest nibble first) or
//           int32 [K, N/8] (AWQ: eight columns per int32 in the order 0 2 4 6 1 3 5 7);
//   qzeros  int32 [G, N/8], packed like AWQ's qweight or sequentially (GPTQ), holding
//           zero - 1 (GPTQ v1) or the zero itself (GPTQ v2, AWQ);
//   scales  float [G, N]; g_idx integer [K] (absent: row k is in group k / (K/G)).
// Only an exact reproduction (within the float16 rounding of the graph's own arithmetic)
// rewrites anything, so a model with another packing is left as it was.
//
// The rewrite, per target and opset:
//   - opset >= 21 (octet, tensorrt; ort when MatMulNBits cannot take the block size):
//     DequantizeLinear(uint4 [K, N], scales [G, N], zero points [G, N], axis 0,
//     block_size K/G) feeding the MatMul: the standard blocked int4 form;
//   - otherwise (and always for ort): com.microsoft MatMulNBits (bits 4, block_size K/G,
//     a power of two >= 16), which both octet and onnxruntime run;
//   - act-order g_idx (rows of one group scattered): rows are sorted by group, and the
//     activation's last axis is gathered in the same order (x @ W = x[:, p] @ W[p, :]).
// Zero points that do not fit 4 bits (GPTQ v1 stores 15 for a zero of 16) use uint8
// weights (DequantizeLinear) or float zero points (MatMulNBits).
#include <algorithm>
#include <numeric>

#include "legalize/constant_eval.h"
#include "legalize/rewrites.h"
#include "ops/infer.h"

namespace octet::legalize {

namespace {

constexpr int kAwqOrder[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // nibble j holds column kAwqOrder[j]

struct Unpacked {
  int64_t K = 0, N = 0, G = 0;
  std::vector<int32_t> q;      // [K, N], 0..15
  std::vector<int32_t> zeros;  // [G, N]
  std::vector<float> scales;   // [G, N]
  std::vector<int64_t> group;  // [K]
  std::string layout;
};

uint32_t nibble(int32_t word, int j) { return (static_cast<uint32_t>(word) >> (4 * j)) & 15u; }

// Column-packed [R, C/8] -> [R, C] under `order` (nibble j holds column order[j]).
std::vector<int32_t> unpack_cols(const int32_t* p, int64_t rows, int64_t cols, const int* order) {
  std::vector<int32_t> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c8 = 0; c8 < cols / 8; ++c8)
      for (int j = 0; j < 8; ++j) out[r * cols + c8 * 8 + order[j]] = nibble(p[r * (cols / 8) + c8], j);
  return out;
}

bool reproduces(const Unpacked& u, const std::vector<float>& w) {
  for (int64_t k = 0; k < u.K; ++k) {
    const int64_t g = u.group[k];
    for (int64_t n = 0; n < u.N; ++n) {
      const float want = static_cast<float>(u.q[k * u.N + n] - u.zeros[g * u.N + n]) * u.scales[g * u.N + n];
      const float got = w[k * u.N + n];
      if (!(std::abs(got - want) <= 1e-3f * std::abs(want) + 1e-6f)) return false;
    }
  }
  return true;
}

bool is_int_matrix(const Value* v) { return v->constant()->dtype() == DType::Int32 && v->constant()->rank() == 2; }

// Tries every role assignment of `leaves` and every packing; the first exact one wins.
std::optional<Unpacked> decode(const std::vector<Value*>& leaves, const Tensor& w) {
  if (w.rank() != 2 || !dtype_is_float(w.dtype())) return std::nullopt;
  const int64_t K = w.shape()[0], N = w.shape()[1];
  if (K % 8 || N % 8) return std::nullopt;
  const std::vector<float> wf = w.to_float_vector();
  static const int kSequential[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  for (Value* qw : leaves) {
    if (!is_int_matrix(qw)) continue;
    const auto& qs = qw->constant()->shape();
    const bool gptq = qs[0] == K / 8 && qs[1] == N, awq = qs[0] == K && qs[1] == N / 8;
    if (!gptq && !awq) continue;
    Unpacked base;
    base.K = K, base.N = N;
    const int32_t* pq = qw->constant()->data<int32_t>();
    if (gptq) {
      base.q.resize(static_cast<size_t>(K * N));
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) base.q[k * N + n] = nibble(pq[(k / 8) * N + n], static_cast<int>(k % 8));
    } else {
      base.q = unpack_cols(pq, K, N, kAwqOrder);
    }
    for (Value* qz : leaves) {
      if (qz == qw || !is_int_matrix(qz) || qz->constant()->shape()[1] != N / 8) continue;
      const int64_t G = qz->constant()->shape()[0];
      if (G < 1 || G > K) continue;
      for (Value* sc : leaves) {
        const Tensor& s = *sc->constant();
        if (!dtype_is_float(s.dtype()) || s.rank() != 2 || s.shape()[0] != G || s.shape()[1] != N) continue;
        // g_idx: an integer [K] leaf, else contiguous groups.
        std::vector<std::vector<int64_t>> groupings;
        for (Value* gi : leaves)
          if (gi->constant()->rank() == 1 && gi->constant()->numel() == K && dtype_is_integer(gi->constant()->dtype()))
            groupings.push_back(gi->constant()->to_int64_vector());
        if (K % G == 0) {
          std::vector<int64_t> contiguous(static_cast<size_t>(K));
          for (int64_t k = 0; k < K; ++k) contiguous[k] = k / (K / G);
          groupings.push_back(contiguous);
        }
        for (const auto& grouping : groupings) {
          if (std::any_of(grouping.begin(), grouping.end(), [&](int64_t g) { return g < 0 || g >= G; })) continue;
          for (const int* order : {kAwqOrder, kSequential})
            for (int offset : {1, 0}) {
              Unpacked u = base;
              u.G = G;
              u.group = grouping;
              u.scales = s.to_float_vector();
              u.zeros = unpack_cols(qz->constant()->data<int32_t>(), G, N, order);
              for (int32_t& z : u.zeros) z += offset;
              if (!reproduces(u, wf)) continue;
              u.layout = std::string(gptq ? "GPTQ" : "AWQ") + (offset ? " (zeros stored minus 1)" : "") +
                         (order == kAwqOrder ? ", AWQ-ordered zeros" : "");
              return u;
            }
        }
      }
    }
  }
  return std::nullopt;
}

// Sorts rows by group (act-order); returns the permutation, or empty when already sorted
// into contiguous equal groups.
std::vector<int64_t> group_order(Unpacked& u, int64_t* block) {
  std::vector<int64_t> perm(static_cast<size_t>(u.K));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) { return u.group[a] < u.group[b]; });
  const bool identity = std::is_sorted(u.group.begin(), u.group.end());
  if (!identity) {
    std::vector<int32_t> q(u.q.size());
    std::vector<int64_t> g(u.group.size());
    for (int64_t i = 0; i < u.K; ++i) {
      std::copy_n(&u.q[perm[i] * u.N], u.N, &q[i * u.N]);
      g[i] = u.group[perm[i]];
    }
    u.q = std::move(q);
    u.group = std::move(g);
  }
  *block = u.K / u.G;
  for (int64_t k = 0; k < u.K; ++k)
    if (u.K % u.G || u.group[k] != k / *block) *block = 0;  // groups not contiguous and equal
  return identity ? std::vector<int64_t>{} : perm;
}

Tensor float_tensor(const std::vector<float>& v, std::vector<int64_t> shape, DType t) {
  Tensor out(t, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::Float32) out.mutable_data<float>()[i] = v[i];
    else if (t == DType::Float16) reinterpret_cast<uint16_t*>(out.mutable_raw())[i] = float_to_half(v[i]);
    else reinterpret_cast<uint16_t*>(out.mutable_raw())[i] = float_to_bfloat16(v[i]);
  }
  return out;
}

Tensor small_int_tensor(const std::vector<int32_t>& v, std::vector<int64_t> shape, bool four_bit) {
  Tensor out(four_bit ? DType::UInt4 : DType::UInt8, std::move(shape));
  for (size_t i = 0; i < v.size(); ++i) {
    if (four_bit) set_packed(out.mutable_raw(), static_cast<int64_t>(i), 4, static_cast<uint8_t>(v[i]));
    else out.mutable_raw()[i] = static_cast<uint8_t>(v[i]);
  }
  return out;
}

class Unpacker {
 public:
  Unpacker(Graph& g, const LegalizeOptions& o, RewriteLog& log) : graph_(g), options_(o), log_(log) {}

  void run() {
    for (Node* mm : graph_.nodes())
      if (mm->domain().empty() && mm->op_type() == "MatMul" && mm->input(1) && !mm->input(1)->constant())
        try_matmul(*mm);  // the unpacking nodes left unread go with legalize's dead-code step
  }

 private:
  bool try_matmul(Node& mm) {
    auto expr = evaluate_constant(mm.input(1));
    if (!expr) return false;
    auto u = decode(expr->leaves, *expr->value);
    if (!u) return false;
    int64_t block = 0;
    const std::vector<int64_t> perm = group_order(*u, &block);
    if (!block) return false;
    const DType wtype = expr->value->dtype();
    const bool four_bit_zeros = std::all_of(u->zeros.begin(), u->zeros.end(), [](int32_t z) { return z >= 0 && z <= 15; });
    const bool nbits_ok = block >= 16 && (block & (block - 1)) == 0;
    const bool dq_ok = graph_.opset_version("") >= 21;
    const bool use_nbits = nbits_ok && (options_.target == Target::Ort || !dq_ok);
    if (!use_nbits && !dq_ok) {
      log_.details.push_back(mm.describe() + ": " + u->layout + " weights recognized but left packed: block size " +
                             std::to_string(block) + " needs blocked DequantizeLinear (opset 21; the model imports " +
                             std::to_string(graph_.opset_version("")) + ")");
      return false;
    }
    if (use_nbits && options_.target == Target::TensorRT) {
      log_.details.push_back(mm.describe() + ": " + u->layout + " weights recognized but left packed: TensorRT has "
                             "no MatMulNBits and blocked DequantizeLinear needs opset 21");
      return false;
    }
    if (use_nbits) graph_.opset_imports.emplace("com.microsoft", 1);

    const std::string where = mm.describe();  // the patch may remove mm
    GraphPatch patch = make_patch(graph_);
    Value* a = mm.input(0);
    if (!perm.empty()) {
      Value* idx = patch.add_initializer(mm.name() + "_act_order", Tensor::from_vector<int64_t>({u->K}, perm));
      a = patch.add_node("Gather", {a, idx}, 1, {Attribute::make_int("axis", -1)}, "", mm.name() + "_act_order")->output(0);
    }
    std::string form;
    if (use_nbits) {
      form = rewrite_nbits(patch, mm, a, *u, block, four_bit_zeros);
    } else {
      Value* q = patch.add_initializer(mm.name() + "_qweight", small_int_tensor(u->q, {u->K, u->N}, four_bit_zeros));
      Value* s = patch.add_initializer(mm.name() + "_scales", float_tensor(u->scales, {u->G, u->N}, wtype));
      Value* z = patch.add_initializer(mm.name() + "_zero_points", small_int_tensor(u->zeros, {u->G, u->N}, four_bit_zeros));
      Node* dq = patch.add_node("DequantizeLinear", {q, s, z}, 1,
                                {Attribute::make_int("axis", 0), Attribute::make_int("block_size", block)}, "",
                                mm.name() + "_weight");
      patch.set_input(&mm, 0, a);
      patch.set_input(&mm, 1, dq->output(0));
      form = std::string("blocked DequantizeLinear (") + (four_bit_zeros ? "uint4" : "uint8") + ")";
    }
    patch.apply();
    log_.note(where + ": " + u->layout + " weights [" + std::to_string(u->K) + "x" + std::to_string(u->N) +
              "], " + std::to_string(u->G) + " groups of " + std::to_string(block) + (perm.empty() ? "" : ", act-order") +
              " -> " + form);
    return true;
  }

  std::string rewrite_nbits(GraphPatch& patch, Node& mm, Value* a, const Unpacked& u, int64_t block, bool packed_zeros) {
    const DType atype = a->type.dtype;
    const int64_t kb = u.G, blob = block / 2, zrow = (kb + 1) / 2;
    Tensor b(DType::UInt8, {u.N, kb, blob});
    std::vector<float> scales(static_cast<size_t>(u.N * kb));
    std::vector<float> zf(static_cast<size_t>(u.N * kb));
    Tensor zp(DType::UInt8, {u.N * zrow});
    for (int64_t n = 0; n < u.N; ++n) {
      for (int64_t k = 0; k < u.K; ++k) {
        const int64_t blk = k / block, j = k % block;
        uint8_t& byte = b.mutable_raw()[(n * kb + blk) * blob + j / 2];
        byte = static_cast<uint8_t>(byte | (u.q[k * u.N + n] << (4 * (j % 2))));
      }
      for (int64_t g = 0; g < kb; ++g) {
        scales[n * kb + g] = u.scales[g * u.N + n];
        zf[n * kb + g] = static_cast<float>(u.zeros[g * u.N + n]);
        if (packed_zeros) {
          uint8_t& byte = zp.mutable_raw()[n * zrow + g / 2];
          byte = static_cast<uint8_t>(byte | (u.zeros[g * u.N + n] << (4 * (g % 2))));
        }
      }
    }
    Value* vb = patch.add_initializer(mm.name() + "_qweight", std::move(b));
    Value* vs = patch.add_initializer(mm.name() + "_scales", float_tensor(scales, {u.N * kb}, atype));
    Value* vz = patch.add_initializer(mm.name() + "_zero_points",
                                      packed_zeros ? std::move(zp) : float_tensor(zf, {u.N * kb}, atype));
    Node* nb = patch.add_node("MatMulNBits", {a, vb, vs, vz}, 1,
                              {Attribute::make_int("K", u.K), Attribute::make_int("N", u.N), Attribute::make_int("bits", 4),
                               Attribute::make_int("block_size", block)},
                              "com.microsoft", mm.name() + "_nbits");
    patch.replace_uses(mm.output(0), nb->output(0));
    patch.remove_node(&mm);
    return "com.microsoft.MatMulNBits";
  }

  Graph& graph_;
  const LegalizeOptions& options_;
  RewriteLog& log_;
};

}  // namespace

void unpack_packed_weights(Graph& graph, const LegalizeOptions& options, RewriteLog& log) {
  Unpacker(graph, options, log).run();
}

}  // namespace octet::legalize
