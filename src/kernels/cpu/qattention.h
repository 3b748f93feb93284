// The interface between the optimized octet.QAttention driver (qattention.cpp: checks,
// threads, scratch) and its per-ISA task bodies (qattention_impl.h, compiled once per
// level in qattention_{generic,avx2,avx512}.cpp).
//
// Plain data only: the per-ISA translation units are compiled with wider instruction sets,
// and an inline std:: function instantiated there could be the copy the linker keeps for
// every caller (see simd/vec_table.h), so they include nothing heavier than this.
#pragma once

#include <cstdint>

#include "kernels/cpu/simd/vec_table.h"

namespace octet::cpu::qattn {

// Register tiles are 16 int32 lanes wide (one zmm, two ymm); packed K^T rows and packed V
// rows are padded to a multiple of this, whatever the level, so the driver sizes the scratch.
constexpr int64_t kCols = 16;
// Query rows per task (a multiple of every level's tile height), and the tallest tile.
constexpr int64_t kBlockRows = 64;
constexpr int64_t kMaxTileRows = 8;
// Query rows per AMX tile (the most a tile holds): the AMX P.V's P rows at a time.
constexpr int64_t kAmxRows = 16;

// A centered quantization (ref_attention.h's QuantParam as floats): round(x / scale) is
// saturated to [lo, hi] = [type min - zp, type max - zp] and stored as int16.
//
// inv = 1 / scale lets the vector code multiply instead of divide (a division costs the
// port the madds need) without changing a result: t = x * inv is within 3 ulps of x / scale
// (two roundings of inv and of the product, against one of the quotient), so both round
// to the same integer unless t lies within |t| * 2^-20 of a half-integer; a vector with
// such a lane is divided instead. 0 when scale or inv is not a normal float (the bound
// needs both): then every element is divided.
struct Quant {
  float scale, lo, hi, inv;
};

// Everything a task reads; the shapes and strides are AttentionShape's.
struct Args {
  int64_t heads, q_len, kv_len, head_k, head_v;
  int64_t q_b, q_s, k_b, k_s, v_b, v_s, y_b, y_s;
  int64_t m_b, m_h, m_q, m_k;  // mask strides along [B, H, Sq, Sk]; mask null when none
  bool causal;
  bool row_probabilities;  // pq quantizes exp(s - max); outputs are divided by the row sums
  const float *q, *k, *v, *mask;
  float* y;
  Quant qq, kq, vq, pq;
  float scale;      // the scale attribute
  float qk_scale;   // q_scale * k_scale: s = scale * (qk_scale * acc)
  float out_scale;  // p_scale * v_scale:  y = out_scale * acc
  float lowest;     // the causal fill
  const VecTable* vec;  // softmax and the mask add of the active level

  // Padded sizes (fields, not member functions: an inline function defined here would be
  // compiled in every ISA's unit): Dk to pairs (madd takes two int16 at a time) and to
  // quads (the VNNI task's byte products take four), Sk to tiles (dk2 rows of K^T) and to
  // pairs (P rows, V pair rows), Dv to tiles.
  // dk64, skq: dk4 and sk4 to 64 (the VNNI task's K and P byte rows).
  int64_t dk2, dk4, dk64, skp, sk2, sk4, skq, dvp;
};

// One thread's buffers (int16 values are centered: q - zero_point).
struct Scratch {
  int16_t* kt;   // K^T in pairs of channels: [dk2 / 2][skp][2]
  int16_t* vp;   // V in pairs of keys:       [sk2 / 2][dvp][2]
  int16_t* kq;   // K quantized row by row, before the transpose: [skp][dk2]
  int16_t* row;  // two quantized V rows, before they are interleaved: [2][dvp]
  int16_t* qc;   // a tile's quantized Q rows: [kMaxTileRows][dk2]
  float* s;      // a tile's scores / probabilities: [kMaxTileRows][skp]
  int16_t* pc;   // a tile's quantized P rows: [kMaxTileRows][sk2] (the VNNI task's: [..][skq])
  // The VNNI task's products in bytes (qattention_vnni_avx512.cpp): K as signed bytes in
  // quads of channels, kt8[d / 4][skp][d % 4], from rows k8[skp][dk64]; each key's
  // constant term kcol[skp]; a tile's Q rows as unsigned bytes q8[kMaxTileRows][dk4];
  // V as signed bytes in quads of keys, vt8[sk4 / 4][dvp][j % 4], from four rows
  // v8[4][dvp]; per 32 keys, the groups of four with a P >= 256, chunks[skq / 32], and
  // their list, hi[skq / 4] (written 16 entries at a time). vt8 holds skq / 4 quads of
  // keys, zeros past sk4 (the AMX P.V reads whole 64-key blocks).
  int8_t* kt8;
  int8_t* k8;
  int32_t* kcol;
  uint8_t* q8;
  int8_t* vt8;
  int8_t* v8;
  uint8_t* chunks;
  uint16_t* hi;
  // The AMX P.V's (qattention_amx_vnni_avx512.cpp), two of each (tiles in flight): P's
  // low and high bytes, pl[2][kAmxRows][skq] and ph[2][kAmxRows][skq] (and chunks[2][skq /
  // 32]), and the int32 sums of the low and the high bytes' products, pv[2][2][kAmxRows][dvp].
  uint8_t* pl;
  uint8_t* ph;
  int32_t* pv;
  int64_t packed;  // b * heads + h of the head in kt/vp; -1 for none
};

// One task: batch b, head h, query rows [i0, i1) (at most kBlockRows).
using TaskFn = void (*)(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w);

void task_generic(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w);
void task_avx2(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w);
void task_avx512(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w);
void task_avx512_vnni(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w);
// The VNNI task with P.V on AMX-INT8 tiles, 16 query rows at a time (the same int32
// sums, so the same outputs); only where amx_available().
void task_avx512_amx(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w);
// The VNNI task's packing of head (b, h) into w's byte buffers, unless w holds it already
// (qattention_pack_vnni_avx512.cpp).
void pack_head_vnni(const Args& p, int64_t b, int64_t h, Scratch& w);

// At the AVX-512 level the VNNI task runs where the CPU has AVX512-VNNI. Tests turn it off
// (process-wide; switch only while no session runs) to check the plain AVX-512 task too.
bool vnni_available();
void set_vnni_allowed(bool allowed);
bool vnni_allowed();
// Within the VNNI task, the AMX P.V runs where the CPU and OS allow AMX-INT8
// (amx_int8_usable(); OCTET_AMX=0 turns it off for a run). Tests and benchmarks switch
// it off the same way as VNNI to compare both in one process.
bool amx_available();
void set_amx_allowed(bool allowed);
bool amx_allowed();

}  // namespace octet::cpu::qattn
