// The int8 product every int8 kernel shares (octet.QMatMul, MatMulInteger, QLinearMatMul):
// oneDNN's u8 x s8 matmul over a row-major A [M, K] and a B [K, N], with B's column sums
// for zero-point corrections.
//
// One source type: oneDNN only ever sees uint8 activations. An int8 operand is shifted
// by +128 into uint8 and its zero point with it ((q + 128) - (z + 128) = q - z), which
// kernels fold into the pass that quantizes or copies A anyway. B is int8 (a uint8 B is
// shifted by -128 the same way). So a node has one packed layout of B, with no s8-source
// compensation in it, for every M.
//
// Exactness: oneDNN 2.6 without VNNI (AVX2, AVX-512 before Cascade Lake, and OCTET_ISA
// caps below avx512) multiplies u8 x s8 with vpmaddubsw, whose int16 pair sums saturate:
// 255 * 127 * 2 > 32767, and real data hits it (measured: most outputs of a random
// [128, 64] x [64, 16] product differ). int8_gemm_exact() runs such a product once per
// process; where it saturates, A is split into its high 7 bits and its low bit,
// a = 2 (a >> 1) + (a & 1), both in [0, 127] where no pair can saturate, and the two
// halves run as one product of 2M rows (twice the work, still exact).
//
// Exact sums need |sum_k (a - za)(b - zb)| < 2^31; kMaxK keeps every caller inside it
// (255 * 255 * kMaxK < 2^31); longer products go to the reference kernels.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/dnnl_common.h"
#include "kernels/cpu/thread_scratch.h"
#include "kernels/kernel.h"

namespace octet::dnnl_cpu {

constexpr int64_t kMaxInt8K = 33000;

// True when oneDNN's u8 x s8 product is exact at the engine's ISA (VNNI or AMX).
bool int8_gemm_exact();

// Per-run temporaries (the quantized A, int32 sums) live in this thread's scratch slots.
using cpu::Scratch;
using cpu::thread_scratch_as;

// Column sums of a row-major int8 [K, N].
void column_sums(const int8_t* b, int64_t k, int64_t n, int32_t* out);

class Int8Gemm {
 public:
  // B [K, N] int8, row-major; `b` may be null for a B that arrives with each run (then
  // nothing is kept and runs pass it to raw_sums()/execute()). A constant B is packed into
  // oneDNN's layout when that differs from the plain one, else copied: the state never
  // reads the graph's B again. Throws dnnl::error on oneDNN failures.
  Int8Gemm(const int8_t* b, int64_t k, int64_t n);

  int64_t k() const { return k_; }
  int64_t n() const { return n_; }
  bool prepacked() const { return static_cast<bool>(packed_); }
  // Column sums of the constant B (empty for a run-time B).
  const std::vector<int32_t>& colsum() const { return colsum_; }
  // A constant B as plain int8 [K, N]: unpacked from the packed copy, or the plain one.
  Tensor unpack() const;

  // One created primitive: the product for one M with given attributes.
  using Entry = MatMulPrimitive;
  // A primitive for A [m, K] u8 -> dst [m, N] of `dst_type`, with `attr` and an optional
  // float32 bias [1, N]: on the packed B first, else on a plain B.
  // (The attribute's scratchpad mode is set to user: run_primitive brings the scratchpad.)
  std::shared_ptr<const Entry> create(int64_t m, dnnl::memory::data_type dst_type, dnnl::primitive_attr attr,
                                      bool with_bias) const;
  // Runs `entry` on A [m, K] with `args` (dst, bias, post-op operands) completed by the
  // source and weights. `plain_b` is B for a primitive on plain weights (the run-time B, or
  // null to unpack the packed one).
  void execute(const KernelContext& ctx, const Entry& entry, const uint8_t* a, int64_t m, const int8_t* plain_b,
               std::unordered_map<int, dnnl::memory>& args) const;

  // sums[m, n] = sum_k a[m, k] * B[k, n] exactly (modulo 2^32) for a u8 A [m, K]; splits A
  // where the ISA would saturate (see above). False when oneDNN has no usable primitive for
  // this m (the caller runs the reference kernel). Cached per (m, threads).
  bool raw_sums(const KernelContext& ctx, const uint8_t* a, int64_t m, const int8_t* plain_b, int32_t* sums) const;

  // The same sums on the calling thread alone, for a caller that runs its own parallel
  // region (QMatMul's row blocks): serial_sums() may run inside it, prepare_serial() for
  // each m it will use must run before it, outside (a primitive is made for the thread
  // count current at its creation; this one for one thread). prepare_serial() is false
  // when oneDNN has no usable primitive for m. serial_sums() throws dnnl::error.
  bool prepare_serial(int64_t m) const;
  void serial_sums(const uint8_t* a, int64_t m, int32_t* sums) const;

  // The oneDNN implementations cached so far, and how many (tests, reports).
  std::vector<std::string> implementations() const;
  int64_t primitives_created() const { return cache_.created(); }

 private:
  int64_t k_, n_;
  std::vector<int32_t> colsum_;
  std::optional<dnnl::memory> packed_;  // B in oneDNN's layout, for a constant B it prefers blocked
  Tensor plain_;                        // else a constant B as given (the graph's copy may be released)
  // The raw-sums primitive for `rows` (2m when split) at `threads`.
  std::shared_ptr<const Entry> sums_entry(int64_t rows, int threads) const;
  // Runs it on A [m, K] into sums (the split and its recombination included).
  void run_sums(const Entry& entry, const uint8_t* a, int64_t m, const int8_t* plain_b, int32_t* sums) const;
  void execute_or_throw(const Entry& entry, const uint8_t* a, int64_t m, const int8_t* plain_b,
                        std::unordered_map<int, dnnl::memory>& args) const;

  PrimitiveCache<Entry> cache_;  // raw_sums' primitives, by (rows, threads)
};

}  // namespace octet::dnnl_cpu
