// The AMX integer kernels: on the software model of the tiles wherever AVX-512 runs,
// and on the hardware where the CPU has AMX; and the model itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "kernels/amx_tiles.h"
#include "kernels/matmul.h"
#include "kernels/matmul_kernels.h"
#include "support/random_weights.h"

namespace tps {
namespace {

constexpr GgmlType kQuantizedTypes[] = {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,
                                        GgmlType::kQ5_1, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};

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
  const int64_t rows = 40, cols = 512;
  const auto m = test::random_matrix(type, rows, cols, 7, pool);
  for (bool packed : {true, false}) {
    WeightMatrix w = m->w;
    if (!packed) w.packed = nullptr;
    std::vector<int64_t> counts = {1, 4, 5, 80, 200};
    for (int64_t t : tile_check_token_counts()) counts.push_back(t);
    for (int64_t tokens : counts) {
      const auto x = test::gaussian(static_cast<size_t>(tokens * cols), static_cast<uint32_t>(tokens));
      std::vector<float> want(static_cast<size_t>(rows * tokens)), got(want.size(), NAN);
      matmul_parts_with(isa_kernels_avx512(), {{&w, want.data()}}, x.data(), tokens, pool);
      matmul_parts_with(amx, {{&w, got.data()}}, x.data(), tokens, pool);
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << "packed " << packed << ", " << tokens << " tokens, output " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(ModelAndHardware, AmxPanels,
                         testing::Combine(testing::Bool(), testing::ValuesIn(kQuantizedTypes)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "hardware_" : "model_") +
                                  type_name(std::get<1>(info.param));
                         });

// The check the dispatcher runs before it trusts the AMX hardware passes the model's
// kernels and fails kernels that compute something else.
TEST(AmxCheck, PassesTheModelsKernelsAndNotOthers) {
  if (!cpu_supports(Isa::kAvx512)) GTEST_SKIP() << "CPU lacks avx512";
  EXPECT_TRUE(agrees_with_avx512(*isa_kernels_amx_emulated()));
  IsaKernels wrong = *isa_kernels_amx_emulated();
  wrong.panels = [](const uint8_t*, const uint8_t* panel1, const PanelLayout&, const Q8Activations&, int64_t t0,
                    int64_t t1, float* y, int64_t rows, int64_t r0, int64_t r1) {
    for (int64_t first : {r0, panel1 != nullptr ? r1 : r0})
      for (int64_t t = t0; t < t1; ++t)
        for (int64_t r = first; r < std::min(rows, first + kPanelRows); ++r) y[t * rows + r] = 0.0f;
  };
  EXPECT_FALSE(agrees_with_avx512(wrong));
}

// A kernel wrong in one tile shape of one type only: Q5_K over widened panels, in a
// chunk that ends with a 7-token tile. The check once tried three types in two tile
// heights, and a wrong Q5 shape crashed Sapphire Rapids after it passed.
TEST(AmxCheck, CatchesAKernelWrongInOneTileShapeOfOneType) {
  if (!cpu_supports(Isa::kAvx512)) GTEST_SKIP() << "CPU lacks avx512";
  IsaKernels wrong = *isa_kernels_avx512();
  wrong.panels = [](const uint8_t* panel0, const uint8_t* panel1, const PanelLayout& layout, const Q8Activations& a,
                    int64_t t0, int64_t t1, float* y, int64_t rows, int64_t r0, int64_t r1) {
    isa_kernels_avx512()->panels(panel0, panel1, layout, a, t0, t1, y, rows, r0, r1);
    const bool wide_q5_k = layout.k_scales && layout.code_bits == 8 && !layout.compact();
    if (wide_q5_k && t1 - t0 == Q8Activations::kGroup + 7) y[t0 * rows + r0] += 1.0f;
  };
  EXPECT_FALSE(agrees_with_avx512(wrong));
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

// One token's dot with one row: tdpbsud takes A as signed bytes and B as unsigned.
TEST(AmxModel, DotsSignedActivationsWithUnsignedCodes) {
  EmulatedTiles::configure(product_config(1, 4));
  const int8_t a[4] = {-1, 2, -3, 4};
  uint8_t b[64] = {10, 20, 30, 255, 1, 1, 1, 1};  // column 0, then column 1
  int32_t out[16] = {};
  EmulatedTiles::zero<0>();
  EmulatedTiles::load<2>(a, 4);
  EmulatedTiles::load<4>(b, 64);
  EmulatedTiles::dot_signed_unsigned<0, 2, 4>();
  EmulatedTiles::store<0>(out, 64);
  EmulatedTiles::release();
  EXPECT_EQ(out[0], -10 + 40 - 90 + 4 * 255);
  EXPECT_EQ(out[1], -1 + 2 - 3 + 4);
  EXPECT_EQ(out[2], 0);
}

// Where the hardware raises #UD, the model throws: a kernel whose tile shapes do not
// fit fails here rather than crashing on an AMX machine.
TEST(AmxModel, FaultsWhereTheHardwareFaults) {
  const TileConfig c = product_config(8, 32);
  EmulatedTiles::configure(c);
  EXPECT_NO_THROW((EmulatedTiles::dot_signed_unsigned<0, 2, 4>()));
  EXPECT_THROW(EmulatedTiles::zero<1>(), Error) << "tile 1 is not configured";
  EXPECT_THROW((EmulatedTiles::dot_signed_unsigned<0, 0, 4>()), Error) << "C and A are one tile";

  TileConfig k_mismatch = c;
  k_mismatch.rows[4] = 4;  // B holds 16 bytes per column, A 32 per row
  EmulatedTiles::configure(k_mismatch);
  EXPECT_THROW((EmulatedTiles::dot_signed_unsigned<0, 2, 4>()), Error);

  TileConfig m_mismatch = c;
  m_mismatch.rows[2] = 7;  // A has 7 token rows, C 8
  EmulatedTiles::configure(m_mismatch);
  EXPECT_THROW((EmulatedTiles::dot_signed_unsigned<0, 2, 4>()), Error);

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
