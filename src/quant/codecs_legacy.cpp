// The 32-element block formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/quantize.h"

namespace tps {

namespace {

int clamp_code(float v, int hi) { return std::clamp(static_cast<int>(v), 0, hi); }

// Q5_0 and Q5_1 blocks: 32 codes of 5 bits, element j's and j + 16's low nibbles in byte
// j of qs, their fifth bits at bits j and j + 16 of qh. value(code) turns a code into
// its weight; code(x) a weight into its code.
template <typename Value>
void unpack_q5_codes(const uint8_t* qs, const uint8_t* qh_bytes, Value value, float* dst) {
  uint32_t qh;
  std::memcpy(&qh, qh_bytes, 4);
  for (int j = 0; j < kQk / 2; ++j) {
    dst[j] = value((qs[j] & 0xF) | (((qh >> j) & 1) << 4));
    dst[j + kQk / 2] = value((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
  }
}

template <typename Code>
void pack_q5_codes(const float* src, Code code, uint8_t* qs, uint8_t* qh_bytes) {
  uint32_t qh = 0;
  for (int j = 0; j < kQk / 2; ++j) {
    const int lo = code(src[j]), hi = code(src[j + kQk / 2]);
    qs[j] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
    qh |= static_cast<uint32_t>(lo >> 4) << j;
    qh |= static_cast<uint32_t>(hi >> 4) << (j + 16);
  }
  std::memcpy(qh_bytes, &qh, 4);
}

}  // namespace

void dequantize_row_q4_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQk; ++i, dst += kQk) {
    float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQk / 2; ++j) {
      dst[j] = static_cast<float>((b[i].qs[j] & 0xF) - 8) * d;
      dst[j + kQk / 2] = static_cast<float>((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_row_q4_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / kQk; ++i, dst += kQk) {
    float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    for (int j = 0; j < kQk / 2; ++j) {
      dst[j] = static_cast<float>(b[i].qs[j] & 0xF) * d + m;
      dst[j + kQk / 2] = static_cast<float>(b[i].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_row_q5_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_0*>(src);
  for (int64_t i = 0; i < n / kQk; ++i, dst += kQk) {
    const float d = f16_to_f32(b[i].d);
    unpack_q5_codes(b[i].qs, b[i].qh, [&](int code) { return static_cast<float>(code - 16) * d; }, dst);
  }
}

void dequantize_row_q5_1(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ5_1*>(src);
  for (int64_t i = 0; i < n / kQk; ++i, dst += kQk) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    unpack_q5_codes(b[i].qs, b[i].qh, [&](int code) { return static_cast<float>(code) * d + m; }, dst);
  }
}

void dequantize_row_q8_0(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQk; ++i, dst += kQk) {
    float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQk; ++j) dst[j] = static_cast<float>(b[i].qs[j]) * d;
  }
}

void quantize_row_q4_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < n / kQk; ++i, src += kQk) {
    float d = signed_absmax(src, kQk) / -8.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    for (int j = 0; j < kQk / 2; ++j) {
      int lo = clamp_code(src[j] * id + 8.5f, 15), hi = clamp_code(src[j + kQk / 2] * id + 8.5f, 15);
      b[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_row_q4_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_1*>(dst);
  for (int64_t i = 0; i < n / kQk; ++i, src += kQk) {
    auto [mn, mx] = std::minmax_element(src, src + kQk);
    float d = (*mx - *mn) / 15.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    b[i].m = f32_to_f16(*mn);
    for (int j = 0; j < kQk / 2; ++j) {
      int lo = clamp_code((src[j] - *mn) * id + 0.5f, 15);
      int hi = clamp_code((src[j + kQk / 2] - *mn) * id + 0.5f, 15);
      b[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

void quantize_row_q5_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_0*>(dst);
  for (int64_t i = 0; i < n / kQk; ++i, src += kQk) {
    float d = signed_absmax(src, kQk) / -16.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    pack_q5_codes(src, [&](float x) { return clamp_code(x * id + 16.5f, 31); }, b[i].qs, b[i].qh);
  }
}

void quantize_row_q5_1(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_1*>(dst);
  for (int64_t i = 0; i < n / kQk; ++i, src += kQk) {
    auto [mn, mx] = std::minmax_element(src, src + kQk);
    float d = (*mx - *mn) / 31.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    b[i].m = f32_to_f16(*mn);
    const float lowest = *mn;
    pack_q5_codes(src, [&](float x) { return clamp_code((x - lowest) * id + 0.5f, 31); }, b[i].qs, b[i].qh);
  }
}

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQk; ++i, src += kQk) {
    float amax = 0.0f;
    for (int j = 0; j < kQk; ++j) amax = std::max(amax, std::fabs(src[j]));
    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    b[i].d = f32_to_f16(d);
    for (int j = 0; j < kQk; ++j) b[i].qs[j] = static_cast<int8_t>(std::lround(src[j] * id));
  }
}

}  // namespace tps
