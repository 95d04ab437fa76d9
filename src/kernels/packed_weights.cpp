#include "kernels/packed_weights.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "quant/blocks.h"
#include "quant/quantize.h"

namespace tps {

namespace {

constexpr PanelLayout kQ4_0{.code_bits = 4, .block = 32, .offset = 8};
constexpr PanelLayout kQ4_1{.code_bits = 4, .block = 32, .has_bias = true};
constexpr PanelLayout kQ5_0{.code_bits = 8, .block = 32, .offset = 16, .stored_bits = 5};
constexpr PanelLayout kQ5_1{.code_bits = 8, .block = 32, .has_bias = true, .stored_bits = 5};
constexpr PanelLayout kQ8_0{.code_bits = 8, .block = 32, .offset = 128};
constexpr PanelLayout kQ4_K{.code_bits = 4, .block = 32, .has_bias = true, .k_scales = true};
constexpr PanelLayout kQ5_K{.code_bits = 8, .block = 32, .has_bias = true, .k_scales = true, .stored_bits = 5};
constexpr PanelLayout kQ6_K{.code_bits = 8, .block = 16, .offset = 32, .stored_bits = 6, .i8_scales = true};
constexpr PanelLayout kQ2_K{
    .code_bits = 8, .block = 16, .has_bias = true, .k_scales = true, .stored_bits = 2, .small_codes = true};
constexpr PanelLayout kQ3_K{
    .code_bits = 8, .block = 16, .offset = 4, .stored_bits = 3, .i8_scales = true, .small_codes = true};
constexpr PanelLayout kIQ4_NL{.code_bits = 4, .block = 32, .offset = 128, .iq4_values = true};
constexpr PanelLayout kIQ4_XS{.code_bits = 4, .block = 32, .offset = 128, .i8_scales = true, .iq4_values = true};

// One panel block of one row: codes (unsigned), scale and bias, value = s * code + m
// (the K-quants' scales go to the panel as codes: s and m stay unset).
struct DecodedBlock {
  uint8_t codes[32];
  float s, m;
};

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// The 32 codes of a block whose 16 bytes hold element j in the low nibble and j + 16
// in the high one (Q4_1, IQ4_XS's sub-blocks).
void nibble_codes(const uint8_t* qs, uint8_t* codes) {
  for (int j = 0; j < 16; ++j) codes[j] = qs[j] & 0xF, codes[j + 16] = qs[j] >> 4;
}

// Decodes panel block b (of layout.block elements) of a GGUF row (the formats that
// pack_panel does not simply copy).
void decode_block(GgmlType t, const uint8_t* row, int64_t b, DecodedBlock* out) {
  switch (t) {
    case GgmlType::kQ4_1: {
      const auto& q = reinterpret_cast<const BlockQ4_1*>(row)[b];
      nibble_codes(q.qs, out->codes);
      out->s = f16_to_f32(q.d), out->m = f16_to_f32(q.m);
      return;
    }
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1: {
      bool q5_1 = t == GgmlType::kQ5_1;
      const uint8_t* blk = row + b * (q5_1 ? sizeof(BlockQ5_1) : sizeof(BlockQ5_0));
      const uint8_t* qh = blk + (q5_1 ? 4 : 2);
      uint32_t h = load_u32(qh);
      for (int j = 0; j < 16; ++j) {
        out->codes[j] = static_cast<uint8_t>((qh[4 + j] & 0xF) | (((h >> j) & 1) << 4));
        out->codes[j + 16] = static_cast<uint8_t>((qh[4 + j] >> 4) | (((h >> (j + 16)) & 1) << 4));
      }
      uint16_t d, m;
      std::memcpy(&d, blk, 2);
      std::memcpy(&m, blk + 2, 2);
      out->s = f16_to_f32(d);
      out->m = q5_1 ? f16_to_f32(m) : -16.0f * out->s;
      return;
    }
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K: {
      bool five = t == GgmlType::kQ5_K;
      int j = static_cast<int>(b % 8);
      const uint8_t* sb = row + (b / 8) * (five ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K));
      const uint8_t* qh = sb + 16;
      const uint8_t* qs = sb + (five ? 48 : 16) + 32 * (j / 2);
      for (int l = 0; l < 32; ++l) {
        int code = (qs[l] >> (4 * (j & 1))) & 0xF;
        if (five) code |= ((qh[l] >> j) & 1) << 4;
        out->codes[l] = static_cast<uint8_t>(code);
      }
      return;
    }
    case GgmlType::kQ2_K: {
      const auto& q = reinterpret_cast<const BlockQ2_K*>(row)[b / 16];
      for (int i = 0; i < 16; ++i) out->codes[i] = static_cast<uint8_t>(k_low_2_bits(q.qs, static_cast<int>(b % 16) * 16 + i));
      return;
    }
    case GgmlType::kQ3_K: {
      const auto& q = reinterpret_cast<const BlockQ3_K*>(row)[b / 16];
      for (int i = 0; i < 16; ++i) out->codes[i] = static_cast<uint8_t>(q3_k_code(q, static_cast<int>(b % 16) * 16 + i));
      return;
    }
    case GgmlType::kIQ4_XS: {
      nibble_codes(reinterpret_cast<const BlockIQ4_XS*>(row)[b / 8].qs + 16 * (b % 8), out->codes);
      return;
    }
    case GgmlType::kQ6_K: {
      const auto& q = reinterpret_cast<const BlockQ6_K*>(row)[b / 16];
      int p0 = static_cast<int>(b % 16) * 16;
      for (int i = 0; i < 16; ++i) {
        int p = p0 + i, half = p / 128, r = p % 128, quarter = r / 32, l = r % 32;
        uint8_t lb = q.ql[64 * half + l + 32 * (quarter & 1)];
        int low = quarter < 2 ? (lb & 0xF) : (lb >> 4);
        int high = (q.qh[32 * half + l] >> (2 * quarter)) & 3;
        out->codes[i] = static_cast<uint8_t>(low | (high << 4));
      }
      return;
    }
    default:
      fail("no panel layout for {}", type_name(t));
  }
}

}  // namespace

const PanelLayout* panel_layout(GgmlType t) {
  switch (t) {
    case GgmlType::kQ4_0: return &kQ4_0;
    case GgmlType::kQ4_1: return &kQ4_1;
    case GgmlType::kQ5_0: return &kQ5_0;
    case GgmlType::kQ5_1: return &kQ5_1;
    case GgmlType::kQ8_0: return &kQ8_0;
    case GgmlType::kQ4_K: return &kQ4_K;
    case GgmlType::kQ5_K: return &kQ5_K;
    case GgmlType::kQ6_K: return &kQ6_K;
    case GgmlType::kQ2_K: return &kQ2_K;
    case GgmlType::kQ3_K: return &kQ3_K;
    case GgmlType::kIQ4_NL: return &kIQ4_NL;
    case GgmlType::kIQ4_XS: return &kIQ4_XS;
    default: return nullptr;
  }
}

// Q4_0 and Q8_0 panels are the GGUF bytes rearranged (Q8_0 codes offset by 128), so
// they are copied without decoding: fast enough to pack at load or on the fly. Each
// block's 4-byte code groups k of row r go to bytes 64 k + 4 r; its f16 d to the scales.
template <typename Block, int kDotSteps, uint32_t kFlip>
void pack_panel_copied(const PanelLayout& layout, const WeightMatrix& w, size_t rb, int64_t g, uint8_t* dst) {
  const int64_t nblocks = w.cols / kQk;
  for (int64_t b = 0; b < nblocks; ++b, dst += layout.unit_bytes()) {
    std::memset(dst, 0, layout.unit_bytes());
    auto* codes = dst + layout.code_offset(b);
    auto* scales = dst + layout.scale_offset(b);
    for (int r = 0; r < kPanelRows && g * kPanelRows + r < w.rows; ++r) {
      const auto& q = reinterpret_cast<const Block*>(w.data + (g * kPanelRows + r) * rb)[b];
      for (int k = 0; k < kDotSteps; ++k) {
        uint32_t v;
        std::memcpy(&v, q.qs + 4 * k, 4);
        v ^= kFlip;
        std::memcpy(codes + 64 * k + 4 * r, &v, 4);
      }
      std::memcpy(scales + 2 * r, &q.d, 2);
    }
  }
}

void pack_panel_q4_0(const WeightMatrix& w, size_t rb, int64_t g, uint8_t* dst) {
  pack_panel_copied<BlockQ4_0, 4, 0>(kQ4_0, w, rb, g, dst);
}

void pack_panel_iq4_nl(const WeightMatrix& w, size_t rb, int64_t g, uint8_t* dst) {
  pack_panel_copied<BlockIQ4_NL, 4, 0>(kIQ4_NL, w, rb, g, dst);  // Q4_0's bytes; the codes index kIq4Values
}

void pack_panel_q8_0(const WeightMatrix& w, size_t rb, int64_t g, uint8_t* dst) {
  pack_panel_copied<BlockQ8_0, 8, 0x80808080u>(kQ8_0, w, rb, g, dst);  // int8 q -> unsigned code q + 128
}

// Writes row r's codes of one block into the panel's code vectors.
void put_codes(const PanelLayout& L, const uint8_t* codes, int r, uint8_t* dst) {
  for (int k = 0; k < L.block / 4; ++k) {
    for (int i = 0; i < 4; ++i) {
      if (L.code_bits == 8) {
        dst[64 * k + 4 * r + i] = codes[4 * k + i];
      } else if (k < L.block / 8) {  // 4-bit: vector k holds codes 4k.. (low) and block/2 + 4k.. (high)
        dst[64 * k + 4 * r + i] = static_cast<uint8_t>(codes[4 * k + i] | (codes[L.block / 2 + 4 * k + i] << 4));
      }
    }
  }
}

// The super-block formats with an i8 scale per block: where a super-block keeps its
// f16 d, and block j's scale.
const uint8_t* i8_super_d(GgmlType t, const uint8_t* sb) {
  if (t == GgmlType::kQ6_K) return reinterpret_cast<const uint8_t*>(&reinterpret_cast<const BlockQ6_K*>(sb)->d);
  if (t == GgmlType::kQ3_K) return reinterpret_cast<const uint8_t*>(&reinterpret_cast<const BlockQ3_K*>(sb)->d);
  return sb;  // IQ4_XS
}
int8_t i8_block_scale(GgmlType t, const uint8_t* sb, int j) {
  if (t == GgmlType::kQ6_K) return reinterpret_cast<const BlockQ6_K*>(sb)->scales[j];
  if (t == GgmlType::kQ3_K) return static_cast<int8_t>(q3_k_scale(*reinterpret_cast<const BlockQ3_K*>(sb), j));
  return static_cast<int8_t>(iq4_xs_scale(*reinterpret_cast<const BlockIQ4_XS*>(sb), j));
}

// Where a k_scales super-block keeps its f16 d (dmin follows it).
const uint8_t* k_super_d(GgmlType t, const uint8_t* sb) {
  return t == GgmlType::kQ2_K ? reinterpret_cast<const uint8_t*>(&reinterpret_cast<const BlockQ2_K*>(sb)->d) : sb;
}

// The K-quants and IQ4_XS (super_headers()): per super-block, a header of each row's d
// (and dmin), then its units, each block with its codes and one scale code byte per row
// (and one min code byte for Q4_K and Q5_K; Q2_K's byte holds both as the file's does).
void pack_panel_k(const PanelLayout& L, const WeightMatrix& w, size_t rb, int64_t g, uint8_t* dst) {
  const size_t super_bytes = type_info(w.type).block_bytes;
  const int64_t blocks = w.cols / L.block, blocks_per_super = L.unit_blocks() * PanelLayout::kSuperUnits;
  std::memset(dst, 0, L.wide_panel_bytes(w.cols));
  DecodedBlock dec;
  for (int r = 0; r < kPanelRows && g * kPanelRows + r < w.rows; ++r) {
    const uint8_t* row = w.data + (g * kPanelRows + r) * rb;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t s = b / blocks_per_super, u = b / L.unit_blocks();
      const int j = static_cast<int>(b % blocks_per_super), i = static_cast<int>(b % L.unit_blocks());
      const uint8_t* sb = row + s * super_bytes;
      if (j == 0) {
        uint8_t* header = dst + L.super_header(s);
        if (L.i8_scales) {
          std::memcpy(header + 2 * r, i8_super_d(w.type, sb), 2);
        } else {
          const uint8_t* d = k_super_d(w.type, sb);
          std::memcpy(header + 2 * r, d, 2);           // d
          std::memcpy(header + 32 + 2 * r, d + 2, 2);  // dmin
        }
      }
      decode_block(w.type, row, b, &dec);
      put_codes(L, dec.codes, r, dst + L.block_codes(b));
      uint8_t* sc = dst + L.unit_scales(u);
      if (L.i8_scales) sc[kPanelRows * i + r] = static_cast<uint8_t>(i8_block_scale(w.type, sb, j));
      else if (L.k_scale_nibbles()) sc[kPanelRows * i + r] = reinterpret_cast<const BlockQ2_K*>(sb)->scales[j];
      else unpack_k_scale(sb + 4, j, sc + 2 * kPanelRows * i + r, sc + 2 * kPanelRows * i + kPanelRows + r);
    }
  }
}

size_t float_panel_bytes(GgmlType t, int64_t cols) {
  return (kPanelRows * static_cast<size_t>(cols) * type_info(t).block_bytes + 63) / 64 * 64;
}

// Element k of the panel's 16 rows side by side; E is the element's bits.
template <typename E>
void pack_float_panel(const WeightMatrix& w, size_t rb, int64_t g, uint8_t* dst) {
  std::memset(dst, 0, float_panel_bytes(w.type, w.cols));
  const E* rows[kPanelRows];
  const int n = static_cast<int>(std::min<int64_t>(kPanelRows, w.rows - g * kPanelRows));
  for (int r = 0; r < n; ++r) rows[r] = reinterpret_cast<const E*>(w.data + (g * kPanelRows + r) * rb);
  auto* out = reinterpret_cast<E*>(dst);
  for (int64_t k = 0; k < w.cols; ++k)
    for (int r = 0; r < n; ++r) out[k * kPanelRows + r] = rows[r][k];
}

void pack_panel(const WeightMatrix& w, int64_t g, uint8_t* dst) {
  size_t rb = w.row_bytes != 0 ? w.row_bytes : row_bytes(w.type, w.cols);
  if (w.type == GgmlType::kF32) return pack_float_panel<uint32_t>(w, rb, g, dst);
  if (w.type == GgmlType::kF16 || w.type == GgmlType::kBF16) return pack_float_panel<uint16_t>(w, rb, g, dst);
  const PanelLayout& L = *panel_layout(w.type);
  if (w.type == GgmlType::kQ4_0) return pack_panel_q4_0(w, rb, g, dst);
  if (w.type == GgmlType::kQ8_0) return pack_panel_q8_0(w, rb, g, dst);
  if (w.type == GgmlType::kIQ4_NL) return pack_panel_iq4_nl(w, rb, g, dst);
  if (L.super_headers()) return pack_panel_k(L, w, rb, g, dst);
  int64_t nblocks = w.cols / L.block;
  DecodedBlock dec;
  for (int64_t b = 0; b < nblocks; ++b, dst += L.unit_bytes()) {
    std::memset(dst, 0, L.unit_bytes());
    auto* scales = reinterpret_cast<uint16_t*>(dst + L.scale_offset(b));
    auto* biases = scales + kPanelRows;
    for (int r = 0; r < kPanelRows && g * kPanelRows + r < w.rows; ++r) {
      decode_block(w.type, w.data + (g * kPanelRows + r) * rb, b, &dec);
      put_codes(L, dec.codes, r, dst + L.code_offset(b));
      scales[r] = f32_to_f16(dec.s);
      if (L.has_bias) biases[r] = f32_to_f16(dec.m);
    }
  }
}

namespace {

// Block codes (wide, 8-bit) into their compact form (packed_weights.h); third: the
// unit's vector of third bits and i the block's place in its unit (3-bit codes).
void compact_block_codes(const PanelLayout& L, const uint8_t* codes, uint8_t* dst, uint8_t* third, int i) {
  const int groups = L.block / 4;
  if (L.stored_bits <= 3) {
    for (int j = 0; j < 64; ++j)
      for (int g = 0; g < groups; ++g) {
        dst[j] |= static_cast<uint8_t>((codes[64 * g + j] & 3) << CompactLowBits::low_bit(g));
        if (L.stored_bits == 3)
          third[j] |= static_cast<uint8_t>((codes[64 * g + j] >> 2 & 1) << CompactLowBits::third_bit(i, g));
      }
    return;
  }
  const int half = groups / 2, high_bits = L.stored_bits - 4;
  uint8_t* high = dst + 64 * half;
  for (int j = 0; j < 64; ++j) {
    for (int k = 0; k < half; ++k)
      dst[64 * k + j] = static_cast<uint8_t>((codes[64 * k + j] & 0xF) | (codes[64 * (k + half) + j] & 0xF) << 4);
    for (int g = 0; g < groups; ++g) high[j] |= static_cast<uint8_t>((codes[64 * g + j] >> 4) << (high_bits * g));
  }
}

}  // namespace

void compact_panel(const PanelLayout& L, const uint8_t* wide, int64_t cols, uint8_t* dst) {
  const int64_t blocks = cols / L.block, units = blocks / L.unit_blocks();
  std::memset(dst, 0, L.stored_panel_bytes(cols));
  if (L.super_headers())
    for (int64_t s = 0; s < units / PanelLayout::kSuperUnits; ++s)
      std::memcpy(dst + L.stored_super_header(s), wide + L.super_header(s), PanelLayout::kSuperHeader);
  for (int64_t u = 0; u < units; ++u)
    std::memcpy(dst + L.stored_unit_scales(u), wide + L.unit_scales(u), L.scale_bytes());
  for (int64_t b = 0; b < blocks; ++b)
    compact_block_codes(L, wide + L.block_codes(b), dst + L.stored_block_codes(b), dst + L.stored_third_bits(b),
                        static_cast<int>(b % L.unit_blocks()));
}

namespace {

size_t panel_bytes(const WeightMatrix& w) {
  const PanelLayout* layout = panel_layout(w.type);
  return layout != nullptr ? layout->stored_panel_bytes(w.cols) : float_panel_bytes(w.type, w.cols);
}

}  // namespace

size_t packed_bytes(const WeightMatrix& w) {
  return panel_bytes(w) * static_cast<size_t>((w.rows + kPanelRows - 1) / kPanelRows);
}

PackedWeights pack_weights_into(const WeightMatrix& w, uint8_t* memory, ThreadPool* pool) {
  PackedWeights p;
  if (w.rows == 0) return p;
  if (!is_supported_weight_type(w.type)) fail("pack_weights: unsupported weight type {}", type_name(w.type));
  if (w.cols % type_info(w.type).block_size != 0)
    fail("pack_weights: {} columns is not a multiple of the {} block size", w.cols, type_name(w.type));
  p.type_ = w.type;
  p.rows_ = w.rows;
  p.cols_ = w.cols;
  p.layout_ = panel_layout(w.type);
  p.panel_bytes_ = panel_bytes(w);
  p.data_ = memory;
  auto pack_range = [&](int64_t g0, int64_t g1, int) {
    std::vector<uint8_t> wide(p.compact() ? p.layout_->wide_panel_bytes(w.cols) : 0);
    for (int64_t g = g0; g < g1; ++g) {
      uint8_t* dst = memory + static_cast<size_t>(g) * p.panel_bytes_;
      if (!p.compact()) {
        pack_panel(w, g, dst);
      } else {
        pack_panel(w, g, wide.data());
        compact_panel(*p.layout_, wide.data(), w.cols, dst);
      }
    }
  };
  const int64_t groups = (w.rows + kPanelRows - 1) / kPanelRows;
  if (pool != nullptr) pool->parallel_for(groups, 1, pack_range);
  else pack_range(0, groups, 0);
  return p;
}

PackedWeights pack_weights(const WeightMatrix& w, ThreadPool* pool) {
  const size_t bytes = packed_bytes(w);
  if (bytes == 0 || w.rows == 0) return {};
  HugePageBuffer memory = allocate_huge_pages(bytes);
  PackedWeights p = pack_weights_into(w, memory.get(), pool);
  p.owned_ = std::move(memory);
  return p;
}

}  // namespace tps
