// int8 row helpers with runtime ISA dispatch (simd/quant_table.h): ONNX-exact quantize and
// dequantize, the range scans of dynamic quantization, and the epilogues of the integer
// matmuls. Shared by the QuantizeLinear/DequantizeLinear/DynamicQuantizeLinear kernels
// (cpu_quantize.cpp) and the int8 GEMM kernels (dnnl_qmatmul*.cpp, dnnl_qgemm_onnx.cpp).
//
// quant_ops() looks up the table of the level active_isa() reports now, so ScopedIsaLevel
// switches these helpers in tests, as it does vec_ops().
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/cpu/simd/quant_table.h"
#include "kernels/dispatch/cpu_features.h"

namespace octet {
class KernelRegistry;
}

namespace octet::cpu {

// Registers QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear (cpu_quantize.cpp).
void register_cpu_quantize(KernelRegistry& r);
// Registers octet.LayerNormQuantize (cpu_norm_quantize.cpp).
void register_cpu_norm_quantize(KernelRegistry& r);

// Runs that an int8 kernel (these, octet.QMatMul, MatMulInteger, QLinearMatMul) handed to
// the reference kernel at run time, process-wide: tests check that a path ran optimized.
int64_t int8_reference_runs();
void count_int8_reference_run();

const QuantTable& quant_table(IsaLevel level);
inline const QuantTable& quant_ops() { return quant_table(active_isa()); }

// The parameters of one row of a dynamic QMatMul (docs/quantization.md §2), from its range
// as QuantTable::min_max / abs_max report it. uint8: DynamicQuantizeLinear's rule; a
// zero range uses scale 1, zero point 0. int8: symmetric, zero point 0.
struct RowParams {
  float scale;
  int32_t zero_point;
};
inline RowParams dynamic_uint8_params(float mn, float mx) {
  float s = (mx - mn) / 255.0f;
  if (s == 0) s = 1;
  const float q = -mn / s;
  const int32_t zp = std::isnan(q) ? 0 : static_cast<int32_t>(std::clamp(std::nearbyint(q), 0.0f, 255.0f));
  return {s, zp};
}
inline RowParams dynamic_int8_params(float amax) {
  const float s = amax / 127.0f;
  return {s == 0 ? 1.0f : s, 0};
}

// One row's run-time parameters in the int8 product's uint8 domain, as the per-token
// QMatMul and LayerNormQuantize's per-row mode both compute them (their outputs must agree
// bit for bit): uint8 asymmetric over the row's range, or int8 symmetric shifted by 128.
inline RowParams dynamic_row_params(const QuantTable& q, const float* x, int64_t n, bool int8) {
  if (int8) {
    RowParams p = dynamic_int8_params(q.abs_max(x, n));
    p.zero_point = 128;
    return p;
  }
  float mn = 0, mx = 0;
  q.min_max(x, n, &mn, &mx);
  return dynamic_uint8_params(mn, mx);
}

// One row quantized with its own run-time parameters (dynamic_row_params) into the
// product's uint8 domain; returns them. Every writer of the per-row form (a dynamic
// QMatMul quantizing its A, LayerNormQuantize's per-row mode, a QMatMul's per-row Y) calls
// this, so they agree bit for bit.
inline RowParams quantize_row_dynamic(const QuantTable& q, const float* x, int64_t n, bool int8, uint8_t* out) {
  const RowParams p = dynamic_row_params(q, x, n, int8);
  q.quantize(x, n, p.scale, p.zero_point, 0, 255, out);
  return p;
}

// quantize_row_dynamic's uint8 form for a row whose range [mn, mx] a writer already took on
// the way (as QuantTable::min_max reports it): the same parameters and pass.
inline RowParams quantize_row_in_range(const QuantTable& q, const float* x, int64_t n, float mn, float mx,
                                       uint8_t* out) {
  const RowParams p = dynamic_uint8_params(mn, mx);
  q.quantize(x, n, p.scale, p.zero_point, 0, 255, out);
  return p;
}

}  // namespace octet::cpu
