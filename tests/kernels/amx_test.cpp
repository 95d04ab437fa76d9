// The AMX integer kernels: on the software model of the tiles wherever AVX-512 runs,
// and on the hardware where the CPU has AMX; and the model itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "kernels/amx_calibration.h"
#include "kernels/amx_tiles.h"
#include "kernels/matmul.h"
#include "kernels/matmul_kernels.h"
#include "quant/quantize.h"
#include "support/bf16_reference.h"
#include "support/random_weights.h"

namespace tps {
namespace {

constexpr GgmlType kQuantizedTypes[] = {GgmlType::kQ8_0,   GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,
                                        GgmlType::kQ5_1,   GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                                        GgmlType::kIQ4_NL, GgmlType::kIQ4_XS, GgmlType::kQ3_K, GgmlType::kQ2_K};

// (on the hardware rather than the model, weight type)
class AmxPanels : public testing::TestWithParam<std::tuple<bool, GgmlType>> {};

// The integer dots are exact through tiles and through vpdpbusd alike, and the float
// steps after them are the same code: outputs must agree bit for bit, for every tile
// the driver forms (one or two token groups, partial ones, packed or on the fly).
TEST_P(AmxPanels, MatchTheAvx512KernelsBitForBit) {
  auto [hardware, type] = GetParam();
  if (!cpu_supports(Isa::kAvx512)) GTEST_SKIP() << "CPU lacks avx512";
  // On the hardware whenever the CPU has it, also where the self-check disagreed
  // (then the dispatcher stays off AMX, and this test says where).
  if (hardware && (amx_status() == AmxStatus::kAbsent || amx_status() == AmxStatus::kNotGranted))
    GTEST_SKIP() << "CPU lacks amx, or Linux did not grant its tile state";
  if (hardware) {
    EXPECT_NE(amx_status(), AmxStatus::kDisagrees) << "the self-check failed on this CPU";
  }
  const IsaKernels* amx = hardware ? isa_kernels_amx() : isa_kernels_amx_emulated();
  ThreadPool pool(2);
  const int64_t rows = 40;
  // An even number of blocks, and where the type's blocks allow, an odd one and one
  // block alone: the int8 tiles alternate C tiles by block.
  std::vector<int64_t> widths = {512};
  if (type_info(type).block_size == 32) widths.insert(widths.end(), {96, 32});
  std::vector<int64_t> counts = {1, 4, 5, 80, 200};
  for (int64_t t : tile_check_token_counts()) counts.push_back(t);
  for (int64_t cols : widths) {
    const auto m = test::random_matrix(type, rows, cols, 7, pool);
    for (bool packed : {true, false}) {
      WeightMatrix w = m->w;
      if (!packed) w.packed = nullptr;
      for (int64_t tokens : counts) {
        const auto x = test::gaussian(static_cast<size_t>(tokens * cols), static_cast<uint32_t>(tokens));
        std::vector<float> want(static_cast<size_t>(rows * tokens)), got(want.size(), NAN);
        matmul_parts_with(isa_kernels_avx512(), {{&w, want.data()}}, x.data(), tokens, pool);
        matmul_parts_with(amx, {{&w, got.data()}}, x.data(), tokens, pool);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << cols << " columns, packed " << packed << ", " << tokens << " tokens, output "
                                     << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ModelAndHardware, AmxPanels,
                         testing::Combine(testing::Bool(), testing::ValuesIn(kQuantizedTypes)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "hardware_" : "model_") +
                                  type_name(std::get<1>(info.param));
                         });

// Long rows: the int8 tiles unpack stretches of panels that fit in L2 (16384 columns:
// 2 panels) and pass chunks of tokens over them (60 tokens); 4 panels and 200 tokens
// cross both seams bit for bit, in tiles of 12 tokens and of 6 (bias formats).
TEST(AmxPanels, MatchTheAvx512KernelsAcrossStretchesAndTokenChunks) {
  if (!cpu_supports(Isa::kAvx512)) GTEST_SKIP() << "CPU lacks avx512";
  ThreadPool pool(1);  // one thread's range: all 4 panels
  const int64_t rows = 56, cols = 16384, tokens = 200;
  const auto x = test::gaussian(static_cast<size_t>(tokens * cols), 61);
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ4_K}) {
    const auto m = test::random_matrix(type, rows, cols, 62, pool);
    std::vector<float> want(static_cast<size_t>(rows * tokens)), got(want.size(), NAN);
    matmul_parts_with(isa_kernels_avx512(), {{&m->w, want.data()}}, x.data(), tokens, pool);
    matmul_parts_with(isa_kernels_amx_emulated(), {{&m->w, got.data()}}, x.data(), tokens, pool);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got[i], want[i]) << type_name(type) << ", output " << i;
  }
}

// The tiles load their configuration once per thread and matmul, whatever the panels
// and token tiles: 5 panels (int8: 2 pairs and one alone), 30 int8 tokens (tiles of 12,
// 12 and 6), 37 bf16 tokens (tiles of 16, 16 and 5). No tile state stays loaded after.
TEST(AmxTiles, ConfiguredOncePerThreadAndMatmul) {
  if (!cpu_supports(Isa::kAvx512)) GTEST_SKIP() << "CPU lacks avx512";
  ThreadPool pool(1);
  const int64_t rows = 80, cols = 256;
  for (auto [type, tokens, math] : {std::tuple{GgmlType::kQ4_0, 30, FloatMath::kF32},
                                    std::tuple{GgmlType::kF16, 37, FloatMath::kBf16}}) {
    if (math == FloatMath::kBf16 && !cpu_has_avx512_bf16()) continue;
    const auto m = test::random_matrix(type, rows, cols, 41, pool);
    const auto x = test::gaussian(static_cast<size_t>(tokens * cols), 42);
    std::vector<float> y(static_cast<size_t>(rows * tokens));
    const int64_t before = EmulatedTiles::configurations();
    matmul_parts_with(isa_kernels_amx_emulated(), {{&m->w, y.data()}}, x.data(), tokens, pool, math);
    EXPECT_EQ(EmulatedTiles::configurations() - before, 1) << type_name(type);
    EXPECT_THROW(EmulatedTiles::zero<0>(), Error) << type_name(type) << ": the tiles were not released";
  }
}

// The tiles take matmuls from where they timed faster: at both counts, from 5 tokens;
// at the many only, from 48; where not at the many (a noise-sized lead is not faster),
// none.
TEST(AmxCalibration, SendsMatmulsToTheTilesOnlyWhereTheyTimedFaster) {
  EXPECT_EQ(int8_tiles_from({1.6, 2.0}), kAmxMinTokens);
  EXPECT_EQ(int8_tiles_from({0.8, 1.3}), kManyTokensFrom);
  EXPECT_EQ(int8_tiles_from({1.3, 1.02}), 0);
  EXPECT_EQ(int8_tiles_from({0.5, 0.6}), 0);
}

// The timing runs both kernel sets (here the model of the tiles: whichever wins, the
// figures must be real ratios), and int8_tiles_from routes matmuls below it to the
// AVX-512 kernels and the rest to the tiles.
TEST(AmxCalibration, TimesBothAndRoutesByTokenCount) {
  if (!cpu_supports(Isa::kAvx512)) GTEST_SKIP() << "CPU lacks avx512";
  const Int8TileSpeedups s = time_int8_tiles(*isa_kernels_amx_emulated());
  EXPECT_TRUE(std::isfinite(s.few) && s.few > 0) << s.few;
  EXPECT_TRUE(std::isfinite(s.many) && s.many > 0) << s.many;

  IsaKernels from_48 = *isa_kernels_amx_emulated();
  from_48.int8_tiles_from = kManyTokensFrom;
  ThreadPool pool(1);
  const auto m = test::random_matrix(GgmlType::kQ8_0, 32, 256, 51, pool);
  for (int64_t tokens : {kManyTokensFrom - 1, kManyTokensFrom}) {
    const auto x = test::gaussian(static_cast<size_t>(tokens * 256), 52);
    std::vector<float> y(static_cast<size_t>(32 * tokens));
    const int64_t before = EmulatedTiles::configurations();
    matmul_parts_with(&from_48, {{&m->w, y.data()}}, x.data(), tokens, pool);
    EXPECT_EQ(EmulatedTiles::configurations() - before, tokens >= kManyTokensFrom ? 1 : 0) << tokens << " tokens";
  }
}

// (on the hardware rather than the model, float weight type)
class AmxBf16Tiles : public testing::TestWithParam<std::tuple<bool, GgmlType>> {
 protected:
  void SetUp() override {
    const bool hardware = std::get<0>(GetParam());
    if (!cpu_has_avx512_bf16()) GTEST_SKIP() << "CPU lacks AVX512-BF16";
    if (hardware && (amx_status() == AmxStatus::kAbsent || amx_status() == AmxStatus::kNotGranted))
      GTEST_SKIP() << "CPU lacks amx, or Linux did not grant its tile state";
    if (hardware) {
      EXPECT_NE(amx_status(), AmxStatus::kDisagrees) << "the self-check failed on this CPU";
    }
    amx_ = hardware ? isa_kernels_amx() : isa_kernels_amx_emulated();
  }
  const IsaKernels* amx_ = nullptr;
};

// Exact bf16 products, summed in f32 chains: every output within the chain's rounding
// of the exact sum, for partial panels (37 rows), a half-empty last pair and a partial
// last step (255 columns), and every tile arrangement: a partial tile alone (1, 3),
// whole tiles (16, 32), whole and partial (17, 33), a block of 5 tiles and more (97,
// 200); packed weights and weights packed on the fly.
TEST_P(AmxBf16Tiles, MatchTheBf16RoundedProducts) {
  const IsaKernels* amx = amx_;
  ThreadPool pool(2);
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{37, 255}, {64, 96}}) {
    const auto m = test::random_matrix(std::get<1>(GetParam()), rows, cols, 31, pool);
    for (bool packed : {true, false}) {
      WeightMatrix w = m->w;
      if (!packed) w.packed = nullptr;
      for (int64_t tokens : {1, 3, 16, 17, 32, 33, 97, 200}) {
        const auto x = test::gaussian(static_cast<size_t>(tokens * cols), static_cast<uint32_t>(tokens));
        std::vector<float> got(static_cast<size_t>(rows * tokens), NAN);
        matmul_parts_with(amx, {{&w, got.data()}}, x.data(), tokens, pool, FloatMath::kBf16);
        const test::Bf16Reference want = test::bf16_reference(w, x, tokens);
        for (size_t i = 0; i < want.y.size(); ++i)
          ASSERT_LE(std::fabs(got[i] - want.y[i]), 1e-5 * want.size[i])
              << rows << "x" << cols << ", packed " << packed << ", " << tokens << " tokens, output " << i;
      }
    }
  }
}

// Long rows: the driver pairs stretches of panels that fit in L2 (8192 columns: 3
// panels) and passes chunks of tokens over them (64 tokens): 4 panels and 80 tokens
// cross both seams, and each token still gets what it gets alone.
TEST(AmxBf16TilesLongRows, CrossStretchAndChunkSeams) {
  if (!cpu_has_avx512_bf16()) GTEST_SKIP() << "CPU lacks AVX512-BF16";
  ThreadPool pool(1);  // one thread's range: all 4 panels
  const int64_t rows = 56, cols = 8192, tokens = 80;
  const auto m = test::random_matrix(GgmlType::kF16, rows, cols, 71, pool);
  const auto x = test::gaussian(static_cast<size_t>(tokens * cols), 72);
  std::vector<float> got(static_cast<size_t>(rows * tokens), NAN);
  matmul_parts_with(isa_kernels_amx_emulated(), {{&m->w, got.data()}}, x.data(), tokens, pool, FloatMath::kBf16);
  const test::Bf16Reference want = test::bf16_reference(m->w, x, tokens);
  for (size_t i = 0; i < want.y.size(); ++i) ASSERT_LE(std::fabs(got[i] - want.y[i]), 1e-5 * want.size[i]) << i;
  for (int64_t t : {int64_t{0}, int64_t{63}, int64_t{64}, tokens - 1}) {
    std::vector<float> alone(static_cast<size_t>(rows));
    matmul_parts_with(isa_kernels_amx_emulated(), {{&m->w, alone.data()}}, x.data() + t * cols, 1, pool,
                      FloatMath::kBf16);
    for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(got[t * rows + r], alone[r]) << "token " << t << " row " << r;
  }
}

// A token's outputs are bit for bit those it gets alone, whatever tiles carry it.
TEST_P(AmxBf16Tiles, EachTokenGetsWhatItGetsAlone) {
  const IsaKernels* amx = amx_;
  ThreadPool pool(2);
  const int64_t rows = 40, cols = 130, tokens = 115;
  const auto m = test::random_matrix(std::get<1>(GetParam()), rows, cols, 33, pool);
  const auto x = test::gaussian(static_cast<size_t>(tokens * cols), 34);
  std::vector<float> together(static_cast<size_t>(rows * tokens));
  matmul_parts_with(amx, {{&m->w, together.data()}}, x.data(), tokens, pool, FloatMath::kBf16);
  for (int64_t t = 0; t < tokens; t += 7) {
    std::vector<float> alone(static_cast<size_t>(rows));
    matmul_parts_with(amx, {{&m->w, alone.data()}}, x.data() + t * cols, 1, pool, FloatMath::kBf16);
    for (int64_t r = 0; r < rows; ++r) ASSERT_EQ(together[t * rows + r], alone[r]) << "token " << t << " row " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(ModelAndHardware, AmxBf16Tiles,
                         testing::Combine(testing::Bool(),
                                          testing::Values(GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "hardware_" : "model_") +
                                  type_name(std::get<1>(info.param));
                         });

// The self-check fails bf16 tiles wrong in one arrangement only: one output off where
// a block of 5 tiles forms (80 tokens and more).
TEST(AmxCheck, CatchesBf16TilesWrongInOneTileArrangement) {
  if (!cpu_has_avx512_bf16()) GTEST_SKIP() << "CPU lacks AVX512-BF16";
  IsaKernels wrong = *isa_kernels_amx_emulated();
  wrong.float_panel_bf16_tiles = [](const uint32_t* paired, const Bf16TokenRows& a, int64_t t0, int64_t t1, float* y,
                                    int64_t rows, int64_t r0) {
    isa_kernels_amx_emulated()->float_panel_bf16_tiles(paired, a, t0, t1, y, rows, r0);
    if (t1 - t0 >= 5 * kPanelRows) y[t0 * rows + r0] += 1.0f;
  };
  EXPECT_FALSE(bf16_tiles_agree(wrong));
  EXPECT_TRUE(bf16_tiles_agree(*isa_kernels_amx_emulated()));
  IsaKernels none = *isa_kernels_amx_emulated();
  none.float_panel_bf16_tiles = nullptr;  // then float weights stay on float_panels_bf16
  EXPECT_TRUE(bf16_tiles_agree(none));
}

// The check the dispatcher runs before it trusts the AMX hardware passes the model's
// kernels and fails kernels that compute something else.
TEST(AmxCheck, PassesTheModelsKernelsAndNotOthers) {
  if (!cpu_supports(Isa::kAvx512)) GTEST_SKIP() << "CPU lacks avx512";
  EXPECT_TRUE(agrees_with_avx512(*isa_kernels_amx_emulated()));
  IsaKernels wrong = *isa_kernels_amx_emulated();
  wrong.int8_panel_tiles = [](const uint8_t*, const uint8_t* unpacked1, const PanelLayout&, const Q8Activations&,
                              int64_t t0, int64_t t1, float* y, int64_t rows, int64_t r0, int64_t r1) {
    for (int64_t first : {r0, unpacked1 != nullptr ? r1 : r0})
      for (int64_t t = t0; t < t1; ++t)
        for (int64_t r = first; r < std::min(rows, first + kPanelRows); ++r) y[t * rows + r] = 0.0f;
  };
  EXPECT_FALSE(agrees_with_avx512(wrong));
}

// The model's AMX kernels, with one output of a call's first panel off by 1 wherever
// kWrong(layout, activations, one panel alone) holds.
template <bool (*kWrong)(const PanelLayout&, const Q8Activations&, bool)>
IsaKernels int8_tiles_wrong_where() {
  IsaKernels wrong = *isa_kernels_amx_emulated();
  wrong.int8_panel_tiles = [](const uint8_t* unpacked0, const uint8_t* unpacked1, const PanelLayout& layout,
                              const Q8Activations& a, int64_t t0, int64_t t1, float* y, int64_t rows, int64_t r0,
                              int64_t r1) {
    isa_kernels_amx_emulated()->int8_panel_tiles(unpacked0, unpacked1, layout, a, t0, t1, y, rows, r0, r1);
    if (kWrong(layout, a, unpacked1 == nullptr)) y[t0 * rows + r0] += 1.0f;
  };
  return wrong;
}

// Compact Q5_K panels (packed weights), one panel alone, in a matmul whose last token
// group has 7 tokens.
bool compact_q5_k_alone_after_7(const PanelLayout& layout, const Q8Activations& a, bool alone) {
  const bool compact_q5_k = layout.k_scales && layout.stored_bits == 5;
  return compact_q5_k && alone && a.n_tokens % Q8Activations::kGroup == 7;
}

// An odd number of blocks, so that the last block's products fall on the even C tiles.
bool odd_block_count(const PanelLayout& layout, const Q8Activations& a, bool) { return a.cols / layout.block % 2 != 0; }

// A kernel wrong in one tile shape of one type only. The check once tried three types
// in two tile heights, and a wrong Q5 shape crashed Sapphire Rapids after it passed.
TEST(AmxCheck, CatchesAKernelWrongInOneTileShapeOfOneType) {
  if (!cpu_supports(Isa::kAvx512)) GTEST_SKIP() << "CPU lacks avx512";
  EXPECT_FALSE(agrees_with_avx512(int8_tiles_wrong_where<compact_q5_k_alone_after_7>()));
}

// A kernel wrong only where a matrix has an odd number of blocks.
TEST(AmxCheck, CatchesAKernelWrongOnlyForAnOddNumberOfBlocks) {
  if (!cpu_supports(Isa::kAvx512)) GTEST_SKIP() << "CPU lacks avx512";
  EXPECT_FALSE(agrees_with_avx512(int8_tiles_wrong_where<odd_block_count>()));
}

// The kernel's tiles for `tokens` rows of `k` bytes: C 0 (int32 x 16 rows), A 2, B 4.
TileConfig product_config(int tokens, int k) {
  TileConfig c;
  c.palette_id = 1;
  c.rows[0] = c.rows[2] = static_cast<uint8_t>(tokens);
  c.colsb[0] = 64;
  c.colsb[2] = static_cast<uint16_t>(k);
  c.rows[4] = static_cast<uint8_t>(k / 4);
  c.colsb[4] = 64;
  return c;
}

// One token's dot with one row: tdpbssd takes A and B as signed bytes.
TEST(AmxModel, DotsSignedActivationsWithSignedCodes) {
  EmulatedTiles::configure(product_config(1, 4));
  const int8_t a[4] = {-1, 2, -3, 4};
  int8_t b[64] = {10, 20, 30, -128, 1, 1, 1, 1};  // column 0, then column 1
  int32_t out[16] = {};
  EmulatedTiles::zero<0>();
  EmulatedTiles::load<2>(a, 4);
  EmulatedTiles::load<4>(b, 64);
  EmulatedTiles::dot_signed<0, 2, 4>();
  EmulatedTiles::store<0>(out, 64);
  EmulatedTiles::release();
  EXPECT_EQ(out[0], -10 + 40 - 90 - 4 * 128);
  EXPECT_EQ(out[1], -1 + 2 - 3 + 4);
  EXPECT_EQ(out[2], 0);
}

// tdpbf16ps as the SDM has it: per output, the even and the odd products summed apart
// from 0, each product added and rounded on its own, then the two sums onto C. Even
// products 1 and 2^-24 sum to 1 (a tie, to even), odd ones 2^-24 twice to 2^-23: C =
// 1 + 2^-23, where one chain over the pairs in order would stay at 1. bf16 subnormals
// read as 0.
TEST(AmxModel, DotsBf16EvenAndOddProductsApart) {
  TileConfig c;
  c.palette_id = 1;
  c.rows[0] = c.rows[2] = 1;
  c.colsb[0] = 8;   // 2 outputs
  c.colsb[2] = 12;  // 3 pairs of A
  c.rows[4] = 3;    // 3 pairs of B per output
  c.colsb[4] = 8;
  EmulatedTiles::configure(c);
  auto bf = [](float v) { return f32_to_bf16(v); };
  const uint16_t tiny = bf(std::ldexp(1.0f, -24)), huge = bf(std::ldexp(1.0f, 120));
  const uint16_t a[6] = {bf(1.0f), bf(1.0f), bf(1.0f), bf(1.0f), 0, bf(std::ldexp(1.0f, -130))};  // a subnormal last
  // B row k: output 0's pair k, then output 1's pair k.
  const uint16_t b[3][4] = {{bf(1.0f), tiny, 0, 0}, {tiny, tiny, 0, 0}, {0, 0, 0, huge}};
  float out[2] = {};
  EmulatedTiles::zero<0>();
  EmulatedTiles::load<2>(a, 12);
  EmulatedTiles::load<4>(b, 8);
  EmulatedTiles::dot_bf16<0, 2, 4>();
  EmulatedTiles::store<0>(out, 8);
  EmulatedTiles::release();
  EXPECT_EQ(out[0], 1.0f + std::ldexp(1.0f, -23)) << "(1 + 2^-24) + (2^-24 + 2^-24)";
  EXPECT_EQ(out[1], 0.0f) << "2^-130 (subnormal) x 2^120 counts as 0, not 2^-10";
}

// Where the hardware raises #UD, the model throws: a kernel whose tile shapes do not
// fit fails here rather than crashing on an AMX machine.
TEST(AmxModel, FaultsWhereTheHardwareFaults) {
  const TileConfig c = product_config(8, 32);
  EmulatedTiles::configure(c);
  EXPECT_NO_THROW((EmulatedTiles::dot_signed<0, 2, 4>()));
  EXPECT_THROW(EmulatedTiles::zero<1>(), Error) << "tile 1 is not configured";
  EXPECT_THROW((EmulatedTiles::dot_signed<0, 0, 4>()), Error) << "C and A are one tile";

  TileConfig k_mismatch = c;
  k_mismatch.rows[4] = 4;  // B holds 16 bytes per column, A 32 per row
  EmulatedTiles::configure(k_mismatch);
  EXPECT_THROW((EmulatedTiles::dot_signed<0, 2, 4>()), Error);

  TileConfig m_mismatch = c;
  m_mismatch.rows[2] = 7;  // A has 7 token rows, C 8
  EmulatedTiles::configure(m_mismatch);
  EXPECT_THROW((EmulatedTiles::dot_signed<0, 2, 4>()), Error);

  TileConfig bad = c;
  bad.palette_id = 0;
  EXPECT_THROW(EmulatedTiles::configure(bad), Error);
  bad = c;
  bad.rows[5] = 17;
  bad.colsb[5] = 64;
  EXPECT_THROW(EmulatedTiles::configure(bad), Error);
  bad = c;
  bad.rows[9] = 1;
  bad.colsb[9] = 4;
  EXPECT_THROW(EmulatedTiles::configure(bad), Error) << "palette 1 has 8 tiles";

  EmulatedTiles::configure(c);
  EmulatedTiles::release();
  EXPECT_THROW(EmulatedTiles::zero<0>(), Error) << "no configuration after release";
}

}  // namespace
}  // namespace tps
