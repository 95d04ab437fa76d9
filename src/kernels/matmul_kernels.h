#pragma once
// The per-ISA pieces behind matmul(). The driver (matmul.cpp) quantizes activations,
// splits rows over threads and feeds 16-row weight panels or float rows to the
// kernels of the chosen ISA; the scalar path is the plain dequantize-and-dot loop.
#include <algorithm>
#include <cstdint>

#include "kernels/matmul.h"
#include "kernels/packed_weights.h"

namespace tps {

// Where one token's quantized activations go: block b (of 32) of its codes at
// q + 32 b stride, its scale at d[b stride], and per 16 or 32 elements the sums the
// weights' zero points need, also `stride` apart.
struct Q8Token {
  int8_t* q;
  float* d;
  float* sum32;      // d * (sum of the codes) per 32: the term of a bias per block
  int32_t* zero16;   // -zero_point * (sum of the codes) per 16 and per 32: a fixed
  int32_t* zero32;   // zero point's term, added to the integer dot exactly
  int64_t stride;
};

// Activations quantized to int8 per block of 32 (the integer kernels' other operand),
// with a scale d per block and the sums of Q8Token. Tokens are stored in groups of
// kGroup, the kernels' token tile: within a group, the same block of every token sits
// together, so a tile reads all its tokens through one pointer at fixed offsets (a
// pointer per token would not fit in the registers). Group g holds tokens
// [kGroup g, kGroup g + n) with n = group_size(); its token j's 32-block b has codes at
//   q + kGroup g cols + b (32 n) + 32 j,  scale d[kGroup g nb32 + b n + j],
// sum32 and zero32 like d, and zero16[kGroup g nb16 + b16 n + j].
struct Q8Activations {
  static constexpr int64_t kGroup = 8;
  int64_t n_tokens = 0, cols = 0;
  int8_t* q = nullptr;
  float* d = nullptr;
  float* sum32 = nullptr;
  int32_t* zero16 = nullptr;
  int32_t* zero32 = nullptr;

  int64_t group_start(int64_t t) const { return t - t % kGroup; }
  int64_t group_size(int64_t t) const { return std::min(kGroup, n_tokens - group_start(t)); }
  // Token t's places in the group layout.
  Q8Token token(int64_t t) const {
    const int64_t g0 = group_start(t), j = t - g0, nb32 = cols / 32, nb16 = cols / 16;
    return {q + g0 * cols + 32 * j, d + g0 * nb32 + j, sum32 + g0 * nb32 + j, zero16 + g0 * nb16 + j,
            zero32 + g0 * nb32 + j, group_size(t)};
  }
};

// The most tokens IsaKernels::panel_pair takes: its tile keeps T x 2 accumulators.
constexpr int64_t kMaxPairTokens = 4;

struct IsaKernels {
  // Quantizes one token's cols (a multiple of 32) activations into `out`, with the
  // zero sums for weights whose codes have the fixed zero point `zero_point`.
  void (*quantize_activations)(const float* x, int64_t cols, int zero_point, const Q8Token& out);
  // y[t * rows + r0 + i] for i < min(16, rows - r0), tokens [t0, t1) of a.
  void (*panel)(const uint8_t* panel, const PanelLayout& layout, const Q8Activations& a, int64_t t0, int64_t t1,
                float* y, int64_t rows, int64_t r0);
  // Tokens [t0, t1), at most kMaxPairTokens of one group, through two panels at once
  // (rows r0.. and r1..): two memory streams keep more reads in flight than one, so
  // decode streams faster. nullptr where an ISA's kernels do not have it.
  void (*panel_pair)(const uint8_t* panel0, const uint8_t* panel1, const PanelLayout& layout, const Q8Activations& a,
                     int64_t t0, int64_t t1, float* y, int64_t rows, int64_t r0, int64_t r1);
  // Float weights (F32, F16, BF16): output rows [r0, r1) for every token.
  void (*float_rows)(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int64_t r0, int64_t r1);
};

// How far ahead of the weights being read the SIMD kernels prefetch.
constexpr size_t kPrefetchBytes = 4096;

// One token (decode) through float-type weights, the same for every vector width. Each
// thread reads two sequential streams, its rows' two halves side by side: rows of one
// stream are contiguous, and two streams keep more reads in flight than one (as
// IsaKernels::panel_pair). Each row sums its columns in one chain, in the order the
// ISA's many-token tiles do, so a token's outputs do not depend on the batch it is in;
// the kStreams rows' chains are what hides the FMA latency. V holds an ISA's vector
// helpers: kWidth floats per Vec, zero(), fma(a, b, acc), sum(v), and
// weights<kType>(row, c, n) / activations(x, c, n) for the n <= kWidth elements at c
// (fewer than kWidth: a zero-filled tail).
template <typename V, GgmlType kType, int kStreams>
void float_gemv_streams(const WeightMatrix& w, const float* x, float* y, const int64_t (&r)[kStreams]) {
  constexpr int64_t kBytes = kType == GgmlType::kF32 ? 4 : 2;  // per weight
  const int64_t cols = w.cols;
  const uint8_t* row[kStreams];
  typename V::Vec acc[kStreams];
#pragma GCC unroll 8
  for (int s = 0; s < kStreams; ++s) {
    row[s] = w.data + r[s] * w.row_bytes;
    acc[s] = V::zero();
  }
  int64_t c = 0;
  for (; c + V::kWidth <= cols; c += V::kWidth) {
    const typename V::Vec xv = V::activations(x, c, V::kWidth);
#pragma GCC unroll 8
    for (int s = 0; s < kStreams; ++s) acc[s] = V::fma(V::template weights<kType>(row[s], c, V::kWidth), xv, acc[s]);
    if ((c * kBytes) % 64 == 0)
#pragma GCC unroll 8
      for (int s = 0; s < kStreams; ++s) __builtin_prefetch(row[s] + c * kBytes + kPrefetchBytes, 0, 3);
  }
  if (c < cols) {
    const int n = static_cast<int>(cols - c);
    const typename V::Vec xv = V::activations(x, c, n);
#pragma GCC unroll 8
    for (int s = 0; s < kStreams; ++s) acc[s] = V::fma(V::template weights<kType>(row[s], c, n), xv, acc[s]);
  }
#pragma GCC unroll 8
  for (int s = 0; s < kStreams; ++s) y[r[s]] = V::sum(acc[s]);
}

// Four rows from each half at a time: eight chains cover FMA latency x pipes.
template <typename V, GgmlType kType>
void float_gemv_rows(const WeightMatrix& w, const float* x, float* y, int64_t r0, int64_t r1) {
  const int64_t half = (r1 - r0) / 2;
  int64_t r = r0;
  for (; r + 4 <= r0 + half; r += 4)
    float_gemv_streams<V, kType, 8>(w, x, y, {r, r + 1, r + 2, r + 3, r + half, r + half + 1, r + half + 2, r + half + 3});
  for (; r < r0 + half; ++r) float_gemv_streams<V, kType, 2>(w, x, y, {r, r + half});
  if ((r1 - r0) % 2 != 0) float_gemv_streams<V, kType, 1>(w, x, y, {r1 - 1});
}

// nullptr when this build has no kernels for the ISA.
const IsaKernels* isa_kernels_avx2();
const IsaKernels* isa_kernels_avx_vnni();
const IsaKernels* isa_kernels_avx512();

// The kernels of the best ISA at or below `isa` that this build has (nullptr: scalar).
const IsaKernels* kernels_for(Isa isa);

// The scalar reference of quantize_activations (SIMD versions must match it exactly).
void quantize_activations_scalar(const float* x, int64_t cols, int zero_point, const Q8Token& out);

void matmul_scalar(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

}  // namespace tps
