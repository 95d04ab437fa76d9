// FloatMath::kBf16 (kernels/matmul.h): float weights and activations rounded to bf16
// and multiplied by vdpbf16ps, against the same rounding done in double precision, and
// still independent of the batch. Runs where the CPU has AVX512-BF16.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/matmul_kernels.h"
#include "quant/quantize.h"

#include "support/bf16_reference.h"
#include "support/random_weights.h"
#include "support/scoped_isa.h"

namespace tps {
namespace {

using test::gaussian;
using test::random_matrix;

class FloatMathBf16 : public testing::TestWithParam<GgmlType> {
 protected:
  void SetUp() override {
    if (!cpu_has_avx512_bf16()) GTEST_SKIP() << "CPU lacks AVX512-BF16";
  }
};

// Odd column counts end in a pair with one weight; 1 token (decode), tiles of two
// panels (up to 14 tokens) and of one, and a partial group past 14.
TEST_P(FloatMathBf16, MatchesTheBf16RoundedReference) {
  test::ScopedIsa isa(Isa::kAvx512);
  test::ScopedFloatMath math(FloatMath::kBf16);
  ThreadPool pool(2);
  for (const auto& [rows, cols] : {std::pair<int64_t, int64_t>{37, 255}, {64, 512}, {130, 172}}) {
    const auto m = random_matrix(GetParam(), rows, cols, 21, pool);
    for (int64_t tokens : {1, 3, 14, 33}) {
      const auto x = gaussian(static_cast<size_t>(tokens * cols), 22);
      std::vector<float> got(static_cast<size_t>(tokens * rows));
      matmul(m->w, x.data(), tokens, got.data(), pool);
      const std::vector<double> want = test::bf16_reference(m->w, x, tokens).y;
      double num = 0, den = 0;
      for (size_t i = 0; i < want.size(); ++i) num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
      // Exact bf16 products, summed in f32: only the f32 sums round.
      EXPECT_LT(std::sqrt(num / den), 1e-5) << rows << "x" << cols << ", " << tokens << " tokens";
    }
  }
}

// Rounding to bf16 is the mode's whole difference from the f32 path: against the
// exact product, its error is about bf16's half an ulp (2^-9) over sqrt of the terms.
TEST_P(FloatMathBf16, StaysWithinBf16RoundingOfTheExactProduct) {
  test::ScopedIsa isa(Isa::kAvx512);
  test::ScopedFloatMath math(FloatMath::kBf16);
  ThreadPool pool(2);
  const int64_t rows = 64, cols = 512, tokens = 9;
  const auto m = random_matrix(GetParam(), rows, cols, 23, pool);
  const auto x = gaussian(static_cast<size_t>(tokens * cols), 24);
  std::vector<float> got(static_cast<size_t>(tokens * rows)), want(got.size());
  matmul(m->w, x.data(), tokens, got.data(), pool);
  matmul_reference(m->w, x.data(), tokens, want.data());
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
  EXPECT_LT(std::sqrt(num / den), 5e-3);
  EXPECT_GT(std::sqrt(num / den), 0.0) << "nothing rounded: is the bf16 kernel running?";
}

// A token's outputs are bit for bit those it gets alone, in this mode as in the default.
TEST_P(FloatMathBf16, EachTokenGetsWhatItGetsAlone) {
  test::ScopedIsa isa(Isa::kAvx512);
  test::ScopedFloatMath math(FloatMath::kBf16);
  ThreadPool pool(2);
  const int64_t rows = 70, cols = 511;
  const auto m = random_matrix(GetParam(), rows, cols, 25, pool);
  for (int64_t tokens : {2, 21, 120}) {
    const auto x = gaussian(static_cast<size_t>(tokens * cols), 26);
    std::vector<float> together(static_cast<size_t>(rows * tokens));
    matmul(m->w, x.data(), tokens, together.data(), pool);
    for (int64_t t = 0; t < tokens; ++t) {
      std::vector<float> alone(static_cast<size_t>(rows));
      matmul(m->w, x.data() + t * cols, 1, alone.data(), pool);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(together[t * rows + r], alone[r]) << tokens << " tokens, token " << t << " row " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, FloatMathBf16, testing::Values(GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16),
                         [](const auto& info) { return std::string(type_name(info.param)); });

// What tps bench names the float weights' path (its MFU's peak): each ISA's kind of
// bf16 product in the mode, f32 out of it, and quantized weights' own paths.
TEST(FloatMath, ComputePathNamesTheBf16Products) {
  if (!cpu_has_avx512_bf16()) GTEST_SKIP() << "CPU lacks AVX512-BF16";
  {
    test::ScopedFloatMath math(FloatMath::kBf16);
    // Under TPS_ISA=amx: the AMX kernels' tiles where the CPU runs them (bf16 tiles where
    // they passed their check; int8 tiles for matmuls of the sizes they timed faster
    // at), else AVX-512's; never tiles for one token's integer matmul.
    const IsaKernels* amx = kernels_for(Isa::kAmx);
    EXPECT_STREQ(compute_path(Isa::kAmx, false, 512), amx->float_panel_bf16_tiles != nullptr ? "amx_bf16" : "bf16");
    EXPECT_STREQ(compute_path(Isa::kAvx512, false, 512), "bf16");
    EXPECT_STREQ(compute_path(Isa::kAvx2, false, 512), "f32");  // no bf16 tiles there
    EXPECT_STREQ(compute_path(Isa::kAmx, true, 512), amx->int8_tiles_take(512) ? "amx_int8" : "int8");
    if (!cpu_supports(Isa::kAmx)) {  // then no AMX kernels at all
      EXPECT_STREQ(compute_path(Isa::kAmx, false, 512), "bf16");
      EXPECT_STREQ(compute_path(Isa::kAmx, true, 512), "int8");
    }
    EXPECT_STREQ(compute_path(Isa::kAmx, true, 1), "int8");
  }
  test::ScopedFloatMath math(FloatMath::kF32);
  EXPECT_STREQ(compute_path(Isa::kAmx, false, 512), "f32");
}

TEST(FloatMath, DefaultIsF32AndNamesAreStable) {
  EXPECT_STREQ(float_math_name(FloatMath::kF32), "f32");
  EXPECT_STREQ(float_math_name(FloatMath::kBf16), "bf16");
  const char* env = std::getenv("TPS_FLOAT_MATH");
  if (env != nullptr && *env != '\0') GTEST_SKIP() << "TPS_FLOAT_MATH=" << env << " sets it";
  EXPECT_EQ(active_float_math(), FloatMath::kF32);
}

}  // namespace
}  // namespace tps
