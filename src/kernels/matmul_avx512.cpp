// AVX-512 (F, BW, VL, VNNI) kernels: integer panel dot products with vpdpbusd, and
// float-weight tiles with FMA. Compiled with AVX-512 flags; only called when the CPU
// has them.

#include "kernels/matmul_avx512_headers.h"

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

#include "kernels/matmul_avx512_panels.inc"

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

constexpr IsaKernels kKernels{quantize_activations, panels_for<VnniDot>, float_panels<FloatVec512>};

}  // namespace

const IsaKernels* isa_kernels_avx512() { return &kKernels; }

}  // namespace tps
