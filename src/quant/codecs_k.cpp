// The 256-element K-quant super-block formats: Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/codecs.h"
#include "quant/quantize.h"

namespace tps {

namespace {

int nearest(float v) { return static_cast<int>(std::lround(v)); }

struct ScaleMin {
  float scale;  // value = scale * q - min
  float min;
};

// Fits x[0..n) with codes 0..nmax: start from the min/max range, then refine the scale
// and offset by least squares on the chosen codes while the error drops. The offset is
// kept <= 0 (a non-negative `min`), as the format stores it unsigned.
ScaleMin fit_asymmetric(const float* x, int n, int nmax) {
  float lo = std::min(0.0f, *std::min_element(x, x + n)), hi = *std::max_element(x, x + n);
  if (hi <= lo) return {0.0f, -lo};
  float scale = (hi - lo) / static_cast<float>(nmax), offset = lo;
  auto error_of = [&](float s, float o) {
    float e = 0.0f;
    for (int i = 0; i < n; ++i) {
      int q = std::clamp(nearest((x[i] - o) / s), 0, nmax);
      float diff = s * static_cast<float>(q) + o - x[i];
      e += diff * diff;
    }
    return e;
  };
  ScaleMin best{scale, -offset};
  float best_error = error_of(scale, offset);
  for (int iter = 0; iter < 4; ++iter) {
    double sq = 0, sx = 0, sqq = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      double q = std::clamp(nearest((x[i] - offset) / scale), 0, nmax);
      sq += q, sx += x[i], sqq += q * q, sqx += q * x[i];
    }
    double det = n * sqq - sq * sq;
    if (det <= 0) break;
    double a = (n * sqx - sq * sx) / det, b = (sx - a * sq) / n;
    if (b > 0) b = 0, a = sqq > 0 ? sqx / sqq : 0;
    if (a <= 0) break;
    float err = error_of(static_cast<float>(a), static_cast<float>(b));
    if (err >= best_error) break;
    best_error = err;
    scale = static_cast<float>(a), offset = static_cast<float>(b);
    best = {scale, -offset};
  }
  return best;
}

// A super-block fitted as sub-blocks with codes 0..nmax, value = d * sc * q - dmin * m,
// where each sub-block's scale code sc and min code m are 0..code_max.
struct KSuperFit {
  uint16_t d, dmin;
  uint8_t sc[16], m[16];
};

// Shared by Q2_K (16 sub-blocks of 16, 4-bit scale codes), Q4_K and Q5_K (8 of 32, 6-bit
// ones): fits each sub-block, then d and dmin to the largest scale and min; writes the
// codes in L.
KSuperFit quantize_k_asymmetric(const float* x, int sub_blocks, int nmax, int code_max, uint8_t* L) {
  const int n = kQkK / sub_blocks;
  ScaleMin fits[16];
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < sub_blocks; ++j) {
    fits[j] = fit_asymmetric(x + n * j, n, nmax);
    max_scale = std::max(max_scale, fits[j].scale);
    max_min = std::max(max_min, fits[j].min);
  }
  const auto codes = static_cast<float>(code_max);
  const float inv_scale = max_scale > 0 ? codes / max_scale : 0.0f;
  const float inv_min = max_min > 0 ? codes / max_min : 0.0f;
  KSuperFit fit{f32_to_f16(max_scale / codes), f32_to_f16(max_min / codes), {}, {}};
  const float d = f16_to_f32(fit.d), dmin = f16_to_f32(fit.dmin);
  for (int j = 0; j < sub_blocks; ++j) {
    fit.sc[j] = static_cast<uint8_t>(std::min(code_max, nearest(inv_scale * fits[j].scale)));
    fit.m[j] = static_cast<uint8_t>(std::min(code_max, nearest(inv_min * fits[j].min)));
    const float s = d * fit.sc[j], off = dmin * fit.m[j];
    for (int i = 0; i < n; ++i) {
      const int q = s != 0.0f ? nearest((x[n * j + i] + off) / s) : 0;
      L[n * j + i] = static_cast<uint8_t>(std::clamp(q, 0, nmax));
    }
  }
  return fit;
}

// Q4_K's and Q5_K's 12 bytes of 6-bit scale and min codes (unpack_k_scale reads them).
void pack_k_scales(const KSuperFit& fit, uint8_t* packed) {
  std::memset(packed, 0, kKScaleBytes);
  for (int j = 0; j < 8; ++j) {
    const uint8_t ls = fit.sc[j], lm = fit.m[j];
    if (j < 4) {
      packed[j] |= ls;
      packed[j + 4] |= lm;
    } else {
      packed[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
      packed[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
}

// Q4_K and Q5_K: the fit of 8 sub-blocks of 32, its d, dmin and scales stored.
template <typename Block>
void quantize_k_nibbles_head(const float* x, int nmax, Block& b, uint8_t* L) {
  const KSuperFit fit = quantize_k_asymmetric(x, 8, nmax, 63, L);
  b.d = fit.d, b.dmin = fit.dmin;
  pack_k_scales(fit, b.scales);
}

// Packs 256 codes 0..15 (low nibbles of L) as the K formats store them.
void pack_k_nibbles(const uint8_t* L, uint8_t* qs) {
  for (int j = 0; j < kQkK; j += 64, qs += 32)
    for (int l = 0; l < 32; ++l) qs[l] = static_cast<uint8_t>((L[j + l] & 0xF) | ((L[j + l + 32] & 0xF) << 4));
}

}  // namespace

namespace {

// Q4_K and Q5_K: per 64 elements two sub-blocks of 32 share 32 bytes of low nibbles;
// Q5_K adds each element's fifth bit from qh (bit 2j or 2j + 1 of qh[l]).
template <typename Block, bool kFifthBit>
void dequantize_row_k_nibbles(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const Block*>(src);
  for (int64_t i = 0; i < n / kQkK; ++i) {
    float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    const uint8_t* q = b[i].qs;
    for (int j = 0; j < kQkK / 64; ++j, q += 32) {
      for (int half = 0; half < 2; ++half) {
        uint8_t sc, m;
        unpack_k_scale(b[i].scales, 2 * j + half, &sc, &m);
        const float scale = d * sc, offset = dmin * m;
        for (int l = 0; l < 32; ++l) {
          int code = half == 0 ? q[l] & 0xF : q[l] >> 4;
          if constexpr (kFifthBit) code |= ((b[i].qh[l] >> (2 * j + half)) & 1) << 4;
          *dst++ = scale * static_cast<float>(code) - offset;
        }
      }
    }
  }
}

}  // namespace

void dequantize_row_q4_k(const void* src, float* dst, int64_t n) {
  dequantize_row_k_nibbles<BlockQ4_K, false>(src, dst, n);
}

void dequantize_row_q5_k(const void* src, float* dst, int64_t n) {
  dequantize_row_k_nibbles<BlockQ5_K, true>(src, dst, n);
}

void dequantize_row_q2_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ2_K*>(src);
  for (int64_t i = 0; i < n / kQkK; ++i, dst += kQkK) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int p = 0; p < kQkK; ++p) {
      const uint8_t sm = b[i].scales[p / 16];
      dst[p] = d * static_cast<float>(sm & 0xF) * static_cast<float>(k_low_2_bits(b[i].qs, p)) -
               dmin * static_cast<float>(sm >> 4);
    }
  }
}

// Each half of 128 elements uses 64 bytes of ql and 32 of qh: element l (l < 32) of the
// four 32-element quarters takes ql[l] low, ql[l+32] low, ql[l] high, ql[l+32] high
// nibbles and bit pairs 0-1, 2-3, 4-5, 6-7 of qh[l]. Element p uses scales[p / 16].
void dequantize_row_q3_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ3_K*>(src);
  for (int64_t i = 0; i < n / kQkK; ++i, dst += kQkK) {
    const float d = f16_to_f32(b[i].d);
    for (int p = 0; p < kQkK; ++p)
      dst[p] = d * static_cast<float>(q3_k_scale(b[i], p / 16)) * static_cast<float>(q3_k_code(b[i], p) - 4);
  }
}

void dequantize_row_q6_k(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ6_K*>(src);
  for (int64_t i = 0; i < n / kQkK; ++i) {
    float d = f16_to_f32(b[i].d);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = b[i].ql + 64 * half;
      const uint8_t* qh = b[i].qh + 32 * half;
      const int8_t* sc = b[i].scales + 8 * half;
      float* y = dst + 128 * half;
      for (int l = 0; l < 32; ++l) {
        int is = l / 16;
        int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
        int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
        int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l] = d * sc[is + 0] * static_cast<float>(q1);
        y[l + 32] = d * sc[is + 2] * static_cast<float>(q2);
        y[l + 64] = d * sc[is + 4] * static_cast<float>(q3);
        y[l + 96] = d * sc[is + 6] * static_cast<float>(q4);
      }
    }
    dst += kQkK;
  }
}

void quantize_row_q2_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ2_K*>(dst);
  uint8_t L[kQkK];
  for (int64_t i = 0; i < n / kQkK; ++i, src += kQkK) {
    const KSuperFit fit = quantize_k_asymmetric(src, 16, 3, 15, L);
    b[i].d = fit.d, b[i].dmin = fit.dmin;
    for (int j = 0; j < 16; ++j) b[i].scales[j] = static_cast<uint8_t>(fit.sc[j] | fit.m[j] << 4);
    std::memset(b[i].qs, 0, sizeof(b[i].qs));
    for (int p = 0; p < kQkK; ++p) put_k_low_2_bits(b[i].qs, p, L[p]);
  }
}

void quantize_row_q4_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ4_K*>(dst);
  uint8_t L[kQkK];
  for (int64_t i = 0; i < n / kQkK; ++i, src += kQkK) {
    quantize_k_nibbles_head(src, 15, b[i], L);
    pack_k_nibbles(L, b[i].qs);
  }
}

void quantize_row_q5_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ5_K*>(dst);
  uint8_t L[kQkK];
  for (int64_t i = 0; i < n / kQkK; ++i, src += kQkK) {
    quantize_k_nibbles_head(src, 31, b[i], L);
    pack_k_nibbles(L, b[i].qs);
    std::memset(b[i].qh, 0, sizeof(b[i].qh));
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l) {
        b[i].qh[l] |= static_cast<uint8_t>((L[64 * j + l] >> 4) << (2 * j));
        b[i].qh[l] |= static_cast<uint8_t>((L[64 * j + 32 + l] >> 4) << (2 * j + 1));
      }
  }
}

namespace {

// The K-quants with a signed scale code per 16 (Q3_K, Q6_K), symmetric: in each 16 the
// element of largest magnitude maps to code_min, and the largest sub-block scale to
// scale_min. Writes the 16 scale codes and the codes less code_min (unsigned); returns d.
uint16_t quantize_signed_per_16(const float* src, int code_min, int scale_min, int* scale_codes, uint8_t* L) {
  float scales[16], max_scale = 0.0f;
  for (int ib = 0; ib < 16; ++ib) {
    scales[ib] = signed_absmax(src + 16 * ib, 16) / static_cast<float>(code_min);
    if (std::fabs(scales[ib]) > std::fabs(max_scale)) max_scale = scales[ib];
  }
  const float iscale = max_scale != 0.0f ? static_cast<float>(scale_min) / max_scale : 0.0f;
  const uint16_t d16 = f32_to_f16(max_scale != 0.0f ? 1.0f / iscale : 0.0f);
  const float d = f16_to_f32(d16);
  for (int ib = 0; ib < 16; ++ib) {
    scale_codes[ib] = std::clamp(nearest(iscale * scales[ib]), scale_min, -scale_min - 1);
    const float s = d * static_cast<float>(scale_codes[ib]);
    for (int k = 0; k < 16; ++k) {
      const int q = s != 0.0f ? nearest(src[16 * ib + k] / s) : 0;
      L[16 * ib + k] = static_cast<uint8_t>(std::clamp(q, code_min, -code_min - 1) - code_min);
    }
  }
  return d16;
}

}  // namespace

void quantize_row_q3_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ3_K*>(dst);
  for (int64_t i = 0; i < n / kQkK; ++i, src += kQkK) {
    int scales[16];
    uint8_t L[kQkK];
    b[i].d = quantize_signed_per_16(src, -4, -32, scales, L);
    std::memset(b[i].scales, 0, sizeof(b[i].scales));
    for (int ib = 0; ib < 16; ++ib) {
      const auto sc = static_cast<unsigned>(scales[ib] + 32);
      b[i].scales[ib % 8] |= static_cast<uint8_t>((sc & 0xF) << (4 * (ib / 8)));
      b[i].scales[8 + ib % 4] |= static_cast<uint8_t>((sc >> 4) << (2 * (ib / 4)));
    }
    std::memset(b[i].qs, 0, sizeof(b[i].qs));
    std::memset(b[i].hmask, 0, sizeof(b[i].hmask));
    for (int p = 0; p < kQkK; ++p) {
      put_k_low_2_bits(b[i].qs, p, L[p]);
      b[i].hmask[p % 32] |= static_cast<uint8_t>((L[p] >> 2) << (p / 32));
    }
  }
}

void quantize_row_q6_k(const float* src, void* dst, int64_t n) {
  auto* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < n / kQkK; ++i, src += kQkK) {
    int scales[16];
    uint8_t L[kQkK];
    b[i].d = quantize_signed_per_16(src, -32, -128, scales, L);
    for (int ib = 0; ib < 16; ++ib) b[i].scales[ib] = static_cast<int8_t>(scales[ib]);
    for (int half = 0; half < 2; ++half) {
      uint8_t* ql = b[i].ql + 64 * half;
      uint8_t* qh = b[i].qh + 32 * half;
      const uint8_t* q = L + 128 * half;
      for (int l = 0; l < 32; ++l) {
        ql[l] = static_cast<uint8_t>((q[l] & 0xF) | ((q[l + 64] & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q[l] >> 4) | ((q[l + 32] >> 4) << 2) | ((q[l + 64] >> 4) << 4) |
                                     ((q[l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace tps
