// AVX-512 (F, BW, VL, VNNI) kernels: integer panel dot products with vpdpbusd, and
// float-weight tiles with FMA. Compiled with AVX-512 flags; only called when the CPU
// has them.

// GCC 12's AVX-512 headers build casts and reductions from self-initialized
// "undefined" vectors, which -Wall reports once inlined: a spurious warning.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // clang (the fuzz build) has no such warning and says so
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/matmul_kernels.h"

namespace tps {

namespace {

void quantize_activations(const float* x, int64_t cols, int zero_point, const Q8Token& out) {
  const int64_t stride = out.stride;
  for (int64_t b = 0; b < cols / 32; ++b) {
    __m512 v0 = _mm512_loadu_ps(x + 32 * b), v1 = _mm512_loadu_ps(x + 32 * b + 16);
    float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
    __m512 vid = _mm512_set1_ps(id);
    // Rounds to nearest even, as the scalar reference's nearbyint does.
    __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, vid)), q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, vid));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out.q + 32 * b * stride), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out.q + 32 * b * stride + 16), _mm512_cvtsepi32_epi8(q1));
    int s0 = _mm512_reduce_add_epi32(q0), s1 = _mm512_reduce_add_epi32(q1);
    out.d[b * stride] = db;
    out.sum32[b * stride] = db * static_cast<float>(s0 + s1);
    out.zero16[2 * b * stride] = -zero_point * s0;
    out.zero16[(2 * b + 1) * stride] = -zero_point * s1;
    out.zero32[b * stride] = -zero_point * (s0 + s1);
  }
}

inline __m512i broadcast_u32(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// 16 rows x T tokens over a whole panel, for each of P panels: the block's codes are
// unpacked once into registers and used by all T tokens; per block and token, kBlock/4
// vpdpbusd give 16 row sums, then scale and bias in float. T > 8 spans two token
// groups (Q8Activations) and needs t0 at a group start. P = 2 (a few tokens) reads two
// panels far apart side by side: two memory streams keep more reads in flight than
// one (decode).
template <int kBits, int kBlock, bool kBias, bool kK, int T, int P = 1>
void panel_tile(const uint8_t* const (&panels)[P], const Q8Activations& a, int64_t t0,
                float* y, int64_t rows, const int64_t (&r0)[P]) {
  static_assert(P == 1 || T <= kMaxPairTokens, "several panels at once only for a few tokens: registers");
  constexpr int kSpan = (T + Q8Activations::kGroup - 1) / Q8Activations::kGroup;  // token groups
  constexpr int kGroups = kBlock / 4;
  constexpr size_t kCodeBytes = kPanelRows * kBlock * kBits / 8;
  constexpr size_t kBlockBytes = kCodeBytes + (kK ? 32 : 32 + (kBias ? 32 : 0));
  const int64_t cols = a.cols, nblocks = cols / kBlock;
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  // Group h's share of the tile, tokens t0 + 8h + i, are tokens j0 + i of a group of
  // group_n (Q8Activations); j0 is 0 but in a tile of one group.
  // Per block and token, the bias term's activation sum (kBias, kK) or the fixed zero
  // point's integer term, which starts the dot.
  using Sum = std::conditional_t<kBias || kK, float, int32_t>;
  const int8_t* xq[kSpan];
  const float* xd[kSpan];
  const Sum* xs[kSpan];
  int64_t group_n[kSpan];
  for (int h = 0; h < kSpan; ++h) {
    const Q8Token at = a.token(t0 + Q8Activations::kGroup * h);
    group_n[h] = at.stride;
    xq[h] = at.q;
    xd[h] = at.d;
    if constexpr (kBias || kK) xs[h] = at.sum32;
    else xs[h] = kBlock == 32 ? at.zero32 : at.zero16;
  }
  const uint8_t* panel[P];
  __m512 super_d[P], super_neg_dmin[P], out[P][T];
  for (int p = 0; p < P; ++p) {
    panel[p] = panels[p];
    super_d[p] = super_neg_dmin[p] = _mm512_setzero_ps();
    for (int t = 0; t < T; ++t) out[p][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < nblocks; ++b) {
    const int64_t e = b * kBlock, db = e / 32;
    const int8_t* qb_group[kSpan];
    const float* scale_group[kSpan];
    const Sum* sum_group[kSpan];
    for (int h = 0; h < kSpan; ++h) {
      qb_group[h] = xq[h] + db * 32 * group_n[h] + e % 32;
      scale_group[h] = xd[h] + db * group_n[h];
      sum_group[h] = xs[h] + b * group_n[h];
    }
#pragma GCC unroll 2
    for (int p = 0; p < P; ++p) {
      // Several tokens' broadcast activations, kept from one panel for the next, would
      // not fit the registers (GCC spills them): each panel loads its own.
      if constexpr (T > 1)
        for (int h = 0; h < kSpan; ++h) asm("" : "+r"(qb_group[h]));
      // Panels stream from memory while the tile computes: prefetch well ahead.
      // Measured on 5632x2048 Q4_0 (2 threads): +40 % at 8 tokens, +27 % at 16, +8 % at
      // 64. With two streams, each as far ahead: TinyLlama's Q4_0 matrices in a row
      // streamed 5 % faster than at half the distance, and no slower than at twice.
#pragma GCC unroll 8
      for (size_t line = 0; line < kBlockBytes; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(panel[p]) + kPrefetchBytes + line, _MM_HINT_T0);
      if constexpr (kK) {
        if (b % PanelLayout::kSuperBlocks == 0) {
          super_d[p] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel[p])));
          super_neg_dmin[p] = _mm512_sub_ps(
              _mm512_setzero_ps(), _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(panel[p] + 32))));
          panel[p] += PanelLayout::kSuperHeader;
        }
      }
      // Codes pb, scales ps (some blocks hold their scales first).
      const uint8_t* pb = panel[p] + PanelLayout::code_offset(kBlockBytes, b);
      const uint8_t* ps = panel[p] + PanelLayout::scale_offset(kBlockBytes, kCodeBytes, b);
      __m512i w[kGroups];
      if constexpr (kBits == 4) {
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          __m512i v = _mm512_loadu_si512(pb + 64 * k);
          w[k] = _mm512_and_si512(v, low4);
          w[k + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
        }
      } else {
#pragma GCC unroll 8
        for (int k = 0; k < kGroups; ++k) w[k] = _mm512_loadu_si512(pb + 64 * k);
      }
      __m512 s, m = _mm512_setzero_ps();
      if constexpr (kK) {
        auto u8_to_ps = [](const uint8_t* q) {
          return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))));
        };
        s = _mm512_mul_ps(u8_to_ps(ps), super_d[p]);
        m = _mm512_mul_ps(u8_to_ps(ps + 16), super_neg_dmin[p]);
      } else if constexpr (kBias) {
        s = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ps)));
        m = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ps + 32)));
      } else {
        s = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ps)));
      }
      panel[p] += kBlockBytes;
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const int h = t / Q8Activations::kGroup, i = t % Q8Activations::kGroup;
        const int8_t* qb = qb_group[h] + 32 * i;
        const float xd_t = scale_group[h][i];
        const Sum xs_t = sum_group[h][i];
        // The dot starts from the zero point's term: with it the codes' offset costs
        // no float op per token and block (the FMA pipes are shared with vpdpbusd).
        __m512i acc = kBias || kK ? _mm512_setzero_si512() : _mm512_set1_epi32(static_cast<int32_t>(xs_t));
        // Two chains halve the dependency depth (measured: as fast as one at 16 tokens,
        // 3 % faster for tiles with a bias).
        __m512i acc1 = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int k = 0; k < kGroups; k += 2) {
          acc = _mm512_dpbusd_epi32(acc, w[k], broadcast_u32(qb + 4 * k));
          acc1 = _mm512_dpbusd_epi32(acc1, w[k + 1], broadcast_u32(qb + 4 * k + 4));
        }
        acc = _mm512_add_epi32(acc, acc1);
        const __m512 dot = _mm512_cvtepi32_ps(acc);
        out[p][t] = _mm512_fmadd_ps(dot, _mm512_mul_ps(s, _mm512_set1_ps(xd_t)), out[p][t]);
        if constexpr (kBias || kK) out[p][t] = _mm512_fmadd_ps(m, _mm512_set1_ps(xs_t), out[p][t]);
      }
    }
  }
  for (int p = 0; p < P; ++p) {
    const __mmask16 mask = static_cast<__mmask16>((1u << std::min<int64_t>(kPanelRows, rows - r0[p])) - 1);
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + (t0 + t) * rows + r0[p], mask, out[p][t]);
  }
}

template <int kBits, int kBlock, bool kBias, bool kK, int T>
void one_panel_tile(const uint8_t* panel, const Q8Activations& a, int64_t t0, float* y, int64_t rows, int64_t r0) {
  panel_tile<kBits, kBlock, kBias, kK, T>({panel}, a, t0, y, rows, {r0});
}

template <int kBits, int kBlock, bool kBias, bool kK>
void panel_tokens(const uint8_t* panel, const Q8Activations& a, int64_t t0, int64_t t1,
                  float* y, int64_t rows, int64_t r0) {
  constexpr int kTile = 8;
  int64_t t = t0;
  // Two groups at once halve the unpacking and loading of codes per token (measured:
  // TinyLlama pp512 Q4_0 and Q8_0 2-6 % faster than with 8-token tiles; Q4_K pp512
  // 3-5 % and 16-sequence decode 4-9 %).
  if (a.group_start(t) == t)
    for (; t + 2 * kTile <= t1; t += 2 * kTile)
      one_panel_tile<kBits, kBlock, kBias, kK, 2 * kTile>(panel, a, t, y, rows, r0);
  for (; t + kTile <= t1; t += kTile) one_panel_tile<kBits, kBlock, kBias, kK, kTile>(panel, a, t, y, rows, r0);
  switch (t1 - t) {
    case 0: break;
    case 1: one_panel_tile<kBits, kBlock, kBias, kK, 1>(panel, a, t, y, rows, r0); break;
    case 2: one_panel_tile<kBits, kBlock, kBias, kK, 2>(panel, a, t, y, rows, r0); break;
    case 3: one_panel_tile<kBits, kBlock, kBias, kK, 3>(panel, a, t, y, rows, r0); break;
    case 4: one_panel_tile<kBits, kBlock, kBias, kK, 4>(panel, a, t, y, rows, r0); break;
    case 5: one_panel_tile<kBits, kBlock, kBias, kK, 5>(panel, a, t, y, rows, r0); break;
    case 6: one_panel_tile<kBits, kBlock, kBias, kK, 6>(panel, a, t, y, rows, r0); break;
    default: one_panel_tile<kBits, kBlock, kBias, kK, 7>(panel, a, t, y, rows, r0); break;
  }
}

// The kernel shape of a panel layout.
template <int kBitsV, int kBlockV, bool kBiasV, bool kKV = false>
struct Shape {
  static constexpr int kBits = kBitsV, kBlock = kBlockV;
  static constexpr bool kBias = kBiasV, kK = kKV;
};

// fn(Shape<...>{}) for the layout's shape.
template <typename F>
void with_shape(const PanelLayout& layout, F&& fn) {
  if (layout.k_scales) {
    if (layout.code_bits == 4) fn(Shape<4, 32, true, true>{});
    else fn(Shape<8, 32, true, true>{});
  } else if (layout.code_bits == 4) {
    if (layout.has_bias) fn(Shape<4, 32, true>{});
    else fn(Shape<4, 32, false>{});
  } else if (layout.block == 16) {
    fn(Shape<8, 16, false>{});
  } else if (layout.has_bias) {
    fn(Shape<8, 32, true>{});
  } else {
    fn(Shape<8, 32, false>{});
  }
}

void panel(const uint8_t* panel, const PanelLayout& layout, const Q8Activations& a, int64_t t0, int64_t t1, float* y,
           int64_t rows, int64_t r0) {
  with_shape(layout, [&](auto shape) {
    using S = decltype(shape);
    panel_tokens<S::kBits, S::kBlock, S::kBias, S::kK>(panel, a, t0, t1, y, rows, r0);
  });
}

void panel_pair(const uint8_t* panel0, const uint8_t* panel1, const PanelLayout& layout, const Q8Activations& a,
                int64_t t0, int64_t t1, float* y, int64_t rows, int64_t r0, int64_t r1) {
  with_shape(layout, [&](auto shape) {
    using S = decltype(shape);
    auto tile = [&](auto tokens) {
      panel_tile<S::kBits, S::kBlock, S::kBias, S::kK, decltype(tokens)::value, 2>({panel0, panel1}, a, t0, y,
                                                                                    rows, {r0, r1});
    };
    switch (t1 - t0) {
      case 1: tile(std::integral_constant<int, 1>{}); break;
      case 2: tile(std::integral_constant<int, 2>{}); break;
      case 3: tile(std::integral_constant<int, 3>{}); break;
      default: tile(std::integral_constant<int, 4>{}); break;
    }
  });
}

// The vector helpers float_panels (matmul_kernels.h) needs, 16 floats wide. Two panels
// take 14 tokens: 28 accumulators, 2 weight vectors and a broadcast of 32 registers
// (measured with BM_FloatPanelTile: 14 tokens 0-10 % faster than 12).
struct FloatVec512 {
  using Vec = __m512;
  static constexpr int kWidth = 16, kPairTokens = 14, kTileTokens = 14;
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec fma(Vec a, Vec b, Vec acc) { return _mm512_fmadd_ps(a, b, acc); }
  static Vec broadcast(const float* p) { return _mm512_set1_ps(*p); }
  template <GgmlType kType>
  static Vec weights(const uint8_t* p) {
    if constexpr (kType == GgmlType::kF32) {
      return _mm512_loadu_ps(p);
    } else if constexpr (kType == GgmlType::kF16) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    } else {  // BF16: the top half of an f32
      __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
  }
  static void store(float* y, Vec v, int n) { _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << n) - 1), v); }
};

constexpr IsaKernels kKernels{quantize_activations, panel, panel_pair, float_panels<FloatVec512>};

}  // namespace

const IsaKernels* isa_kernels_avx512() { return &kKernels; }

}  // namespace tps
