// AVX2 (+FMA, F16C) kernels: the AVX-512 design on 256-bit vectors. Without VNNI the
// integer dot is vpmaddubsw (u8 x s8 -> i16 pairs) then vpmaddwd; i16 sums stay
// below 32767 because codes are small (see kPairsPerWiden) and |activation| <= 127.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/matmul_kernels.h"
#include "quant/quantize.h"

namespace tps {

namespace {

inline int hsum_epi32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

inline float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax_ps(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

void quantize_activations(const float* x, int64_t cols, int8_t* q, float* d, float* sum16, float* sum32,
                          int64_t stride) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  for (int64_t b = 0; b < cols / 32; ++b) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(x + 32 * b + 8 * i);
      amax = _mm256_max_ps(amax, _mm256_and_ps(v[i], abs_mask));
    }
    float db = hmax_ps(amax) / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
    __m256 vid = _mm256_set1_ps(id);
    __m256i qi[4];
    for (int i = 0; i < 4; ++i) qi[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], vid));
    __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(qi[0], qi[1]), _mm256_packs_epi32(qi[2], qi[3]));
    p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + 32 * b * stride), p);
    int s0 = hsum_epi32(_mm256_add_epi32(qi[0], qi[1])), s1 = hsum_epi32(_mm256_add_epi32(qi[2], qi[3]));
    d[b * stride] = db;
    sum16[2 * b * stride] = db * static_cast<float>(s0);
    sum16[(2 * b + 1) * stride] = db * static_cast<float>(s1);
    sum32[b * stride] = db * static_cast<float>(s0 + s1);
  }
}

inline __m256i broadcast_u32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// How the integer dot treats codes: kUnsigned (codes <= 63: several vpmaddubsw results
// add up in i16 before widening) or kSigned (Q8_0: code - 128 as signed bytes, by the
// abs/sign trick, widened after every product).
enum class CodeMode { kUnsigned4, kUnsigned8, kSigned8 };

// Rows [8h, 8h + 8) of a 16-row panel x T tokens.
template <CodeMode kMode, int kBlock, bool kBias, bool kK, int T>
void panel_tile(const uint8_t* panel, const PanelLayout& layout, const Q8Activations& a, int64_t t0, float* y,
                int64_t rows, int64_t r0, int h) {
  constexpr int kBits = kMode == CodeMode::kUnsigned4 ? 4 : 8;
  constexpr int kGroups = kBlock / 4;
  constexpr int kPairsPerWiden = kMode == CodeMode::kUnsigned4 ? 8 : kMode == CodeMode::kUnsigned8 ? 2 : 1;
  constexpr size_t kCodeBytes = kPanelRows * kBlock * kBits / 8;
  constexpr size_t kBlockBytes = kCodeBytes + (kK ? 32 : 32 + (kBias ? 32 : 0));
  const int64_t cols = a.cols, nb32 = cols / 32, nblocks = cols / kBlock;
  __m256 super_d = _mm256_setzero_ps(), super_neg_dmin = _mm256_setzero_ps();
  const __m256 neg_offset = _mm256_set1_ps(kMode == CodeMode::kSigned8 ? 0.0f : -static_cast<float>(layout.offset));
  const __m256i low4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8(-128);
  // The tile's tokens t0 + t are tokens j0 + t of one group of group_n (Q8Activations).
  const int64_t g0 = a.group_start(t0), j0 = t0 - g0, group_n = a.group_size(t0);
  const int8_t* xq = a.q + g0 * cols + 32 * j0;
  const float* xd = a.d + g0 * nb32 + j0;
  const float* xs = kBlock == 32 ? a.sum32 + g0 * nb32 + j0 : a.sum16 + g0 * (cols / 16) + j0;
  __m256 out[T];
  for (int t = 0; t < T; ++t) out[t] = _mm256_setzero_ps();
  panel += 32 * h;
  for (int64_t b = 0; b < nblocks; ++b, panel += kBlockBytes) {
    // As in the AVX-512 kernels: panels stream from memory while the tile computes.
    // The first half's pass brings the panel in; the second finds it in cache.
    if (h == 0)
      for (size_t line = 0; line < kBlockBytes; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(panel) + kPrefetchBytes + line, _MM_HINT_T0);
    if constexpr (kK) {
      if (b % PanelLayout::kSuperBlocks == 0) {
        const uint8_t* header = panel - 32 * h + 16 * h;
        super_d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(header)));
        super_neg_dmin = _mm256_sub_ps(_mm256_setzero_ps(),
                                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(header + 32))));
        panel += PanelLayout::kSuperHeader;
      }
    }
    __m256i w[kGroups];
    if constexpr (kBits == 4) {
      for (int k = 0; k < 4; ++k) {
        __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + 64 * k));
        w[k] = _mm256_and_si256(v, low4);
        w[k + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
      }
    } else {
      for (int k = 0; k < kGroups; ++k) w[k] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel + 64 * k));
    }
    __m256 s, m;
    if constexpr (kK) {
      const uint8_t* sp = panel - 32 * h + kCodeBytes + 8 * h;
      auto u8_to_ps = [](const uint8_t* p) {
        return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
      };
      s = _mm256_mul_ps(u8_to_ps(sp), super_d);
      m = _mm256_mul_ps(u8_to_ps(sp + 16), super_neg_dmin);
    } else {
      const uint8_t* sp = panel - 32 * h + kCodeBytes + 16 * h;
      s = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sp)));
      if constexpr (kBias) m = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sp + 32)));
      else m = _mm256_mul_ps(s, neg_offset);
    }
    const int64_t e = b * kBlock, db = e / 32;
    const int8_t* qb = xq + db * 32 * group_n + e % 32;
    for (int t = 0; t < T; ++t) {
      __m256i acc = _mm256_setzero_si256();
      for (int k0 = 0; k0 < kGroups; k0 += kPairsPerWiden) {
        __m256i pairs = _mm256_setzero_si256();
        for (int k = k0; k < k0 + kPairsPerWiden; ++k) {
          __m256i xv = broadcast_u32(qb + 32 * t + 4 * k);
          if constexpr (kMode == CodeMode::kSigned8) {
            __m256i ws = _mm256_xor_si256(w[k], flip);
            pairs = _mm256_maddubs_epi16(_mm256_abs_epi8(ws), _mm256_sign_epi8(xv, ws));
          } else {
            pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(w[k], xv));
          }
        }
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
      }
      out[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(acc), _mm256_mul_ps(s, _mm256_set1_ps(xd[db * group_n + t])), out[t]);
      if constexpr (kMode != CodeMode::kSigned8) out[t] = _mm256_fmadd_ps(m, _mm256_set1_ps(xs[b * group_n + t]), out[t]);
    }
  }
  int64_t n = std::min<int64_t>(8, rows - r0 - 8 * h);
  if (n <= 0) return;
  for (int t = 0; t < T; ++t) {
    float* dst = y + (t0 + t) * rows + r0 + 8 * h;
    if (n == 8) {
      _mm256_storeu_ps(dst, out[t]);
    } else {
      alignas(32) float tmp[8];
      _mm256_store_ps(tmp, out[t]);
      std::copy(tmp, tmp + n, dst);
    }
  }
}

template <CodeMode kMode, int kBlock, bool kBias, bool kK = false>
void panel_tokens(const uint8_t* panel, const PanelLayout& layout, const Q8Activations& a, int64_t t0, int64_t t1,
                  float* y, int64_t rows, int64_t r0) {
  constexpr int kTile = 4;
  for (int h = 0; h < 2; ++h) {
    int64_t t = t0;
    for (; t + kTile <= t1; t += kTile) panel_tile<kMode, kBlock, kBias, kK, kTile>(panel, layout, a, t, y, rows, r0, h);
    switch (t1 - t) {
      case 0: break;
      case 1: panel_tile<kMode, kBlock, kBias, kK, 1>(panel, layout, a, t, y, rows, r0, h); break;
      case 2: panel_tile<kMode, kBlock, kBias, kK, 2>(panel, layout, a, t, y, rows, r0, h); break;
      default: panel_tile<kMode, kBlock, kBias, kK, 3>(panel, layout, a, t, y, rows, r0, h); break;
    }
  }
}

void panel(const uint8_t* panel, const PanelLayout& layout, const Q8Activations& a, int64_t t0, int64_t t1, float* y,
           int64_t rows, int64_t r0) {
  if (layout.k_scales) {
    if (layout.code_bits == 4) panel_tokens<CodeMode::kUnsigned4, 32, true, true>(panel, layout, a, t0, t1, y, rows, r0);
    else panel_tokens<CodeMode::kUnsigned8, 32, true, true>(panel, layout, a, t0, t1, y, rows, r0);
  } else if (layout.code_bits == 4) {
    if (layout.has_bias) panel_tokens<CodeMode::kUnsigned4, 32, true>(panel, layout, a, t0, t1, y, rows, r0);
    else panel_tokens<CodeMode::kUnsigned4, 32, false>(panel, layout, a, t0, t1, y, rows, r0);
  } else if (layout.block == 16) {
    panel_tokens<CodeMode::kUnsigned8, 16, false>(panel, layout, a, t0, t1, y, rows, r0);
  } else if (layout.has_bias) {
    panel_tokens<CodeMode::kUnsigned8, 32, true>(panel, layout, a, t0, t1, y, rows, r0);
  } else if (layout.offset == 128) {
    panel_tokens<CodeMode::kSigned8, 32, false>(panel, layout, a, t0, t1, y, rows, r0);
  } else {
    panel_tokens<CodeMode::kUnsigned8, 32, false>(panel, layout, a, t0, t1, y, rows, r0);
  }
}

// 8 weights of a float-type row as f32; n < 8 reads a zero-padded tail.
template <GgmlType kType>
inline __m256 load_weights(const uint8_t* row, int64_t c, int n) {
  if (n < 8) {
    alignas(32) float tmp[8] = {};
    for (int i = 0; i < n; ++i) {
      if constexpr (kType == GgmlType::kF32) tmp[i] = reinterpret_cast<const float*>(row)[c + i];
      else if constexpr (kType == GgmlType::kF16) tmp[i] = f16_to_f32(reinterpret_cast<const uint16_t*>(row)[c + i]);
      else tmp[i] = bf16_to_f32(reinterpret_cast<const uint16_t*>(row)[c + i]);
    }
    return _mm256_load_ps(tmp);
  }
  if constexpr (kType == GgmlType::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + c);
  } else if constexpr (kType == GgmlType::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + c)));
  } else {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const uint16_t*>(row) + c));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

inline __m256 load_x(const float* x, int64_t c, int n) {
  if (n < 8) {
    alignas(32) float tmp[8] = {};
    std::copy(x + c, x + c + n, tmp);
    return _mm256_load_ps(tmp);
  }
  return _mm256_loadu_ps(x + c);
}

// One 8-column step of an R x T tile (n < 8: a zero-padded tail).
template <GgmlType kType, int R, int T>
[[gnu::always_inline]] inline void float_step(__m256 (&acc)[R][T], const uint8_t* const (&rows)[R],
                                              const float* const (&xs)[T], int64_t c, int n) {
  __m256 wv[R];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i) wv[i] = load_weights<kType>(rows[i], c, n);
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    __m256 xv = load_x(xs[t], c, n);
    #pragma GCC unroll 8
    for (int i = 0; i < R; ++i) acc[i][t] = _mm256_fmadd_ps(wv[i], xv, acc[i][t]);
  }
}

template <GgmlType kType, int R, int T>
void float_tile(const WeightMatrix& w, const float* x, float* y, int64_t r, int64_t t0) {
  const int64_t cols = w.cols;
  const uint8_t* rows[R];
  const float* xs[T];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i) rows[i] = w.data + (r + i) * w.row_bytes;
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) xs[t] = x + (t0 + t) * cols;
  __m256 acc[R][T];
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[i][t] = _mm256_setzero_ps();
  int64_t c = 0;
  constexpr int64_t kBytes = kType == GgmlType::kF32 ? 4 : 2;  // per weight
  for (; c + 8 <= cols; c += 8) {
    float_step<kType, R, T>(acc, rows, xs, c, 8);
    // As in the AVX-512 version: R rows stream at once, prefetch ahead of them.
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) _mm_prefetch(reinterpret_cast<const char*>(rows[i]) + c * kBytes + 512, _MM_HINT_T0);
  }
  if (c < cols) float_step<kType, R, T>(acc, rows, xs, c, static_cast<int>(cols - c));
  #pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) y[(t0 + t) * w.rows + r + i] = hsum_ps(acc[i][t]);
}

// The vector helpers float_gemv_rows (matmul_kernels.h) needs, 8 floats wide.
struct Vec256 {
  using Vec = __m256;
  static constexpr int kWidth = 8;
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec fma(Vec a, Vec b, Vec acc) { return _mm256_fmadd_ps(a, b, acc); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static float sum(Vec v) { return hsum_ps(v); }
  template <GgmlType kType>
  static Vec weights(const uint8_t* row, int64_t c, int n) { return load_weights<kType>(row, c, n); }
  static Vec activations(const float* x, int64_t c, int n) { return load_x(x, c, n); }
};

template <GgmlType kType>
void float_rows_typed(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int64_t r0, int64_t r1) {
  if (n_tokens == 1) return float_gemv_rows<Vec256, kType>(w, x, y, r0, r1);
  constexpr int64_t kChunk = 32;
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kChunk) {
    int64_t t1 = std::min(n_tokens, t0 + kChunk);
    int64_t r = r0;
    for (; r + 4 <= r1; r += 4) {
      int64_t t = t0;
      for (; t + 2 <= t1; t += 2) float_tile<kType, 4, 2>(w, x, y, r, t);
      if (t < t1) float_tile<kType, 4, 1>(w, x, y, r, t);
    }
    for (; r < r1; ++r)
      for (int64_t t = t0; t < t1; ++t) float_tile<kType, 1, 1>(w, x, y, r, t);
  }
}

void float_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int64_t r0, int64_t r1) {
  switch (w.type) {
    case GgmlType::kF32: float_rows_typed<GgmlType::kF32>(w, x, n_tokens, y, r0, r1); return;
    case GgmlType::kF16: float_rows_typed<GgmlType::kF16>(w, x, n_tokens, y, r0, r1); return;
    default: float_rows_typed<GgmlType::kBF16>(w, x, n_tokens, y, r0, r1); return;
  }
}

constexpr IsaKernels kKernels{quantize_activations, panel, nullptr, float_rows};

}  // namespace

const IsaKernels* isa_kernels_avx2() { return &kKernels; }

}  // namespace tps
