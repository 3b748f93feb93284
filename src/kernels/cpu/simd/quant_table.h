// The table of int8 row kernels one ISA level provides: quantize / dequantize with ONNX
// rounding, the range scans of dynamic quantization, and the epilogues of the integer
// matmuls. Kept free of heavy headers for the same reason as vec_table.h: the per-ISA
// translation units include it.
//
// Rounding contract (every level computes bit-identical integers): x / scale is a float32
// division (not a multiply by the reciprocal), rounded half to even by the CPU's default
// rounding mode (cvtps2dq / nearbyint), then the zero point is added and the result
// saturated; NaN quantizes to the zero point. This is ref_quant.cpp's QuantizeLinear.
#pragma once

#include <cstdint>

namespace octet::cpu {

// One output row of an int8 product's per-row epilogue (QMatMul's raw-sums path): what
// scale_row computes, then the activation, the output_scale product and the residual add.
struct EpilogueRow {
  const int32_t* acc;
  const int32_t* colsum;
  int32_t za;
  float row_scale;
  const float* col_scale;
  const float* bias = nullptr;       // may be null
  int activation = 0;                // 0 none, 1 GeLU (vec_ops' GeluErfFast), 2 GeLU-tanh
  const float* out_scale = nullptr;  // per column; may be null
  const float* residual = nullptr;   // this row of it; may be null
};

struct QuantTable {
  const char* name = nullptr;  // "generic", "avx2", "avx512"

  // y[i] = clamp(round(x[i] / scale) + zp, lo, hi), stored as the low byte (so [-128, 127]
  // gives int8 and [0, 255] uint8); NaN gives clamp(zp). lo <= zp <= hi is not required.
  void (*quantize)(const float* x, int64_t n, float scale, int32_t zp, int32_t lo, int32_t hi, uint8_t* y) = nullptr;
  // *mn = min(0, min x), *mx = max(0, max x); NaN elements are skipped.
  void (*min_max)(const float* x, int64_t n, float* mn, float* mx) = nullptr;
  // max(0, max |x|); NaN elements are skipped.
  float (*abs_max)(const float* x, int64_t n) = nullptr;
  // y[i] = float(x[i] - zp) * scale, x uint8 or (is_signed) int8.
  void (*dequantize)(const uint8_t* x, int64_t n, bool is_signed, int32_t zp, float scale, float* y) = nullptr;
  // y[i] = clamp(nearbyint(double(acc[i]) * mult[i]) + zp[i], lo, hi) as bytes: QLinearMatMul's
  // requantization, in double as the reference does. mult must be finite.
  void (*requantize)(const int32_t* acc, int64_t n, const double* mult, const double* zp, int32_t lo, int32_t hi,
                     uint8_t* y) = nullptr;
  // y[i] = (row_scale * col_scale[i]) * float(acc[i] - za * colsum[i]) + bias[i] (bias may be
  // null): an int8 product's raw sums turned into the float output. The subtraction wraps
  // like int32 arithmetic (callers keep the exact result within int32).
  void (*scale_row)(const int32_t* acc, const int32_t* colsum, int32_t za, float row_scale, const float* col_scale,
                    const float* bias, float* y, int64_t n) = nullptr;
  // y = the epilogue of e in one pass (the row's vectors stay in registers from the sums to
  // the store): scale_row, then vec_ops' GeLU (UnaryOp::GeluErfFast, or GeluTanh), * out_scale
  // (BinaryOp::Mul), + residual (BinaryOp::Add) -- per element the same float operations in
  // the same order as running those row kernels in turn at this level, so bit-identical to
  // them. With mn / mx non-null also min_max(y) (one pass fewer for a per-row quantized Y).
  void (*epilogue_row)(const EpilogueRow& e, float* y, int64_t n, float* mn, float* mx) = nullptr;
};

void fill_quant_table_generic(QuantTable& t);
void fill_quant_table_avx2(QuantTable& t);
void fill_quant_table_avx512(QuantTable& t);

}  // namespace octet::cpu
