// Round trips for every format, and hand-built blocks whose values are known, so a
// wrong layout cannot pass by being its own inverse.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "quant/quantize.h"

namespace tps {
namespace {

std::vector<float> gaussian(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

double relative_rms_error(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += a[i] * a[i];
  return std::sqrt(num / den);
}

struct RoundTripCase {
  GgmlType type;
  double max_error;
};

class RoundTrip : public testing::TestWithParam<RoundTripCase> {};

TEST_P(RoundTrip, ErrorIsSmall) {
  auto [type, max_error] = GetParam();
  constexpr int64_t kN = 256 * 16;
  auto x = gaussian(kN, 7);
  // A few outliers and an all-zero block: scales must cope with both.
  x[5] = 9.0f;
  x[700] = -7.5f;
  for (int i = 512; i < 768; ++i) x[i] = 0.0f;
  std::vector<uint8_t> q(row_bytes(type, kN));
  std::vector<float> back(kN);
  quantize_row(type, x.data(), q.data(), kN);
  dequantize_row(type, q.data(), back.data(), kN);
  EXPECT_LT(relative_rms_error(x, back), max_error) << type_name(type);
  for (int i = 512; i < 768; ++i) ASSERT_EQ(back[i], 0.0f) << type_name(type) << " at " << i;
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, RoundTrip,
    testing::Values(RoundTripCase{GgmlType::kF32, 1e-9}, RoundTripCase{GgmlType::kF16, 1e-3},
                    RoundTripCase{GgmlType::kBF16, 4e-3}, RoundTripCase{GgmlType::kQ8_0, 0.01},
                    RoundTripCase{GgmlType::kQ4_0, 0.12}, RoundTripCase{GgmlType::kQ4_1, 0.12},
                    RoundTripCase{GgmlType::kQ5_0, 0.06}, RoundTripCase{GgmlType::kQ5_1, 0.06},
                    RoundTripCase{GgmlType::kQ4_K, 0.12}, RoundTripCase{GgmlType::kQ5_K, 0.06},
                    RoundTripCase{GgmlType::kQ6_K, 0.03}, RoundTripCase{GgmlType::kIQ4_NL, 0.1},
                    RoundTripCase{GgmlType::kIQ4_XS, 0.1}, RoundTripCase{GgmlType::kQ3_K, 0.2},
                    RoundTripCase{GgmlType::kQ2_K, 0.3}),
    [](const auto& info) { return std::string(type_name(info.param.type)); });

TEST(Quantize, SupportedTypes) {
  EXPECT_TRUE(is_supported_weight_type(GgmlType::kQ4_K));
  EXPECT_FALSE(is_supported_weight_type(GgmlType::kQ8_K));
  EXPECT_FALSE(is_supported_weight_type(GgmlType::kI32));
}

// Bytes for hand-built blocks: a fixed pseudo-random pattern.
std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

void put_f16(uint8_t* p, float v) {
  uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

std::vector<float> dequantized(GgmlType t, const std::vector<uint8_t>& block) {
  std::vector<float> out(static_cast<size_t>(type_info(t).block_size));
  dequantize_row(t, block.data(), out.data(), type_info(t).block_size);
  return out;
}

TEST(KnownBlock, Q8_0) {
  std::vector<uint8_t> b(34);
  put_f16(b.data(), 0.5f);
  for (int j = 0; j < 32; ++j) b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(j - 16));
  auto y = dequantized(GgmlType::kQ8_0, b);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.5f * (j - 16));
}

TEST(KnownBlock, Q4_0) {
  std::vector<uint8_t> b(18);
  put_f16(b.data(), 0.5f);
  for (int j = 0; j < 16; ++j) b[2 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = dequantized(GgmlType::kQ4_0, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * (j - 8));
    EXPECT_EQ(y[j + 16], 0.5f * (7 - j));
  }
}

TEST(KnownBlock, Q4_1) {
  std::vector<uint8_t> b(20);
  put_f16(b.data(), 0.5f);
  put_f16(b.data() + 2, -1.0f);
  for (int j = 0; j < 16; ++j) b[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  auto y = dequantized(GgmlType::kQ4_1, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * j - 1.0f);
    EXPECT_EQ(y[j + 16], 0.5f * (15 - j) - 1.0f);
  }
}

TEST(KnownBlock, Q5_0AndQ5_1) {
  // qh (little-endian u32) bit i is bit 4 of element i.
  const uint32_t qh = 0xA5C3F00Fu;
  for (GgmlType t : {GgmlType::kQ5_0, GgmlType::kQ5_1}) {
    bool has_min = t == GgmlType::kQ5_1;
    std::vector<uint8_t> b(has_min ? 24 : 22);
    put_f16(b.data(), 0.25f);
    if (has_min) put_f16(b.data() + 2, 2.0f);
    uint8_t* p = b.data() + (has_min ? 4 : 2);
    std::memcpy(p, &qh, 4);
    for (int j = 0; j < 16; ++j) p[4 + j] = static_cast<uint8_t>(j | ((15 - j) << 4));
    auto y = dequantized(t, b);
    for (int i = 0; i < 32; ++i) {
      int lo = i < 16 ? i : 15 - (i - 16);
      int q = lo | static_cast<int>(((qh >> i) & 1) << 4);
      float expect = has_min ? 0.25f * q + 2.0f : 0.25f * (q - 16);
      EXPECT_EQ(y[i], expect) << type_name(t) << " element " << i;
    }
  }
}

// Builds the 12 packed bytes of 6-bit scales sc[8] and mins m[8] bit by bit from the
// format's description: sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales) and
// 4-7 (mins); sub-blocks 4-7 in the nibbles of bytes 8-11 (scale low, min high) with
// their top 2 bits in the top bits of bytes 0-3 (scales) and 4-7 (mins).
std::vector<uint8_t> pack_scales(const int* sc, const int* m) {
  std::vector<uint8_t> p(12, 0);
  for (int j = 0; j < 4; ++j) {
    p[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    p[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    p[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
  }
  return p;
}

TEST(KnownBlock, Q4_KAndQ5_K) {
  const int sc[8] = {1, 7, 33, 63, 17, 45, 2, 60};
  const int m[8] = {0, 5, 63, 12, 48, 3, 31, 20};
  auto packed = pack_scales(sc, m);
  for (GgmlType t : {GgmlType::kQ4_K, GgmlType::kQ5_K}) {
    bool five = t == GgmlType::kQ5_K;
    std::vector<uint8_t> b = pattern(five ? 176 : 144, 3);
    put_f16(b.data(), 0.5f);
    put_f16(b.data() + 2, 0.25f);
    std::memcpy(b.data() + 4, packed.data(), 12);
    const uint8_t* qh = b.data() + 16;
    const uint8_t* qs = b.data() + (five ? 48 : 16);
    auto y = dequantized(t, b);
    for (int p = 0; p < 256; ++p) {
      int s = p / 32, chunk = p / 64, l = p % 32;
      uint8_t byte = qs[32 * chunk + l];
      int q = (s % 2 == 0) ? (byte & 0xF) : (byte >> 4);
      if (five) q |= ((qh[l] >> s) & 1) << 4;  // bit s of qh[l]: sub-block s
      float expect = 0.5f * sc[s] * q - 0.25f * m[s];
      EXPECT_FLOAT_EQ(y[p], expect) << type_name(t) << " element " << p;
    }
  }
}

TEST(KnownBlock, Q6_K) {
  std::vector<uint8_t> b = pattern(210, 5);
  put_f16(b.data() + 208, 0.125f);
  const uint8_t* ql = b.data();
  const uint8_t* qh = b.data() + 128;
  const auto* scales = reinterpret_cast<const int8_t*>(b.data() + 192);
  auto y = dequantized(GgmlType::kQ6_K, b);
  for (int p = 0; p < 256; ++p) {
    int half = p / 128, r = p % 128, quarter = r / 32, l = r % 32;
    uint8_t lbyte = ql[64 * half + l + 32 * (quarter & 1)];
    int low = quarter < 2 ? (lbyte & 0xF) : (lbyte >> 4);
    int high = (qh[32 * half + l] >> (2 * quarter)) & 3;
    float expect = 0.125f * scales[p / 16] * static_cast<float>((low | (high << 4)) - 32);
    EXPECT_FLOAT_EQ(y[p], expect) << "element " << p;
  }
}

TEST(KnownBlock, Q3_K) {
  // Scale codes sc (6 bits) of the 16 sub-blocks of 16: low 4 bits in nibble i / 8 of
  // byte i % 8, high 2 at bits 2 (i / 4) of byte 8 + i % 4 (bytes 96-107). Codes: the
  // low 2 bits of element p at bits 2 (p % 128 / 32) of qs[32 (p / 128) + p % 32] (bytes
  // 32-95), its third bit at bit p / 32 of hmask[p % 32] (bytes 0-31); value = d (sc -
  // 32) (q - 4), the f16 d last.
  const int sc[16] = {0, 63, 32, 31, 17, 48, 5, 40, 33, 1, 62, 30, 9, 50, 24, 41};
  std::vector<uint8_t> b = pattern(110, 11);
  for (int j = 0; j < 12; ++j) b[96 + j] = 0;
  for (int i = 0; i < 16; ++i) {
    b[96 + i % 8] = static_cast<uint8_t>(b[96 + i % 8] | ((sc[i] & 0xF) << (4 * (i / 8))));
    b[104 + i % 4] = static_cast<uint8_t>(b[104 + i % 4] | ((sc[i] >> 4) << (2 * (i / 4))));
  }
  put_f16(b.data() + 108, 0.5f);
  auto y = dequantized(GgmlType::kQ3_K, b);
  for (int p = 0; p < 256; ++p) {
    const int low = (b[32 + 32 * (p / 128) + p % 32] >> (2 * (p % 128 / 32))) & 3;
    const int high = (b[p % 32] >> (p / 32)) & 1;
    EXPECT_EQ(y[p], 0.5f * static_cast<float>(sc[p / 16] - 32) * static_cast<float>((low | (high << 2)) - 4))
        << "element " << p;
  }
}

TEST(KnownBlock, Q2_K) {
  // Per sub-block i of 16, its scale code sc in the low nibble of byte i and its min
  // code m in the high one (bytes 0-15). Codes: element p's 2 bits at bits 2 (p % 128 /
  // 32) of qs[32 (p / 128) + p % 32] (bytes 16-79); value = d sc q - dmin m, with the f16
  // d and dmin last.
  std::vector<uint8_t> b = pattern(84, 5);
  b[3] = 0x00, b[7] = 0xF0, b[11] = 0x0F;  // sc and m at their ends
  put_f16(b.data() + 80, 0.5f);
  put_f16(b.data() + 82, 0.25f);
  auto y = dequantized(GgmlType::kQ2_K, b);
  for (int p = 0; p < 256; ++p) {
    const int sc = b[p / 16] & 0xF, m = b[p / 16] >> 4;
    const int q = (b[16 + 32 * (p / 128) + p % 32] >> (2 * (p % 128 / 32))) & 3;
    EXPECT_EQ(y[p], 0.5f * static_cast<float>(sc) * static_cast<float>(q) - 0.25f * static_cast<float>(m))
        << "element " << p;
  }
}

// The 16 values of the IQ4 formats, as llama.cpp's IQ4_NL defines them.
constexpr int kIq4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

TEST(KnownBlock, IQ4_NL) {
  std::vector<uint8_t> b = pattern(18, 7);
  put_f16(b.data(), 0.25f);
  auto y = dequantized(GgmlType::kIQ4_NL, b);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.25f * kIq4[b[2 + j] & 0xF]) << j;
    EXPECT_EQ(y[j + 16], 0.25f * kIq4[b[2 + j] >> 4]) << j + 16;
  }
}

TEST(KnownBlock, IQ4_XS) {
  // Sub-block j's 6-bit scale code ls: low 4 bits in nibble j of scales_l (bytes 4-7,
  // the low nibble first), high 2 bits at bits 2j of scales_h (bytes 2-3, little-endian).
  const int ls[8] = {0, 63, 32, 31, 17, 48, 5, 40};
  std::vector<uint8_t> b = pattern(136, 9);
  put_f16(b.data(), 0.125f);
  uint16_t high = 0;
  for (int j = 0; j < 8; ++j) high = static_cast<uint16_t>(high | ((ls[j] >> 4) << (2 * j)));
  std::memcpy(b.data() + 2, &high, 2);
  for (int j = 0; j < 4; ++j) b[4 + j] = static_cast<uint8_t>((ls[2 * j] & 0xF) | ((ls[2 * j + 1] & 0xF) << 4));
  const uint8_t* qs = b.data() + 8;
  auto y = dequantized(GgmlType::kIQ4_XS, b);
  for (int p = 0; p < 256; ++p) {
    const int j = p / 32, l = p % 32;
    const uint8_t byte = qs[16 * j + l % 16];
    const int q = l < 16 ? (byte & 0xF) : (byte >> 4);
    EXPECT_EQ(y[p], 0.125f * static_cast<float>(ls[j] - 32) * static_cast<float>(kIq4[q])) << "element " << p;
  }
}

TEST(KnownBlock, HalfAndBFloat) {
  std::vector<uint8_t> b(2);
  put_f16(b.data(), -3.5f);
  EXPECT_EQ(dequantized(GgmlType::kF16, b)[0], -3.5f);
  uint16_t bf = 0x4049;  // 3.140625
  std::memcpy(b.data(), &bf, 2);
  EXPECT_EQ(dequantized(GgmlType::kBF16, b)[0], 3.140625f);
}

}  // namespace
}  // namespace tps
