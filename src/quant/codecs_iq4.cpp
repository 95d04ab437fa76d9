// The non-linear 4-bit formats: IQ4_NL (blocks of 32, one f16 scale) and IQ4_XS
// (super-blocks of 256: an f16 scale and a 6-bit scale per 32). Both index
// kIq4Values. The quantizers need no importance matrix: each block's scale is the best
// of a few trial scales by least squares.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/quantize.h"

namespace tps {

namespace {

// The index of the table value nearest v.
uint8_t nearest_value(float v) {
  const auto* end = kIq4Values + 16;
  const auto* above = std::lower_bound(kIq4Values, end, v, [](int8_t a, float x) { return a < x; });
  if (above == kIq4Values) return 0;
  if (above == end) return 15;
  return static_cast<uint8_t>(above - kIq4Values - (v - above[-1] < above[0] - v ? 1 : 0));
}

// The scale d of n values x that, with each value's nearest table entry q, makes
// d * kIq4Values[q] closest to x by least squares, among trial scales that map the
// largest magnitude to or near the table's ends; codes get the chosen indices.
float fit_block(const float* x, int n, uint8_t* codes) {
  const float max = signed_absmax(x, n);
  if (max == 0.0f) {
    std::fill(codes, codes + n, nearest_value(0.0f));
    return 0.0f;
  }
  float best_d = 0.0f, best_score = -1.0f;
  uint8_t trial[32];
  for (int step = -7; step <= 7; ++step) {
    const float inverse = (static_cast<float>(kIq4Values[0]) + 0.5f * static_cast<float>(step)) / max;
    double sum_xv = 0, sum_vv = 0;
    for (int j = 0; j < n; ++j) {
      trial[j] = nearest_value(x[j] * inverse);
      const double v = kIq4Values[trial[j]];
      sum_xv += x[j] * v;
      sum_vv += v * v;
    }
    // The least-squares error for these codes falls as sum_xv^2 / sum_vv rises.
    const double score = sum_vv > 0 ? sum_xv * sum_xv / sum_vv : 0;
    if (score > best_score) {
      best_score = static_cast<float>(score);
      best_d = static_cast<float>(sum_xv / sum_vv);
      std::copy(trial, trial + n, codes);
    }
  }
  return best_d;
}

void pack_nibbles(const uint8_t* codes, uint8_t* qs) {
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>(codes[j] | (codes[j + 16] << 4));
}

void unpack_nibbles(const uint8_t* qs, float scale, float* dst) {
  for (int j = 0; j < 16; ++j) {
    dst[j] = scale * static_cast<float>(kIq4Values[qs[j] & 0xF]);
    dst[j + 16] = scale * static_cast<float>(kIq4Values[qs[j] >> 4]);
  }
}

}  // namespace

void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ4_NL*>(src);
  for (int64_t i = 0; i < n / kQk; ++i, dst += kQk) unpack_nibbles(b[i].qs, f16_to_f32(b[i].d), dst);
}

void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockIQ4_XS*>(src);
  for (int64_t i = 0; i < n / kQkK; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQkK / kQk; ++j, dst += kQk)
      unpack_nibbles(b[i].qs + 16 * j, d * static_cast<float>(iq4_xs_scale(b[i], j)), dst);
  }
}

void quantize_row_iq4_nl(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockIQ4_NL*>(dst);
  uint8_t codes[kQk];
  for (int64_t i = 0; i < n / kQk; ++i, src += kQk) {
    const uint16_t d = f32_to_f16(fit_block(src, kQk, codes));
    // The codes again for the scale as stored (f16).
    const float stored = f16_to_f32(d), inverse = stored != 0.0f ? 1.0f / stored : 0.0f;
    for (int j = 0; j < kQk; ++j) codes[j] = nearest_value(src[j] * inverse);
    b[i].d = d;
    pack_nibbles(codes, b[i].qs);
  }
}

void quantize_row_iq4_xs(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockIQ4_XS*>(dst);
  constexpr int kSubBlocks = kQkK / kQk;
  uint8_t codes[kQk];
  for (int64_t i = 0; i < n / kQkK; ++i, src += kQkK) {
    float scales[kSubBlocks], max_scale = 0.0f;
    for (int j = 0; j < kSubBlocks; ++j) {
      scales[j] = fit_block(src + kQk * j, kQk, codes);
      if (std::fabs(scales[j]) > std::fabs(max_scale)) max_scale = scales[j];
    }
    // The super-block scale maps the largest sub-block scale to -32, the end of the
    // 6-bit range ls - 32 in [-32, 31].
    const uint16_t d16 = f32_to_f16(-max_scale / 32.0f);
    const float d = f16_to_f32(d16), inverse = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = d16;
    b[i].scales_h = 0;
    std::memset(b[i].scales_l, 0, sizeof b[i].scales_l);
    for (int j = 0; j < kSubBlocks; ++j) {
      const int l = std::clamp(static_cast<int>(std::lround(scales[j] * inverse)), -32, 31);
      const auto ls = static_cast<unsigned>(l + 32);
      b[i].scales_l[j / 2] |= static_cast<uint8_t>((ls & 0xF) << (4 * (j % 2)));
      b[i].scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * j));
      const float scale = d * static_cast<float>(l), sub_inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
      for (int k = 0; k < kQk; ++k) codes[k] = nearest_value(src[kQk * j + k] * sub_inverse);
      pack_nibbles(codes, b[i].qs + 16 * j);
    }
  }
}

}  // namespace tps
