// AVX-512 (F, BW, VL, VNNI) kernels: integer panel dot products with vpdpbusd, and
// float-weight tiles with FMA. Compiled with AVX-512 flags; only called when the CPU
// has them.

#include "kernels/matmul_avx512_headers.h"

namespace tps {

namespace {

// Block b's codes, scale and sums, one reduction at a time: what is left after the
// groups of 16 blocks.
void quantize_block(const float* x, int64_t b, int zero_point, const Q8Token& out) {
  const int64_t stride = out.stride;
  __m512 v0 = _mm512_loadu_ps(x + 32 * b), v1 = _mm512_loadu_ps(x + 32 * b + 16);
  float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
  float db = amax / 127.0f, id = db != 0.0f ? 1.0f / db : 0.0f;
  __m512 vid = _mm512_set1_ps(id);
  // Rounds to nearest even, as the scalar reference's nearbyint does.
  __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, vid)), q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, vid));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out.q + 32 * b * stride), _mm512_cvtsepi32_epi8(q0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out.q + 32 * b * stride + 16), _mm512_cvtsepi32_epi8(q1));
  out.set_block(b, db, _mm512_reduce_add_epi32(q0), _mm512_reduce_add_epi32(q1), zero_point);
}

// Lane i of the result: the 16 lanes of v[i] folded by op, for all 16 vectors at once.
// A transposing tree (each step pairs lanes of two vectors, then folds the pairs) takes
// 45 instructions, where 16 reductions take about 130 and each ends in a serial chain.
template <typename Op>
[[gnu::always_inline]] inline __m512 fold16(const __m512 (&v)[16], Op op) {
  __m512 pairs[8], quads[4], halves[2];
  for (int i = 0; i < 8; ++i)  // per 128 bits: v[2i] and v[2i + 1], 2 partials each
    pairs[i] = op(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  for (int i = 0; i < 4; ++i) {  // per 128 bits: v[4i .. 4i + 3], 1 partial each
    const __m512d a = _mm512_castps_pd(pairs[2 * i]), b = _mm512_castps_pd(pairs[2 * i + 1]);
    quads[i] = op(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  constexpr int kEven = _MM_SHUFFLE(2, 0, 2, 0), kOdd = _MM_SHUFFLE(3, 1, 3, 1);
  for (int i = 0; i < 2; ++i)  // 128-bit lanes 2j and 2j + 1 fold together
    halves[i] = op(_mm512_shuffle_f32x4(quads[2 * i], quads[2 * i + 1], kEven),
                   _mm512_shuffle_f32x4(quads[2 * i], quads[2 * i + 1], kOdd));
  return op(_mm512_shuffle_f32x4(halves[0], halves[1], kEven), _mm512_shuffle_f32x4(halves[0], halves[1], kOdd));
}

// Blocks b0 .. b0 + 15 (quantize_block's results): their maxima and code sums come out
// of fold16 as one vector each.
void quantize_16_blocks(const float* x, int64_t b0, int zero_point, const Q8Token& out) {
  const int64_t stride = out.stride;
  const float* xb = x + 32 * b0;
  __m512 v[16];
  for (int i = 0; i < 16; ++i)
    v[i] = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xb + 32 * i)), _mm512_abs_ps(_mm512_loadu_ps(xb + 32 * i + 16)));
  const __m512 d = _mm512_div_ps(fold16(v, [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); }),
                                 _mm512_set1_ps(127.0f));
  const __m512 id = _mm512_maskz_div_ps(_mm512_cmpneq_ps_mask(d, _mm512_setzero_ps()), _mm512_set1_ps(1.0f), d);
  alignas(64) float ids[16];
  _mm512_store_ps(ids, id);
  __m512i sums[2];
  for (int h = 0; h < 2; ++h) {  // the first and the second 16 codes of each block
    for (int i = 0; i < 16; ++i) {
      const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(xb + 32 * i + 16 * h), _mm512_set1_ps(ids[i])));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out.q + 32 * (b0 + i) * stride + 16 * h), _mm512_cvtsepi32_epi8(q));
      v[i] = _mm512_castsi512_ps(q);
    }
    sums[h] = _mm512_castps_si512(fold16(v, [](__m512 a, __m512 b) {
      return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(a), _mm512_castps_si512(b)));
    }));
  }
  alignas(64) float ds[16];
  alignas(64) int32_t s[2][16];
  _mm512_store_ps(ds, d);
  _mm512_store_si512(s[0], sums[0]);
  _mm512_store_si512(s[1], sums[1]);
  for (int64_t i = 0; i < 16; ++i) out.set_block(b0 + i, ds[i], s[0][i], s[1][i], zero_point);
}

void quantize_activations(const float* x, int64_t cols, int zero_point, const Q8Token& out) {
  const int64_t blocks = cols / 32;
  int64_t b = 0;
  for (; b + 16 <= blocks; b += 16) quantize_16_blocks(x, b, zero_point, out);
  for (; b < blocks; ++b) quantize_block(x, b, zero_point, out);
}

#include "kernels/matmul_avx512_panels.inc"
#include "kernels/panel_widening.inc"
#include "kernels/bf16_column_pair.inc"

// The vector helpers float_panels (matmul_kernels.h) needs, 16 floats wide. Two panels
// take 14 tokens: 28 accumulators and 2 weight vectors of 32 registers, the activations
// as the FMAs' embedded broadcasts (measured with BM_FloatPanelTile: 14 tokens 0-10 %
// faster than 12, with a broadcast register then).
struct FloatVec512 {
  using Vec = __m512;
  static constexpr int kWidth = 16, kPairTokens = 14, kTileTokens = 14;
  static constexpr bool kOwnBroadcasts = true;
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec fma(Vec a, Vec b, Vec acc) { return _mm512_fmadd_ps(a, b, acc); }
  static Vec broadcast(const float* p) { return _mm512_set1_ps(*p); }
  template <GgmlType kType>
  static Vec weights(const uint8_t* p) {
    return float_weights16<kType>(p);
  }
  static void store(float* y, Vec v, int n) { _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << n) - 1), v); }
};

// float_panel_tile (matmul_kernels.h) in bf16, with vdpbf16ps (32 products an
// instruction, twice an f32 FMA's 16): P panels, tokens j0 .. j0 + T - 1 of a.
// Each row's sum is one chain over the column pairs in order whatever T and P are.
template <GgmlType kType, int P, int T>
[[gnu::target("avx512bf16")]] void bf16_panel_tile(const uint8_t* const (&panel)[P], int64_t cols,
                                                   const Bf16PairTokens& a, int64_t j0, float* y, int64_t rows,
                                                   const int64_t (&r0)[P]) {
  constexpr int64_t kColBytes = kPanelRows * (kType == GgmlType::kF32 ? 4 : 2);
  __m512 acc[P][T];
  for (int p = 0; p < P; ++p)
    for (int t = 0; t < T; ++t) acc[p][t] = _mm512_setzero_ps();
  const uint32_t* xk = a.pairs + j0;
  for (int64_t k = 0; k < cols; k += 2, xk += a.stride) {
    __m512bh w[P];
    for (int p = 0; p < P; ++p) {
      for (int64_t line = 0; line < 2 * kColBytes; line += 64)  // the two columns' lines
        __builtin_prefetch(panel[p] + k * kColBytes + kPrefetchBytes + line, 0, 3);
      const uint8_t* column = panel[p] + k * kColBytes;
      w[p] = bf16_column_pair<kType>(column, k + 1 < cols ? column + kColBytes : nullptr);
    }
    for (int t = 0; t < T; ++t) {
      const __m512bh x = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(xk[t])));
      for (int p = 0; p < P; ++p) acc[p][t] = _mm512_dpbf16_ps(acc[p][t], w[p], x);
    }
  }
  for (int p = 0; p < P; ++p) {
    const int64_t n = std::min<int64_t>(kPanelRows, rows - r0[p]);
    if (n <= 0) continue;
    for (int t = 0; t < T; ++t) FloatVec512::store(y + (a.t0 + j0 + t) * rows + r0[p], acc[p][t], static_cast<int>(n));
  }
}

// IsaKernels::float_panels_bf16: in the tiles float_panels takes.
void bf16_panels(GgmlType type, const uint8_t* panel0, const uint8_t* panel1, int64_t cols, const Bf16PairTokens& a,
                 float* y, int64_t rows, int64_t r0, int64_t r1) {
  constexpr int kTokens = FloatVec512::kPairTokens;
  with_float_type(type, [&](auto kType) {
    float_tiles<kTokens, kTokens>(panel0, panel1, a, r0, r1,
                                  [&](auto panels, auto tokens, const auto& p, int64_t j0, const auto& r) {
                                    bf16_panel_tile<decltype(kType)::value, decltype(panels)::value,
                                                    decltype(tokens)::value>(p, cols, a, j0, y, rows, r);
                                  });
  });
}

constexpr IsaKernels kKernels{quantize_activations, panels_for, float_panels<FloatVec512>, FloatVec512::kTileTokens,
                              widen_panel<ZmmBytes>, bf16_panels};

}  // namespace

const IsaKernels* isa_kernels_avx512() { return &kKernels; }

}  // namespace tps
