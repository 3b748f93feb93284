// The AVX512-VNNI task of octet.QAttention with P.V on AMX-INT8 tiles (task_avx512_amx): the
// scores, softmax and P are the VNNI task's (qattention_probabilities_avx512.h, 4 rows at a
// time), P.V runs on tiles 16 query rows at a time, and the outputs are the VNNI task's bit
// for bit (tests: AmxTaskMatchesVnniBitForBit).
//
// P.V in the VNNI task sums 256 ph vs + pl vs over the keys (P = 256 ph + pl, its int16's
// two bytes; vs the signed V bytes, see qattention_vnni_avx512.cpp). TDPBUSD sums the same
// u8 x s8 quads into int32 lanes (wrapping, as VPDPBUSD), 16 rows x 16 channels x 64 keys
// per instruction, so:
// - A tiles: P's low bytes as a u8 matrix pl[16 rows][skq] (PRowWriter writes the bytes
//   instead of the int16), 64 keys per tile; B tiles: vt8 as packed (rows = quads of keys,
//   16 channels x 4 bytes, 4 dvp apart: AMX's B layout already), zeros past sk4, so P's
//   stale bytes there add nothing.
// - The high bytes ph run through a second product, only over the 64-key blocks where one
//   of the 16 rows has a P >= 256 (the VNNI task's chunks, per 32 keys); 8-bit P never.
// - Up to 64 value channels (4 C tiles) per pass over the keys; both sums are stored and
//   the epilogue adds them as (hi << 8) + lo + rowv: the VNNI task's int32, the same float
//   steps after it.
// Tiles: 0-3 the C sums of 16-channel blocks, 4 the A tile, 5-7 B tiles, used in turn.
// Measured and dropped (bench/results/2026-11-27_qattention-pv-amx_session17_*): the int16
// P rows as A tiles (32 keys a row) against V as words (vs, 0, vs', 0; the high bytes from
// the same words read one byte early), which saves the byte split but doubles the
// TDPBUSDs, with the high bytes on tiles or on VPDPBUSD (DINOv2 QAttention +6% over the
// VNNI task either way); both products in one pass for small heads (no gain); a tile's
// products issued in shares between the next tile's P rows (DINOv2 back to VNNI speed).
#pragma GCC target("avx512vnni,avx512vbmi,amx-tile,amx-int8")

#include <immintrin.h>

#include "kernels/cpu/qattention_probabilities_avx512.h"

namespace octet::cpu::qattn {
namespace {

static_assert(kBlockRows % kAmxRows == 0 && kAmxRows % kR == 0);
constexpr int64_t kBlockKeys = 64;  // keys per A tile (64 bytes a row)

// The LDTILECFG operand, palette 1: each tile's rows and bytes per row.
struct alignas(64) TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// Every tile 16 rows x 64 bytes: A = 16 P rows x 64 keys, B = 16 key quads x 16 channels,
// C = 16 rows x 16 int32 channels.
void configure_tiles() {
  TileConfig c{};
  c.palette = 1;
  for (int t = 0; t < 8; ++t) c.rows[t] = kAmxRows, c.colsb[t] = 64;
  _tile_loadconfig(&c);
}

// out[r][d0 + c] (rows 4 dvp bytes apart) = the int32 sums over the 64-key blocks of
// a[r][key] * vs[key][d0 + c] for N 16-channel blocks from d0; with chunks, only over the
// blocks with a nonzero chunk byte (the others hold only zero bytes of a).
template <int N>
void tile_products(const Args& p, const Scratch& w, const uint8_t* a, const uint8_t* chunks, int64_t d0, int32_t* out) {
  _tile_zero(0);
  if constexpr (N > 1) _tile_zero(1);
  if constexpr (N > 2) _tile_zero(2);
  if constexpr (N > 3) _tile_zero(3);
  const int64_t vstride = 4 * p.dvp;
  for (int64_t kb = 0; kb < p.skq / kBlockKeys; ++kb) {
    if (chunks && (chunks[2 * kb] | chunks[2 * kb + 1]) == 0) continue;
    _tile_loadd(4, a + kBlockKeys * kb, p.skq);
    const int8_t* v = w.vt8 + 4 * ((kBlockKeys / 4) * kb * p.dvp + d0);
    _tile_loadd(5, v, vstride);
    _tile_dpbusd(0, 4, 5);
    if constexpr (N > 1) {
      _tile_loadd(6, v + 64, vstride);
      _tile_dpbusd(1, 4, 6);
    }
    if constexpr (N > 2) {
      _tile_loadd(7, v + 128, vstride);
      _tile_dpbusd(2, 4, 7);
    }
    if constexpr (N > 3) {
      _tile_loadd(5, v + 192, vstride);
      _tile_dpbusd(3, 4, 5);
    }
  }
  const int64_t ostride = 4 * p.dvp;
  _tile_stored(0, out + d0, ostride);
  if constexpr (N > 1) _tile_stored(1, out + d0 + 16, ostride);
  if constexpr (N > 2) _tile_stored(2, out + d0 + 32, ostride);
  if constexpr (N > 3) _tile_stored(3, out + d0 + 48, ostride);
}

// tile_products over all of dvp, up to 64 channels per pass over the keys.
void products(const Args& p, const Scratch& w, const uint8_t* a, const uint8_t* chunks, int32_t* out) {
  int64_t d0 = 0;
  for (; d0 + 64 <= p.dvp; d0 += 64) tile_products<4>(p, w, a, chunks, d0, out);
  switch ((p.dvp - d0) / 16) {
    case 3: tile_products<3>(p, w, a, chunks, d0, out); break;
    case 2: tile_products<2>(p, w, a, chunks, d0, out); break;
    case 1: tile_products<1>(p, w, a, chunks, d0, out); break;
    default: break;
  }
}

// A 16-row tile's terms for the epilogue: rows [i, i + rows), each row's rowv and softmax
// sum, and whether any P >= 256 (the high bytes' product ran).
struct TileTerms {
  int64_t i, rows;
  int32_t rowv[kAmxRows];
  float sums[kAmxRows];
  bool high;
};

// The P bytes of tile buffer `set` (w.pl, w.ph and w.chunks hold two).
struct PBytes {
  uint8_t *pl, *ph, *chunks;
};
PBytes p_bytes(const Args& p, const Scratch& w, int64_t set) {
  const int64_t n = kAmxRows * p.skq;
  return {w.pl + set * n, w.ph + set * n, w.chunks + set * (p.skq / 32)};
}
int32_t* pv_sums(const Args& p, const Scratch& w, int64_t set) { return w.pv + set * 2 * kAmxRows * p.dvp; }

// Scores, softmax and P bytes of t.rows query rows from t.i into buffer pb (4 rows at a
// time, the VNNI task's probabilities()), their terms into t.
void prepare(const Args& p, int64_t b, int64_t h, Scratch& w, const PBytes& pb, TileTerms& t) {
  for (int64_t c = 0; c < p.skq / 32; ++c) pb.chunks[c] = 0;
  Scratch ws = w;
  ws.chunks = pb.chunks;
  for (int64_t r0 = 0; r0 < t.rows; r0 += kR) {
    TileP tp;
    const int64_t at = r0 * p.skq;
    probabilities<true>(p, b, h, t.i + r0, min_i64(kR, t.rows - r0), ws, PRow{nullptr, pb.pl + at, pb.ph + at}, tp);
    for (int64_t r = 0; r < kR && r0 + r < t.rows; ++r) t.rowv[r0 + r] = tp.rowv[r], t.sums[r0 + r] = tp.sums[r];
  }
  t.high = false;
  for (int64_t c = 0; c < p.skq / 32; ++c) t.high |= pb.chunks[c] != 0;
}

// The tile sums of buffer pb's P bytes . V into pv: the low bytes' at pv, the high
// bytes' (when t.high) kAmxRows * dvp after.
void multiply(const Args& p, const Scratch& w, const PBytes& pb, const TileTerms& t, int32_t* pv) {
  products(p, w, pb.pl, nullptr, pv);
  if (t.high) products(p, w, pb.ph, pb.chunks, pv + kAmxRows * p.dvp);
}

// y rows of tile t from its sums pv: out_scale * float((hi << 8) + lo + rowv[r]) (divided by
// sums[r] with row_probabilities), output_block's steps.
void write_rows(const Args& p, int64_t b, int64_t h, const TileTerms& t, const int32_t* pv) {
  const int32_t* lo = pv;
  const int32_t* hi = pv + kAmxRows * p.dvp;
  const __m512 m = _mm512_set1_ps(p.out_scale);
  const bool exact_scale = reciprocal_division_scale_ok(p.out_scale);
  for (int64_t r = 0; r < t.rows; ++r) {
    float* y = p.y + b * p.y_b + (t.i + r) * p.y_s + h * p.head_v;
    const RowDivisor sum(t.sums[r], exact_scale);
    const __m512i rv = _mm512_set1_epi32(t.rowv[r]);
    for (int64_t d = 0; d < p.head_v; d += 16) {
      __m512i acc = _mm512_add_epi32(_mm512_loadu_si512(lo + r * p.dvp + d), rv);
      if (t.high) acc = _mm512_add_epi32(acc, _mm512_slli_epi32(_mm512_loadu_si512(hi + r * p.dvp + d), 8));
      _mm512_mask_storeu_ps(y + d, lanes(p.head_v - d), output_value(p, m, sum, acc));
    }
  }
}

}  // namespace

// Software-pipelined over the task's 16-row tiles: tile n + 1's P is computed before tile
// n's products and tile n - 1's outputs after them, so a tile load never waits for P's
// vector stores to drain (it did right after them: 15% of the task's samples on the first
// TDPBUSD), and the epilogue's loads find the tile stores done. Two P buffers and two sums
// buffers; three sets of terms (tiles n - 1, n, n + 1 are live at once).
void task_avx512_amx(const Args& p, int64_t b, int64_t h, int64_t i0, int64_t i1, Scratch& w) {
  pack_head_vnni(p, b, h, w);
  configure_tiles();
  const int64_t tiles = (i1 - i0 + kAmxRows - 1) / kAmxRows;
  TileTerms terms[3];
  auto start = [&](int64_t n) {
    TileTerms& t = terms[n % 3];
    t.i = i0 + n * kAmxRows;
    t.rows = min_i64(kAmxRows, i1 - t.i);
    prepare(p, b, h, w, p_bytes(p, w, n % 2), t);
  };
  start(0);
  for (int64_t n = 0; n < tiles; ++n) {
    if (n + 1 < tiles) start(n + 1);
    multiply(p, w, p_bytes(p, w, n % 2), terms[n % 3], pv_sums(p, w, n % 2));
    if (n > 0) write_rows(p, b, h, terms[(n - 1) % 3], pv_sums(p, w, (n - 1) % 2));
  }
  write_rows(p, b, h, terms[(tiles - 1) % 3], pv_sums(p, w, (tiles - 1) % 2));
  _tile_release();
}

}  // namespace octet::cpu::qattn
