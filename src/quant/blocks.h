#pragma once
// Byte layouts of the ggml block formats, exactly as GGUF files store them, plus the
// 8-bit activation blocks the integer kernels use. Kernels read weights through these.
#include <cstdint>

namespace tps {

constexpr int kQk = 32;    // elements per block of the 32-element formats
constexpr int kQkK = 256;  // elements per K-quant super-block
constexpr int kKScaleBytes = 12;

// value = (q - 8) * d; element j is the low nibble of qs[j], element j+16 the high one.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQk / 2];
};
// value = q * d + m
struct BlockQ4_1 {
  uint16_t d, m;
  uint8_t qs[kQk / 2];
};
// 5-bit: nibbles as Q4_0 plus bit j of qh (little-endian u32) as bit 4 of element j.
// value = (q - 16) * d
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQk / 2];
};
// value = q * d + m
struct BlockQ5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[kQk / 2];
};
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQk];
};

// 8 sub-blocks of 32 with 6-bit scale and min each, packed in `scales` (see
// unpack_k_scales). value = d * sc * q - dmin * m. Nibbles: 64 elements per 32 bytes,
// the low nibbles the first 32, the high nibbles the next 32.
struct BlockQ4_K {
  uint16_t d, dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qs[kQkK / 2];
};
// As Q4_K, with bit 4 of element 64*i + l in bit 2i of qh[l], of element 64*i + 32 + l
// in bit 2i+1.
struct BlockQ5_K {
  uint16_t d, dmin;
  uint8_t scales[kKScaleBytes];
  uint8_t qh[kQkK / 8];
  uint8_t qs[kQkK / 2];
};
// 16 sub-blocks of 16, each with a 4-bit scale code sc and min code m (low and high
// nibble of scales[i]): value = d * sc * q - dmin * m, q 2 bits, element p's at bits 2
// (p % 128 / 32) of qs[32 (p / 128) + p % 32] (Q3_K's low bits).
struct BlockQ2_K {
  uint8_t scales[kQkK / 16];
  uint8_t qs[kQkK / 4];
  uint16_t d, dmin;
};
// 16 sub-blocks of 16 with 6-bit scale codes sc (see q3_k_scale): value = d * (sc - 32)
// * (q - 4), q 3 bits: element p's low 2 bits at bits 2 (p % 128 / 32) of qs[32 (p / 128)
// + p % 32], its high bit at bit p / 32 of hmask[p % 32].
struct BlockQ3_K {
  uint8_t hmask[kQkK / 8];
  uint8_t qs[kQkK / 4];
  uint8_t scales[kKScaleBytes];
  uint16_t d;
};
// 16 sub-blocks of 16 with int8 scales. value = d * scale * (q - 32), q 6 bits: low 4
// in ql, high 2 in qh (two halves of 128 elements, see dequantize_q6_k).
struct BlockQ6_K {
  uint8_t ql[kQkK / 2];
  uint8_t qh[kQkK / 4];
  int8_t scales[kQkK / 16];
  uint16_t d;
};

// The non-linear 4-bit formats: a code indexes these 16 values (IQ4_NL's table), spaced
// closer near 0 where weights crowd.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
// value = d * kIq4Values[q]; nibbles as Q4_0 (element j low nibble of qs[j], j + 16 high).
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kQk / 2];
};
// 8 sub-blocks of 32, each with a 6-bit scale code ls (low 4 bits in scales_l, a nibble
// per sub-block, high 2 in scales_h, two bits per sub-block): value = d * (ls - 32) *
// kIq4Values[q]. Sub-block j's nibbles in qs[16 j ..], as IQ4_NL's.
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kQkK / 64];
  uint8_t qs[kQkK / 2];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K/Q5_K super-block.
inline void unpack_k_scale(const uint8_t* q, int j, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
  }
}

// Sub-block i's (0..15) signed scale sc - 32 of a Q3_K super-block: the low 4 bits of
// sc in nibble i / 8 of scales[i % 8], the high 2 at bits 2 (i / 4) of scales[8 + i % 4].
inline int q3_k_scale(const BlockQ3_K& b, int i) {
  return ((b.scales[i % 8] >> (4 * (i / 8))) & 0xF) + (((b.scales[8 + i % 4] >> (2 * (i / 4))) & 3) << 4) - 32;
}
// Element p's (0..255) 2-bit code in the qs of Q2_K and Q3_K super-blocks: where it
// sits, and (for qs zeroed first) storing the low 2 bits of q there.
inline int k_low_2_bits_index(int p) { return 32 * (p / 128) + p % 32; }
inline int k_low_2_bits_shift(int p) { return 2 * (p % 128 / 32); }
inline int k_low_2_bits(const uint8_t* qs, int p) { return (qs[k_low_2_bits_index(p)] >> k_low_2_bits_shift(p)) & 3; }
inline void put_k_low_2_bits(uint8_t* qs, int p, int q) {
  qs[k_low_2_bits_index(p)] |= static_cast<uint8_t>((q & 3) << k_low_2_bits_shift(p));
}
// Element p's (0..255) 3-bit code q of a Q3_K super-block.
inline int q3_k_code(const BlockQ3_K& b, int p) {
  return k_low_2_bits(b.qs, p) | (((b.hmask[p % 32] >> (p / 32)) & 1) << 2);
}

// Sub-block j's (0..7) signed scale ls - 32 of an IQ4_XS super-block.
inline int iq4_xs_scale(const BlockIQ4_XS& b, int j) {
  return ((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF) + (((b.scales_h >> (2 * j)) & 3) << 4) - 32;
}

}  // namespace tps
