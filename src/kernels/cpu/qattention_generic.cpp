// The portable instantiation of the octet.QAttention task (qattention_impl.h): the same
// tiles over plain arrays, the pairwise int16 products as VPMADDWD defines them.
#include "kernels/cpu/qattention_impl.h"

namespace octet::cpu::qattn {
namespace {

struct GenericInt {
  static constexpr int64_t kLanes = 16;
  static constexpr int64_t kRows = 4;
  struct P {
    int16_t v[2 * kLanes];
  };
  struct I {
    int32_t v[kLanes];
  };

  static void transpose_pairs(const int16_t* src, int64_t pairs, int64_t rows, int16_t* dst) {
    for (int64_t c = 0; c < pairs; ++c)
      for (int64_t r = 0; r < rows; ++r) {
        dst[2 * (c * rows + r)] = src[2 * (r * pairs + c)];
        dst[2 * (c * rows + r) + 1] = src[2 * (r * pairs + c) + 1];
      }
  }
  static void interleave(const int16_t* a, const int16_t* b, int64_t n, int16_t* out) {
    for (int64_t d = 0; d < n; ++d) out[2 * d] = a[d], out[2 * d + 1] = b[d];
  }

  static I zero() { return I{}; }
  static P load(const int16_t* p) {
    P r;
    for (int64_t l = 0; l < 2 * kLanes; ++l) r.v[l] = p[l];
    return r;
  }
  static P bcast(const int16_t* p) {
    P r;
    for (int64_t l = 0; l < kLanes; ++l) r.v[2 * l] = p[0], r.v[2 * l + 1] = p[1];
    return r;
  }
  static I madd_add(I acc, const P& a, const P& b) {
    for (int64_t l = 0; l < kLanes; ++l)
      acc.v[l] += int32_t{a.v[2 * l]} * b.v[2 * l] + int32_t{a.v[2 * l + 1]} * b.v[2 * l + 1];
    return acc;
  }
  static void store(float* y, const I& acc, float m) {
    for (int64_t l = 0; l < kLanes; ++l) y[l] = m * static_cast<float>(acc.v[l]);
  }
  static void store2(float* y, const I& acc, float m1, float m2) {
    for (int64_t l = 0; l < kLanes; ++l) y[l] = m2 * (m1 * static_cast<float>(acc.v[l]));
  }
  static int64_t quantize(const float*, int64_t, float, const Quant&, int16_t*) { return 0; }  // all by quantize_one
};

}  // namespace

void task_generic(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w) {
  Kernel<GenericInt>::task(p, b, h, i0, i1, w);
}

}  // namespace octet::cpu::qattn
