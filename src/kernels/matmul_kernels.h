#pragma once
// The per-ISA pieces behind matmul(). The driver (matmul.cpp) quantizes activations,
// splits rows over threads and feeds 16-row weight panels or float rows to the
// kernels of the chosen ISA; the scalar path is the plain dequantize-and-dot loop.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/packed_weights.h"
#include "kernels/unmerged.h"

namespace tps {

// What a kernel shape (Shape<...> of each ISA's tiles) names instead of positional
// booleans: a block's bias, a fixed zero point or one per (row, block) (Q4_1, Q5_1 and
// the K-quants); and its scales, f16 per block or K-quant codes under a super-block
// header of d and dmin (Q4_K, Q5_K).
enum class Bias : bool { kZeroPoint, kPerBlock };
// A block's scale: an f16, or a code times its super-block's d (kKQuant: u8 scale and
// min codes, Q4_K and Q5_K, or 4-bit ones in one byte, Q2_K; kI8: an i8 scale code,
// Q6_K, Q3_K and IQ4_XS).
enum class Scales : uint8_t { kF16, kKQuant, kI8 };
// The PanelLayout a kernel shape reads (its zero point plays no part in the sizes).
constexpr PanelLayout shape_layout(int code_bits, int block, Bias bias, Scales scales, int stored_bits, bool iq4) {
  return {.code_bits = code_bits,
          .block = block,
          .has_bias = bias == Bias::kPerBlock,
          .k_scales = scales == Scales::kKQuant,
          .stored_bits = stored_bits,
          .i8_scales = scales == Scales::kI8,
          .iq4_values = iq4};
}

// Where one token's quantized activations go: block b (of 32) of its codes at
// q + 32 b stride, its scale at d[b stride], and per 16 or 32 elements the sums the
// weights' zero points need, also `stride` apart.
struct Q8Token {
  int8_t* q;
  float* d;
  float* sum32;      // d * (sum of the codes) per 32 and per 16: the term of a bias per
  float* sum16;      // block (of 32, or of 16: Q2_K)
  int32_t* zero16;   // -zero_point * (sum of the codes) per 16 and per 32: a fixed
  int32_t* zero32;   // zero point's term, added to the integer dot exactly
  int64_t stride;

  // Block b's scale d and sums, from the sums s0, s1 of its first and second 16 codes
  // (the SIMD quantizers' common tail; the scalar reference spells it out on its own).
  // (always inlined, like every member here: an out-of-line copy compiled in an ISA's
  // file could be the one the linker keeps for all; scripts/check_isa_objects.sh)
  [[gnu::always_inline]] void set_block(int64_t b, float d_b, int s0, int s1, int zero_point) const {
    d[b * stride] = d_b;
    sum32[b * stride] = d_b * static_cast<float>(s0 + s1);
    sum16[2 * b * stride] = d_b * static_cast<float>(s0);
    sum16[(2 * b + 1) * stride] = d_b * static_cast<float>(s1);
    zero16[2 * b * stride] = -zero_point * s0;
    zero16[(2 * b + 1) * stride] = -zero_point * s1;
    zero32[b * stride] = -zero_point * (s0 + s1);
  }
};

// Activations quantized to int8 per block of 32 (the integer kernels' other operand),
// with a scale d per block and the sums of Q8Token. Tokens are stored in groups of
// kGroup: within a group, the same block of every token sits together, so a tile of a
// group's tokens reads them all through one pointer at fixed offsets (a pointer per
// token would not fit in the registers). 12: two tiles of the two-panel AVX-512
// kernel, three of the AVX2 one. Group g holds tokens [kGroup g, kGroup g + n) with
// n = group_size(); its token j's 32-block b has codes at
//   q + kGroup g cols + b (32 n) + 32 j,  scale d[kGroup g nb32 + b n + j],
// sum32 and zero32 like d, and sum16 and zero16 at [kGroup g nb16 + b16 n + j].
struct Q8Activations {
  static constexpr int64_t kGroup = 12;
  int64_t n_tokens = 0, cols = 0;
  int8_t* q = nullptr;
  float* d = nullptr;
  float* sum32 = nullptr;
  float* sum16 = nullptr;
  int32_t* zero16 = nullptr;
  int32_t* zero32 = nullptr;

  [[gnu::always_inline]] int64_t group_start(int64_t t) const { return t - t % kGroup; }
  [[gnu::always_inline]] int64_t group_size(int64_t t) const { return std::min(kGroup, n_tokens - group_start(t)); }
  // Token t's places in the group layout.
  [[gnu::always_inline]] Q8Token token(int64_t t) const {
    const int64_t g0 = group_start(t), j = t - g0, nb32 = cols / 32, nb16 = cols / 16;
    return {q + g0 * cols + 32 * j, d + g0 * nb32 + j,        sum32 + g0 * nb32 + j, sum16 + g0 * nb16 + j,
            zero16 + g0 * nb16 + j,        zero32 + g0 * nb32 + j, group_size(t)};
  }
};

// A group of at most IsaKernels::float_group tokens' activations, interleaved for the
// float-weight tiles: token t0 + j's element k at x[k * stride + j], for j < n (a tile
// broadcasts each token's element from one pointer at fixed offsets).
struct InterleavedTokens {
  const float* x;
  int64_t stride, n, t0;
};

// The same group for FloatMath::kBf16 (matmul.h): token t0 + j's elements 2p and 2p + 1,
// rounded to bf16, in the low and high halves of pairs[p * stride + j] (the high one 0
// past an odd last column): the operand a tile broadcasts to vdpbf16ps.
struct Bf16PairTokens {
  const uint32_t* pairs;
  int64_t stride, n, t0;
};

// All n tokens of a matmul for the bf16 tiles (IsaKernels::float_panel_bf16_tiles),
// token by token: token t's elements 2p and 2p + 1, rounded to bf16, in the low and
// high halves of pairs[t * stride + p]. stride is a multiple of kStepPairs (one tile
// product's depth), and the pairs past the columns are 0. After the last token, 16
// tokens' room of slack: the tiles read whole tiles of token rows.
struct Bf16TokenRows {
  static constexpr int64_t kStepPairs = 16;
  const uint32_t* pairs;
  int64_t stride, n;
};

// The AMX kernels take a matmul of at least this many tokens through int8 tiles (where
// they are faster at all: int8_tiles_from); fewer (decode) stay on vpdpbusd, where one
// tile row per token would waste the tile unit.
constexpr int64_t kAmxMinTokens = 5;

struct IsaKernels {
  // Quantizes one token's cols (a multiple of 32) activations into `out`, with the
  // zero sums for weights whose codes have the fixed zero point `zero_point`.
  void (*quantize_activations)(const float* x, int64_t cols, int zero_point, const Q8Token& out);
  // Tokens [t0, t1) of a through one or two 16-row panels (panel1 may be nullptr), into
  // y[t * rows + r] for rows r0.. and r1.. (up to 16 each, as far as `rows` goes). Two
  // panels at once share each token's activations (prefill) and read two memory
  // streams side by side, which keeps more reads in flight (decode).
  void (*panels)(const uint8_t* panel0, const uint8_t* panel1, const PanelLayout& layout, const Q8Activations& a,
                 int64_t t0, int64_t t1, float* y, int64_t rows, int64_t r0, int64_t r1);
  // Float weights (F32, F16, BF16): the tokens of a through one or two 16-row panels
  // (panel1 may be nullptr) of a matrix of `cols` columns, into rows r0.. and r1..
  void (*float_panels)(GgmlType type, const uint8_t* panel0, const uint8_t* panel1, int64_t cols,
                       const InterleavedTokens& a, float* y, int64_t rows, int64_t r0, int64_t r1);
  // Tokens per interleaved group of float_panels (and float_panels_bf16): one tile's
  // worth, so that each tile reads only its own tokens' cache lines. AVX2 F16 GEMMs of
  // 512 tokens took 15-25 % less time in groups of its 6-token tile than of 14 (Zen 3).
  int64_t float_group;
  // A compact panel of layout L (L.compact()) of `cols` columns at src into the wide
  // one `panels` reads (L.wide_panel_bytes(cols) bytes at dst).
  void (*widen_panel)(const PanelLayout& L, const uint8_t* src, int64_t cols, uint8_t* dst);
  // float_panels under FloatMath::kBf16; nullptr in ISAs without it. Call it only where
  // the CPU has AVX512-BF16 (cpu_has_avx512_bf16).
  void (*float_panels_bf16)(GgmlType type, const uint8_t* panel0, const uint8_t* panel1, int64_t cols,
                            const Bf16PairTokens& a, float* y, int64_t rows, int64_t r0, int64_t r1) = nullptr;
  // FloatMath::kBf16 through bf16 tiles (AMX-BF16), in kernels that have them (else
  // nullptr, and float_panels_bf16 serves), in two steps. bf16_pair_panel: one 16-row
  // panel of `cols` columns rounded and paired into the tiles' B layout, `steps` steps
  // of kStepPairs pairs (zero past its columns) at `paired` (64-byte aligned, 64 bytes
  // per pair). float_panel_bf16_tiles: tokens [t0, t1) of a through such a paired panel
  // (steps = a.stride / kStepPairs), into rows r0.. (up to 16, as far as `rows` goes).
  void (*bf16_pair_panel)(GgmlType type, const uint8_t* panel, int64_t cols, int64_t steps,
                          uint32_t* paired) = nullptr;
  void (*float_panel_bf16_tiles)(const uint32_t* paired, const Bf16TokenRows& a, int64_t t0, int64_t t1, float* y,
                                 int64_t rows, int64_t r0) = nullptr;
  // Integer weights through int8 tiles (AMX), in kernels that have them (else nullptr,
  // and `panels` serves), in two steps. int8_unpack_panel: one 16-row panel of `layout`
  // and `cols` columns into the tiles' layout at `unpacked` (64-byte aligned,
  // int8_tile_bytes(cols)). int8_panel_tiles: tokens [t0, t1) of a (t0 at a token
  // group's start; a matmul of at least int8_tiles_from tokens) through one or two
  // unpacked panels (unpacked1 may be nullptr), into rows r0.. and r1.. a.q must have
  // 32 * Q8Activations::kGroup readable bytes after the last token's codes: the tiles
  // read whole tiles of token rows.
  void (*int8_unpack_panel)(const uint8_t* panel, const PanelLayout& layout, int64_t cols,
                            uint8_t* unpacked) = nullptr;
  void (*int8_panel_tiles)(const uint8_t* unpacked0, const uint8_t* unpacked1, const PanelLayout& layout,
                           const Q8Activations& a, int64_t t0, int64_t t1, float* y, int64_t rows, int64_t r0,
                           int64_t r1) = nullptr;
  // The fewest tokens of a matmul that int8_panel_tiles takes (the dispatcher's AMX
  // kernels: from where they timed faster than AVX-512 on this CPU, amx_calibration.h).
  int64_t int8_tiles_from = kAmxMinTokens;
  // Ends the tile configuration the tile kernels above leave loaded from one call to
  // the next (a thread calls it when its share of a matmul is done); nullptr without.
  void (*release_tiles)() = nullptr;

  // Whether a matmul of `tokens` tokens on integer weights goes through int8_panel_tiles.
  bool int8_tiles_take(int64_t tokens) const { return int8_panel_tiles != nullptr && tokens >= int8_tiles_from; }
};

// How far ahead of the weights being read the SIMD kernels prefetch.
constexpr size_t kPrefetchBytes = 4096;

// One column of float_panel_tile: each panel's 16 weights at column k times each
// token's activation (xk: the tile's first token's, the others follow).
template <typename V, GgmlType kType, int P, int T>
[[gnu::always_inline]] inline void float_panel_step(typename V::Vec (&acc)[P][kPanelRows / V::kWidth][T],
                                                    const uint8_t* const (&panel)[P], const float* xk, int64_t k) {
  constexpr int kVecs = kPanelRows / V::kWidth;
  constexpr size_t kBytes = kType == GgmlType::kF32 ? 4 : 2;  // per weight
  typename V::Vec w[P][kVecs];
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) w[p][v] = V::template weights<kType>(panel[p] + (k * kPanelRows + v * V::kWidth) * kBytes);
  // Where V::kOwnBroadcasts, each panel reads the activations through its own pointer
  // (unmerged), so each FMA takes its own embedded broadcast: the 5-token F16 tile
  // 1.22x on Zen 4.
  const float* xp[P];
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p) xp[p] = V::kOwnBroadcasts && p > 0 ? unmerged(xk) : xk;
#pragma GCC unroll 16
  for (int t = 0; t < T; ++t) {
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p)
#pragma GCC unroll 2
      for (int v = 0; v < kVecs; ++v) acc[p][v][t] = V::fma(w[p][v], V::broadcast(xp[p] + t), acc[p][v][t]);
  }
}

// Float weights through P 16-row panels (packed_weights.h) for tokens t0 .. t0 + T - 1
// of a.  Per column, each panel's 16 weights are loaded (and widened) once and multiplied
// by every token's broadcast activation: an outer product, so no sum is horizontal.
// Each row's sum is one chain over the columns in order whatever T and P are, so a
// token's outputs do not depend on the batch it is in. V holds an ISA's vector helpers:
// kWidth floats per Vec, zero(), fma(a, b, acc), broadcast(p), weights<kType>(p) for
// the kWidth panel elements at p, store(y, v, n) of the first n lanes, and
// kOwnBroadcasts: whether each panel's FMAs load their own broadcasts (AVX-512).
template <typename V, GgmlType kType, int P, int T>
void float_panel_tile(const uint8_t* const (&panel)[P], int64_t cols, const InterleavedTokens& a, int64_t j0, float* y,
                      int64_t rows, const int64_t (&r0)[P]) {
  constexpr int kVecs = kPanelRows / V::kWidth;
  constexpr int64_t kColBytes = kPanelRows * (kType == GgmlType::kF32 ? 4 : 2);
  typename V::Vec acc[P][kVecs][T];
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v)
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) acc[p][v][t] = V::zero();
  const float* xk = a.x + j0;
  for (int64_t k = 0; k < cols; ++k, xk += a.stride) {
    // Panels stream from memory while the tile computes (the hardware prefetcher alone
    // leaves bandwidth unused): prefetch well ahead.
#pragma GCC unroll 4
    for (int p = 0; p < P; ++p) __builtin_prefetch(panel[p] + k * kColBytes + kPrefetchBytes, 0, 3);
    float_panel_step<V, kType, P, T>(acc, panel, xk, k);
  }
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p)
#pragma GCC unroll 2
    for (int v = 0; v < kVecs; ++v) {
      const int64_t n = std::min<int64_t>(V::kWidth, rows - r0[p] - v * V::kWidth);
      if (n <= 0) continue;
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t)
        V::store(y + (a.t0 + j0 + t) * rows + r0[p] + v * V::kWidth, acc[p][v][t], static_cast<int>(n));
    }
}

// f(std::integral_constant<int, n>) for 1 <= n <= kMax.
template <int kMax, typename F>
[[gnu::always_inline]] inline void with_token_count(int64_t n, F&& f) {
  if constexpr (kMax > 1)
    if (n < kMax) return with_token_count<kMax - 1>(n, f);
  f(std::integral_constant<int, kMax>{});
}

// Up to kGroup tokens of one group (Q8Activations) from token t0, block by block: the
// codes of block b of the tile's token i at q(b) + 32 i, its scale at d(b)[i], its Sum
// at sum(b)[i]. S: a kernel's shape (kBlock, kBias, kK, and Sum: float for the bias
// term's activation sum, int32_t for a fixed zero point's integer term).
template <typename S>
struct TileTokens {
  TileTokens(const Q8Activations& a, int64_t t0) : at(a.token(t0)) {
    if constexpr (S::kBias || S::kK) sums = S::kBlock == 32 ? at.sum32 : at.sum16;
    else sums = S::kBlock == 32 ? at.zero32 : at.zero16;
  }
  const int8_t* q(int64_t b) const { return at.q + b * S::kBlock / 32 * 32 * at.stride + b * S::kBlock % 32; }
  const float* d(int64_t b) const { return at.d + b * S::kBlock / 32 * at.stride; }
  const typename S::Sum* sum(int64_t b) const { return sums + b * at.stride; }

  Q8Token at;
  const typename S::Sum* sums;
};

// fn(first token, tile tokens) over tokens [t0, t1) of a in tiles of at most kTile
// tokens (an integral_constant) that do not cross a token group.
template <int kTile, typename F>
void for_each_tile(const Q8Activations& a, int64_t t0, int64_t t1, F&& fn) {
  for (int64_t t = t0; t < t1;) {
    const int64_t n = std::min({t1 - t, a.group_start(t) + a.group_size(t) - t, int64_t{kTile}});
    with_token_count<kTile>(n, [&](auto tokens) { fn(t, tokens); });
    t += n;
  }
}

// The tokens of a group `a` (InterleavedTokens, Bf16PairTokens) through one or two
// float panels in tiles, as IsaKernels::float_panels and float_panels_bf16 take them:
// up to kPairTokens through both panels at once (decode: two memory streams), else
// kTileTokens at a time through each. tile(panels, tokens, p, j0, r) runs one tile:
// panels and tokens are std::integral_constants (P panels, T tokens), p the P panels,
// j0 its first token, r their first rows.
template <int kPairTokens, int kTileTokens, typename Tokens, typename Tile>
void float_tiles(const uint8_t* panel0, const uint8_t* panel1, const Tokens& a, int64_t r0, int64_t r1, Tile&& tile) {
  if (panel1 != nullptr && a.n <= kPairTokens) {
    with_token_count<kPairTokens>(a.n, [&](auto tokens) {
      const uint8_t* const both[2] = {panel0, panel1};
      const int64_t rows[2] = {r0, r1};
      tile(std::integral_constant<int, 2>{}, tokens, both, int64_t{0}, rows);
    });
    return;
  }
  for (const auto& panel_row : {std::pair{panel0, r0}, std::pair{panel1, r1}}) {
    // Not a structured binding: clang before 16 cannot capture one in the lambda.
    const uint8_t* const one[1] = {panel_row.first};
    const int64_t rows[1] = {panel_row.second};
    if (one[0] == nullptr) continue;
    for (int64_t j = 0; j < a.n; j += kTileTokens)
      with_token_count<kTileTokens>(std::min<int64_t>(kTileTokens, a.n - j), [&](auto tokens) {
        tile(std::integral_constant<int, 1>{}, tokens, one, j, rows);
      });
  }
}

// f(std::integral_constant<GgmlType, t>) for a float weight type t: F32, F16 or BF16.
template <typename F>
void with_float_type(GgmlType type, F&& f) {
  switch (type) {
    case GgmlType::kF32: return f(std::integral_constant<GgmlType, GgmlType::kF32>{});
    case GgmlType::kF16: return f(std::integral_constant<GgmlType, GgmlType::kF16>{});
    default: return f(std::integral_constant<GgmlType, GgmlType::kBF16>{});
  }
}

// IsaKernels::float_panels for one ISA's vector helpers V, which also say how many
// tokens its tiles take: kPairTokens through two panels at once, kTileTokens through one.
template <typename V>
void float_panels(GgmlType type, const uint8_t* panel0, const uint8_t* panel1, int64_t cols, const InterleavedTokens& a,
                  float* y, int64_t rows, int64_t r0, int64_t r1) {
  with_float_type(type, [&](auto kType) {
    float_tiles<V::kPairTokens, V::kTileTokens>(
        panel0, panel1, a, r0, r1, [&](auto panels, auto tokens, const auto& p, int64_t j0, const auto& r) {
          float_panel_tile<V, decltype(kType)::value, decltype(panels)::value, decltype(tokens)::value>(p, cols, a, j0,
                                                                                                        y, rows, r);
        });
  });
}

// nullptr when this build has no kernels for the ISA.
const IsaKernels* isa_kernels_avx2();
const IsaKernels* isa_kernels_avx_vnni();
const IsaKernels* isa_kernels_avx512();
// The AVX-512 kernels with GFNI (4-bit codes unpacked in fewer instructions): the
// dispatcher's AVX-512 choice where the CPU has GFNI.
const IsaKernels* isa_kernels_avx512_gfni();
const IsaKernels* isa_kernels_amx();
// Bytes of IsaKernels::int8_panel_tiles's room per panel and column: a block of 16
// columns unpacks to a 256-byte B tile and 128 bytes of scales (kBlock 32: 512 and 128
// per 32 columns).
constexpr int64_t kInt8TileBytesPerColumn = 24;
constexpr size_t int8_tile_bytes(int64_t cols) { return static_cast<size_t>(kInt8TileBytesPerColumn * cols); }
// The AMX kernels over the software model of the tiles (amx_tiles.h): needs AVX-512
// only; for tests.
const IsaKernels* isa_kernels_amx_emulated();

// Whether kernels k give exactly the AVX-512 kernels' integer-path outputs for every
// weight type with integer panels, through every tile shape the drivers form (needs
// AVX-512). The AMX kernels were written against a model of the tiles (amx_tiles.h):
// the dispatcher runs this on the hardware before it trusts them.
bool agrees_with_avx512(const IsaKernels& k);
// Whether k's bf16 tiles (true where it has none) give the bf16-rounded products of
// every float weight type through every tile arrangement, within the rounding of f32
// sums (needs AVX512-BF16): the dispatcher's check before float weights take them.
bool bf16_tiles_agree(const IsaKernels& k);
// Token counts that make the int8 tiles form every tile height: what
// agrees_with_avx512 and the AMX tests run.
const std::vector<int64_t>& tile_check_token_counts();
// The checks' fixed operands: n values in [-2.1, 2.1] (weights) and [-2.5, 2.5]
// (activations), no two neighbours alike, so a wrong block, pair or tile row shows.
std::vector<float> check_weights(size_t n);
std::vector<float> check_activations(size_t n);
// A rows x cols matrix of `type` quantized from check_weights: its rows' bytes, back to
// back (row_bytes(type, cols) each).
std::vector<uint8_t> check_matrix(GgmlType type, int64_t rows, int64_t cols);

// The kernels of the best ISA at or below `isa` that this build has (nullptr: scalar).
const IsaKernels* kernels_for(Isa isa);

// matmul_parts() through the kernels k (nullptr: scalar) instead of those of the
// active ISA, and with float weights in `math` (which the CPU must run): for tests of
// kernels the CPU cannot run as an ISA (the AMX model) and for checks that must not
// change the process's choice.
void matmul_parts_with(const IsaKernels* k, std::initializer_list<MatmulPart> parts, const float* x, int64_t n_tokens,
                       ThreadPool& pool, FloatMath math = active_float_math());

// The scalar reference of quantize_activations (SIMD versions must match it exactly).
void quantize_activations_scalar(const float* x, int64_t cols, int zero_point, const Q8Token& out);

void matmul_scalar(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

}  // namespace tps
