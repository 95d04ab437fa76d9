// Every vector helper, on every ISA this CPU runs, against its scalar reference.
#include <gtest/gtest.h>

#include <cmath>
#include <iterator>
#include <optional>
#include <random>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/ops.h"
#include "quant/quantize.h"
#include "support/scoped_isa.h"

namespace tps {
namespace {

std::vector<float> gaussian(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float rel, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], rel * (1e-3f + std::fabs(want[i]))) << what << " at " << i;
}

class Ops : public testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!cpu_supports(GetParam())) GTEST_SKIP() << "CPU lacks " << isa_name(GetParam());
    forced_.emplace(GetParam());
  }
  std::optional<test::ScopedIsa> forced_;
};

// Odd lengths exercise the vector tails.
constexpr int64_t kLengths[] = {1, 7, 16, 33, 100, 2048};

TEST_P(Ops, Axpy) {
  for (int64_t n : kLengths) {
    auto a = gaussian(n, 1), b = gaussian(n, 2);
    auto y1 = b, y2 = b;
    axpy(0.37f, a.data(), y1.data(), n);
    axpy_reference(0.37f, a.data(), y2.data(), n);
    // FMA contraction may round a * x + y once instead of twice: 1 ulp of y.
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(y1[i], y2[i], 1e-6f * (1.0f + std::fabs(y2[i]))) << i;
  }
}

TEST_P(Ops, RmsNorm) {
  for (int64_t n : kLengths) {
    auto x = gaussian(n, 3, 4.0f), w = gaussian(n, 4);
    std::vector<float> got(n), want(n);
    rmsnorm(x.data(), w.data(), n, 1e-5f, got.data());
    rmsnorm_reference(x.data(), w.data(), n, 1e-5f, want.data());
    expect_close(got, want, 1e-5f, "rmsnorm");
    rmsnorm(x.data(), w.data(), n, 1e-5f, x.data());  // in place
    expect_close(x, want, 1e-5f, "rmsnorm in place");
  }
}

TEST_P(Ops, SiluMul) {
  for (int64_t n : kLengths) {
    auto g = gaussian(n, 6, 5.0f), u = gaussian(n, 7);
    if (n > 2) g[1] = -100.0f, g[0] = 100.0f;
    std::vector<float> got(n), want(n);
    silu_mul(g.data(), u.data(), n, got.data());
    silu_mul_reference(g.data(), u.data(), n, want.data());
    expect_close(got, want, 2e-6f, "silu_mul");
  }
}

TEST_P(Ops, Rope) {
  for (RopeStyle style : {RopeStyle::kAdjacent, RopeStyle::kHalves}) {
    for (int64_t pos : {0, 1, 17, 500}) {
      const int64_t heads = 3, head_dim = 64;
      auto x = gaussian(heads * head_dim, 8), want = x;
      rope(x.data(), heads, head_dim, pos, 10000.0f, style);
      rope_reference(want.data(), heads, head_dim, pos, 10000.0f, style);
      // float theta at pos 500 is good to ~3e-5 relative, hence the looser bound.
      for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], want[i], 2e-4f) << i;
    }
  }
  // A known case: one adjacent pair at position 1, frequency 1 (i = 0), turns by 1 rad.
  float v[2] = {1.0f, 0.0f};
  rope(v, 1, 2, 1, 10000.0f, RopeStyle::kAdjacent);
  EXPECT_NEAR(v[0], std::cos(1.0f), 1e-6f);
  EXPECT_NEAR(v[1], std::sin(1.0f), 1e-6f);
}

TEST_P(Ops, ToF16MatchesTheScalarConversion) {
  for (int64_t n : kLengths) {
    auto x = gaussian(n, 9, 3.0f);
    // Specials and edges: subnormal halves, ties, overflow to inf, signed zero.
    const float edges[] = {0.0f, -0.0f, 1e-6f, -3e-8f, 6.1e-5f, 65504.0f, 65520.0f, -1e9f, INFINITY, 1.0009765625f + 0x1p-11f};
    for (size_t i = 0; i < std::size(edges) && i < x.size(); ++i) x[i] = edges[i];
    for (int64_t stride : {1, 3}) {
      std::vector<uint16_t> got(n * stride, 0xFFFF);
      to_f16(x.data(), n, got.data(), stride);
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i * stride], f32_to_f16(x[i])) << "x = " << x[i] << " stride " << stride;
      for (int64_t i = 0; i < n * stride; ++i) {
        if (i % stride != 0) {
          ASSERT_EQ(got[i], 0xFFFF) << "wrote between the strided outputs";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllPaths, Ops, testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

}  // namespace
}  // namespace tps
