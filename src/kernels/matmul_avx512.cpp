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

constexpr IsaKernels kKernels{quantize_activations, panels_for<VnniDot>, float_panels<FloatVec512>, widen_panel<ZmmBytes>};

}  // namespace

const IsaKernels* isa_kernels_avx512() { return &kKernels; }

}  // namespace tps
