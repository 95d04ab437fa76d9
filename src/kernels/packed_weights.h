#pragma once
// Load-time repacking of quantized weights into row panels: 16 rows interleaved per
// block, so one 64-byte vector holds 4 consecutive codes of each of the 16 rows. An
// integer dot (vpdpbusd) of that vector with 4 broadcast activation bytes then yields
// 16 row partial sums at once, and the 16 rows' block scales are one vector load:
// no horizontal reductions, and each unpacked weight vector serves many tokens.
//
// Every quantized type maps to the same shape, value = scale * code + bias per
// (row, block), with unsigned codes:
//   4-bit codes (Q4_0, Q4_1, Q4_K, IQ4): same bytes as the GGUF formats for
//     Q4_0/Q4_1/IQ4_NL, so the panel streams exactly the file's bytes; Q4_K adds 2 bytes
//     per 32 weights
//   8-bit codes (Q8_0 as q + 128, Q5_0, Q5_1, Q5_K, Q6_K, Q2_K, Q3_K; all but Q8_0
//     compact in memory, see below)
//   blocks of 32 (16 for Q2_K, Q3_K and Q6_K), f16 scale per (row, block), f16 bias per (row, block)
//   or bias = -offset * scale when the format has a fixed zero point;
//   the K-quants keep their two-level scales instead, so their panels are near
//   the file's size: every 256 elements (one super-block) a header of 16 f16 d (and
//   for Q2_K, Q4_K and Q5_K 16 f16 dmin), and per block one byte per row: k_scales
//   (Q2_K, Q4_K, Q5_K): 16 u8 scale codes sc and 16 u8 min codes mn (Q2_K's 4-bit ones:
//   16 bytes of sc | mn << 4, as in the file), scale = d * sc, bias = -dmin * mn;
//   i8_scales (Q6_K, Q3_K, IQ4_XS): 16 i8 scale codes sc, scale = d * sc, bias =
//   -32 * scale (Q6_K), -4 * scale (Q3_K) or -128 * scale (IQ4_XS, whose looked-up
//   codes have offset 128).
//   IQ4_NL is Q4_0's layout with IQ4's codes (iq4_values): scale = d, bias = -128 * d.
//   Scales are exact in f32 either way (an 8-bit code times an f16).
// Panel unit layout (16 rows): a unit is one block, or two for blocks of 16 (Q6_K and
// Q3_K, whose two blocks' i8 scales share 32 bytes, and Q2_K); the units of a super-block follow its
// header. A unit's code vectors of 64 bytes (vector k holds codes 4k..4k+3 of each row
// in bytes 4r..4r+3; for 4-bit codes the low nibbles are codes 4k.. and the high nibbles
// codes block/2 + 4k..), block by block, then 16 f16 scales, then 16 f16 biases (or with k_scales:
// each block's 16 sc, then its 16 mn, Q2_K's 16 sc | mn << 4; with i8_scales: each
// block's 16 sc); in odd units of layouts
// whose units are 32 bytes past a multiple of 64, the 32 bytes of scales come before
// the codes (PanelLayout::scales_first).
//
// Compact panels: 8-bit codes of 5 or 6 bits (Q5_0, Q5_1, Q5_K, Q6_K) would stream 1.4-1.7
// times the file's bytes, Q3_K's 3-bit ones 2.5 and Q2_K's 2-bit ones 3.3 times, so
// packed weights keep them as each code's low nibble and high bits, or its low 2 bits
// four to a byte and (Q3_K) its third bit eight to a byte. The kernels
// of a few tokens (decode) unpack them as they go; for more, the matmul driver widens
// a stretch of panels at a time (IsaKernels::widen_panel) and the kernels read the
// wide ones. A compact block's codes, with s = stored_bits and G code vectors:
//   s = 5, 6: G/2 vectors of nibbles (byte j of vector k: code vector k's byte j in the
//     low nibble, vector k + G/2's in the high one), then 64 bytes of high bits (byte
//     j: code vector g's byte j's bits 4.. at bits (s - 4) g..: (s - 4) G = 8);
//   s = 2: one vector (G = 4) whose byte j holds code vector g's byte j at bits 2g..;
//   s = 3: the same vector of each code's low 2 bits, and after the unit's blocks'
//     (two blocks of 16) one vector of their third bits: byte j holds block i's code
//     vector g's byte j's bit 2 at bit 4i + g;
// its scales as in the wide unit, and the same alternation of the two (scales_first)
// by its own size; super-block headers as in the wide panel.
//
// Float weights (F32, F16, BF16) pack into 16-row panels too, with the 16 rows' element
// k side by side (panel element 16 k + r is W[16 g + r, k]): one vector load gives 16
// rows at one column, which a tile multiplies by each token's broadcast activation (an
// outer product), so a weight vector serves many tokens and no sum is horizontal.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/huge_pages.h"
#include "kernels/matmul.h"
#include "quant/blocks.h"

namespace tps {

constexpr int kPanelRows = 16;

// The 8-bit codes of IQ4 panels' nibbles: kIq4Values + 128.
inline constexpr auto kIq4PanelCodes = [] {
  std::array<uint8_t, 16> codes{};
  for (size_t i = 0; i < codes.size(); ++i) codes[i] = static_cast<uint8_t>(kIq4Values[i] + 128);
  return codes;
}();

// Where a compact block of 5- or 6-bit codes keeps code vector g's bits 4.. (stored_bits - 4 of them per code):
// at bits (stored_bits - 4) g.. of each byte of the block's high-bit vector. Every
// unpacker (each ISA's tiles, and the widening) moves them to bit 4 and masks them
// with these, so the format is defined here once.
struct CompactHighBits {
  int stored_bits;
  constexpr int bits() const { return stored_bits - 4; }
  // The left shift that brings code vector g's high bits to bit 4 (negative: right).
  constexpr int shift_to_bit4(int g) const { return 4 - bits() * g; }
  // Those bits at bit 4, with whatever a 16-bit shift moved across bytes cleared.
  constexpr uint8_t mask_at_bit4() const { return static_cast<uint8_t>(((1 << bits()) - 1) << 4); }
};

// Where a compact block of 2- or 3-bit codes keeps code vector g: its low 2 bits at bit
// low_bit(g) of each byte of the block's vector, and (3-bit codes) the third bit of the
// unit's block i at bit third_bit(i, g) of each byte of the unit's vector. The packer
// and every unpacker take the positions from here, so the format is defined here once.
struct CompactLowBits {
  static constexpr int low_bit(int g) { return 2 * g; }
  static constexpr int third_bit(int i, int g) { return 4 * i + g; }
};

struct PanelLayout {
  static constexpr int kSuperUnits = 8;       // units per super-block (256 elements)
  static constexpr size_t kSuperHeader = 64;  // its 16 f16 d and 16 f16 dmin (or zeros)

  int code_bits = 8;   // 4 or 8
  int block = 32;      // elements per scale: 32, or 16 (Q2_K, Q3_K, Q6_K)
  bool has_bias = false;
  int offset = 0;      // implied zero point when !has_bias: bias = -offset * scale
  bool k_scales = false;
  // 2, 3, 5 or 6: 8-bit codes that need only so many bits are kept compact in memory and
  // widened where the kernels meet them (see "Compact panels" above); 0: kept as they are.
  int stored_bits = 0;
  bool i8_scales = false;
  // 4-bit codes that index kIq4Values (IQ4_NL, IQ4_XS): the kernels look each up as
  // kIq4PanelCodes, an 8-bit code with offset 128, right after unpacking the nibble.
  bool iq4_values = false;
  // 8-bit codes below 8 (Q2_K, Q3_K): the AVX2 kernels add more of their products in
  // 16 bits before they widen them.
  bool small_codes = false;
  constexpr bool compact() const { return stored_bits != 0; }
  constexpr bool super_headers() const { return k_scales || i8_scales; }
  constexpr int unit_blocks() const { return 32 / block; }  // a unit holds 32 elements
  constexpr size_t code_bytes() const { return static_cast<size_t>(kPanelRows * block * code_bits / 8); }
  // Q2_K's scale and min codes of 4 bits: one byte a row and block (sc | mn << 4).
  constexpr bool k_scale_nibbles() const { return k_scales && block == 16; }
  constexpr size_t scale_bytes() const {
    if (k_scales) return static_cast<size_t>((k_scale_nibbles() ? 16 : 32) * unit_blocks());
    return i8_scales ? 32 : 32 + (has_bias ? 32 : 0);
  }
  // A compact block's own code bytes (3-bit codes: their low 2 bits).
  constexpr size_t stored_code_bytes() const {
    if (!compact()) return code_bytes();
    return static_cast<size_t>(kPanelRows * block * (stored_bits == 3 ? 2 : stored_bits) / 8);
  }
  // A unit's code bytes as stored: its blocks' and (3-bit codes) their third bits after them.
  constexpr size_t stored_unit_code_bytes() const {
    return unit_blocks() * stored_code_bytes() + (stored_bits == 3 ? 64 : 0);
  }
  // A unit: unit_blocks() blocks' codes and their scales.
  constexpr size_t unit_bytes() const { return unit_blocks() * code_bytes() + scale_bytes(); }
  constexpr size_t stored_unit_bytes() const { return stored_unit_code_bytes() + scale_bytes(); }
  // Units of 32 bytes past a multiple of 64 (codes and 32 bytes of scales) alternate:
  // an odd unit puts its scales first, so every block's code vectors start on a cache
  // line (loads that straddle two lines made the one-token Q4_0 kernel 20 % slower).
  static constexpr bool scales_first(size_t bytes_per_unit, int64_t u) {
    return bytes_per_unit % 64 == 32 && u % 2 == 1;
  }
  // Where unit u's codes and scales start within it; the kernels, which know their
  // layout's sizes at compile time, call the static forms.
  static constexpr size_t code_offset(size_t bytes_per_unit, int64_t u) {
    return scales_first(bytes_per_unit, u) ? 32 : 0;
  }
  static constexpr size_t scale_offset(size_t bytes_per_unit, size_t unit_code_bytes, int64_t u) {
    return scales_first(bytes_per_unit, u) ? 0 : unit_code_bytes;
  }
  constexpr size_t code_offset(int64_t u) const { return code_offset(unit_bytes(), u); }
  constexpr size_t scale_offset(int64_t u) const { return scale_offset(unit_bytes(), unit_blocks() * code_bytes(), u); }
  constexpr size_t stored_code_offset(int64_t u) const { return code_offset(stored_unit_bytes(), u); }
  constexpr size_t stored_scale_offset(int64_t u) const { return scale_offset(stored_unit_bytes(), stored_unit_code_bytes(), u); }
  // One panel of 16 rows of `cols` elements as the kernels read it, and as kept in
  // memory: whole numbers of cache lines.
  constexpr size_t wide_panel_bytes(int64_t cols) const { return panel_bytes(cols, unit_bytes()); }
  constexpr size_t stored_panel_bytes(int64_t cols) const { return panel_bytes(cols, stored_unit_bytes()); }
  // Where block b's codes, unit u's scales and super-block s's header start within a
  // panel, wide and as stored (the kernels walk a panel instead).
  constexpr size_t block_codes(int64_t b) const { return codes_at(b, unit_bytes(), code_bytes()); }
  constexpr size_t stored_block_codes(int64_t b) const { return codes_at(b, stored_unit_bytes(), stored_code_bytes()); }
  // Where the third bits of block b's unit start (3-bit codes): after its blocks' codes.
  constexpr size_t stored_third_bits(int64_t b) const {
    return stored_block_codes(b) + static_cast<size_t>(unit_blocks() - b % unit_blocks()) * stored_code_bytes();
  }
  constexpr size_t unit_scales(int64_t u) const { return unit_start(u, unit_bytes()) + scale_offset(u); }
  constexpr size_t stored_unit_scales(int64_t u) const {
    return unit_start(u, stored_unit_bytes()) + stored_scale_offset(u);
  }
  constexpr size_t super_header(int64_t s) const { return unit_start(s * kSuperUnits, unit_bytes()) - kSuperHeader; }
  constexpr size_t stored_super_header(int64_t s) const {
    return unit_start(s * kSuperUnits, stored_unit_bytes()) - kSuperHeader;
  }

 private:
  constexpr size_t unit_start(int64_t u, size_t bytes_per_unit) const {
    const auto n = static_cast<size_t>(u);
    return n * bytes_per_unit + (super_headers() ? (n / kSuperUnits + 1) * kSuperHeader : 0);
  }
  constexpr size_t codes_at(int64_t b, size_t bytes_per_unit, size_t block_code_bytes) const {
    const int64_t u = b / unit_blocks();
    return unit_start(u, bytes_per_unit) + code_offset(bytes_per_unit, u) +
           static_cast<size_t>(b % unit_blocks()) * block_code_bytes;
  }
  constexpr size_t panel_bytes(int64_t cols, size_t bytes_per_unit) const {
    auto units = static_cast<size_t>(cols / block / unit_blocks());
    return (units * bytes_per_unit + (super_headers() ? units / kSuperUnits * kSuperHeader : 0) + 63) / 64 * 64;
  }
};

// The panel layout for a quantized weight type; nullptr for float types.
const PanelLayout* panel_layout(GgmlType t);

// Bytes of one 16-row panel of a float-type matrix of `cols` columns (whole cache lines).
size_t float_panel_bytes(GgmlType t, int64_t cols);

class PackedWeights {
 public:
  PackedWeights() = default;
  bool empty() const { return data_ == nullptr; }
  GgmlType type() const { return type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  const PanelLayout& layout() const { return *layout_; }  // quantized types only
  bool compact() const { return layout_ != nullptr && layout_->compact(); }
  size_t panel_bytes() const { return panel_bytes_; }  // one panel of 16 rows, as stored
  const uint8_t* panel(int64_t g) const { return data_ + static_cast<size_t>(g) * panel_bytes_; }
  size_t bytes() const { return panel_bytes_ * static_cast<size_t>((rows_ + kPanelRows - 1) / kPanelRows); }
  // Whether the matrix stays in the caches from step to step (a model whose weights all
  // fit there): then its products cost compute, not memory reads, and a second thread
  // pays off only for more work (matmul.cpp's for_panel_ranges). Set by the model.
  bool cache_resident() const { return cache_resident_; }
  void set_cache_resident(bool resident) { cache_resident_ = resident; }

 private:
  friend PackedWeights pack_weights_into(const WeightMatrix& w, uint8_t* memory, ThreadPool* pool);
  friend PackedWeights pack_weights(const WeightMatrix& w, ThreadPool* pool);
  HugePageBuffer owned_;  // empty when the memory belongs to the caller
  const uint8_t* data_ = nullptr;
  GgmlType type_ = GgmlType::kF32;
  int64_t rows_ = 0, cols_ = 0;
  const PanelLayout* layout_ = nullptr;  // nullptr: float panels
  size_t panel_bytes_ = 0;
  bool cache_resident_ = false;
};

// Bytes of w's packed form.
size_t packed_bytes(const WeightMatrix& w);

// Repacks w for the SIMD kernels into `memory` (packed_bytes(w) bytes, 64-byte aligned,
// owned by the caller and outliving the result), so a model packs all its matrices
// into one huge-page arena.
PackedWeights pack_weights_into(const WeightMatrix& w, uint8_t* memory, ThreadPool* pool = nullptr);

// Repacks w for the SIMD kernels into memory of its own.
// Set WeightMatrix::packed to the result to use it; matmul() works without it too,
// by packing each panel on the fly, which is correct but slower for one token.
PackedWeights pack_weights(const WeightMatrix& w, ThreadPool* pool = nullptr);

// Packs rows [16 g, 16 g + 16) of w (zero rows past the end) into dst, which holds
// one panel's bytes (layout.wide_panel_bytes(w.cols), or float_panel_bytes), wide: as the
// kernels read it.
void pack_panel(const WeightMatrix& w, int64_t g, uint8_t* dst);

// A wide panel of a compact layout (L.compact()) of `cols` columns in its compact form
// (L.stored_panel_bytes(cols) bytes at dst); IsaKernels::widen_panel undoes it.
void compact_panel(const PanelLayout& L, const uint8_t* wide, int64_t cols, uint8_t* dst);

}  // namespace tps
