// Every matmul path against the double-precision reference, on every ISA this CPU runs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

#include "core/error.h"
#include "kernels/matmul.h"
#include "kernels/matmul_kernels.h"
#include "kernels/packed_weights.h"
#include "quant/quantize.h"

#include "support/random_weights.h"
#include "support/scoped_isa.h"

namespace tps {
namespace {

using test::gaussian;
using test::random_matrix;

constexpr GgmlType kTypes[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16,  GgmlType::kQ8_0,
                               GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,  GgmlType::kQ5_1,
                               GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,  GgmlType::kIQ4_NL,
                               GgmlType::kIQ4_XS, GgmlType::kQ3_K, GgmlType::kQ2_K};

// Paths that quantize activations to 8 bits (or round them to bf16) differ from the
// float reference by that rounding; float paths only by summation order.
double tolerance(Isa isa, GgmlType t) {
  if (isa == Isa::kScalar || t == GgmlType::kF32 || t == GgmlType::kF16) return 1e-5;
  if (t == GgmlType::kBF16) return 5e-3;
  return 0.02;
}

struct Shape {
  int64_t rows, cols, tokens;
};

// Runs under the ISA path the caller forced.
void check_matmul(Isa isa, GgmlType type, Shape s, ThreadPool& pool, bool packed) {
  auto wf = gaussian(static_cast<size_t>(s.rows * s.cols), 11);
  size_t rb = row_bytes(type, s.cols);
  std::vector<uint8_t> wq(rb * static_cast<size_t>(s.rows));
  for (int64_t r = 0; r < s.rows; ++r) quantize_row(type, wf.data() + r * s.cols, wq.data() + r * rb, s.cols);
  WeightMatrix w{type, s.rows, s.cols, wq.data(), rb};
  PackedWeights pw;
  if (packed) {
    pw = pack_weights(w, &pool);
    if (!pw.empty()) w.packed = &pw;
  }
  auto x = gaussian(static_cast<size_t>(s.tokens * s.cols), 12);
  std::vector<float> want(static_cast<size_t>(s.tokens * s.rows)), got(want.size(), NAN);
  matmul_reference(w, x.data(), s.tokens, want.data());
  matmul(w, x.data(), s.tokens, got.data(), pool);
  double num = 0, den = 0, max_err = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << i;
    double e = got[i] - want[i];
    num += e * e, den += want[i] * want[i], max_err = std::max(max_err, std::fabs(e));
  }
  double rms = std::sqrt(den / static_cast<double>(want.size()));
  double tol = tolerance(isa, type);
  EXPECT_LT(std::sqrt(num / den), tol) << isa_name(isa) << " " << type_name(type) << " packed " << packed;
  EXPECT_LT(max_err, 6 * tol * rms) << isa_name(isa) << " " << type_name(type) << " packed " << packed;
}

class MatmulPaths : public testing::TestWithParam<std::tuple<Isa, GgmlType>> {
  // These check the exact float math, whatever TPS_FLOAT_MATH says; the bf16 one has
  // its own tests (matmul_bf16_test.cpp).
  test::ScopedFloatMath exact_{FloatMath::kF32};
};

TEST_P(MatmulPaths, MatchesReference) {
  auto [isa, type] = GetParam();
  if (!cpu_supports(isa)) GTEST_SKIP() << "CPU lacks " << isa_name(isa);
  test::ScopedIsa forced(isa);
  ThreadPool two(2), three(3);
  // Rows not a multiple of the thread count or of any tile; 1, few and many tokens.
  // Panels go in pairs (IsaKernels::panels) with one left over in odd ranges, tokens
  // in tiles that end where a token group does. 80 tokens cross the driver's 72-token
  // chunks and end in a partial token group.
  for (Shape s : {Shape{37, 512, 1}, Shape{96, 256, 2}, Shape{64, 256, 3}, Shape{130, 512, 4}, Shape{19, 768, 17},
                  Shape{8, 256, 1}, Shape{130, 512, 8}, Shape{33, 256, 80}}) {
    check_matmul(isa, type, s, two, false);
    check_matmul(isa, type, s, three, false);
    check_matmul(isa, type, s, two, true);
  }
}

INSTANTIATE_TEST_SUITE_P(AllPaths, MatmulPaths,
                         testing::Combine(testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx),
                                          testing::ValuesIn(kTypes)),
                         [](const auto& info) {
                           return std::string(isa_name(std::get<0>(info.param))) + "_" +
                                  type_name(std::get<1>(info.param));
                         });

// Several matrices on the same activations in one region each give their product,
// also when a panel range crosses from one matrix into the next, and when the parts
// differ in type (then they run one after another).
TEST_P(MatmulPaths, PartsMatchSeparateProducts) {
  auto [isa, type] = GetParam();
  if (!cpu_supports(isa)) GTEST_SKIP() << "CPU lacks " << isa_name(isa);
  test::ScopedIsa forced(isa);
  ThreadPool pool(2);
  const int64_t cols = 256;
  auto make = [&](GgmlType t, int64_t rows, uint32_t seed) { return random_matrix(t, rows, cols, seed, pool); };
  const GgmlType other = type == GgmlType::kF16 ? GgmlType::kQ8_0 : GgmlType::kF16;
  for (GgmlType third : {type, other}) {
    auto a = make(type, 40, 1), b = make(type, 16, 2), c = make(third, 24, 3);
    for (int64_t tokens : {1, 9}) {
      auto x = gaussian(static_cast<size_t>(tokens * cols), 4);
      std::vector<float> ya(40 * tokens), yb(16 * tokens), yc(24 * tokens);
      matmul_parts({{&a->w, ya.data()}, {&b->w, yb.data()}, {&c->w, yc.data()}}, x.data(), tokens, pool);
      for (auto [m, y] : {std::pair{a.get(), &ya}, std::pair{b.get(), &yb}, std::pair{c.get(), &yc}}) {
        std::vector<float> want(y->size());
        matmul_reference(m->w, x.data(), tokens, want.data());
        double num = 0, den = 0;
        for (size_t i = 0; i < want.size(); ++i) num += ((*y)[i] - want[i]) * ((*y)[i] - want[i]), den += want[i] * want[i];
        EXPECT_LT(std::sqrt(num / den), tolerance(isa, m->w.type)) << type_name(m->w.type) << ", " << tokens << " tokens";
      }
    }
  }
}

// Float weights with a row length that is no multiple of any vector width, and rows
// padded in memory (row_bytes larger than the data).
TEST_P(MatmulPaths, FloatTailsAndRowStride) {
  auto [isa, type] = GetParam();
  if (!cpu_supports(isa)) GTEST_SKIP() << "CPU lacks " << isa_name(isa);
  if (type_info(type).block_size != 1) GTEST_SKIP() << "block type";
  test::ScopedIsa forced(isa);
  ThreadPool pool(2);
  const int64_t rows = 7, cols = 172;
  size_t rb = row_bytes(type, cols) + 24;
  auto wf = gaussian(static_cast<size_t>(rows * cols), 3);
  std::vector<uint8_t> wq(rb * rows);
  for (int64_t r = 0; r < rows; ++r) quantize_row(type, wf.data() + r * cols, wq.data() + r * rb, cols);
  WeightMatrix w{type, rows, cols, wq.data(), rb};
  for (int64_t tokens : {1, 9}) {  // one token has a decode kernel of its own
    auto x = gaussian(static_cast<size_t>(tokens * cols), 4);
    std::vector<float> want(rows * tokens), got(rows * tokens);
    matmul_reference(w, x.data(), tokens, want.data());
    matmul(w, x.data(), tokens, got.data(), pool);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << tokens << " tokens, " << i;
  }
}

// A token's outputs are bit for bit those it gets alone, whatever else is in the batch:
// a server's greedy output must not depend on which requests run alongside it.
TEST_P(MatmulPaths, EachTokenGetsWhatItGetsAlone) {
  auto [isa, type] = GetParam();
  if (!cpu_supports(isa)) GTEST_SKIP() << "CPU lacks " << isa_name(isa);
  test::ScopedIsa forced(isa);
  ThreadPool pool(2);
  const int64_t rows = 70, cols = 512;
  const auto m = random_matrix(type, rows, cols, 5, pool);
  const WeightMatrix& w = m->w;
  // Full and partial tiles of every width; 2: a decode kernel's batch; 120: past one
  // chunk of tokens, where compact panels are widened first (a decode row sharing a
  // step with a long prefill chunk in the server).
  for (int64_t tokens : {2, 21, 120}) {
    auto x = gaussian(static_cast<size_t>(tokens * cols), 6);
    std::vector<float> together(static_cast<size_t>(rows * tokens));
    matmul(w, x.data(), tokens, together.data(), pool);
    for (int64_t t = 0; t < tokens; ++t) {
      std::vector<float> alone(static_cast<size_t>(rows));
      matmul(w, x.data() + t * cols, 1, alone.data(), pool);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_EQ(together[t * rows + r], alone[r]) << tokens << " tokens, token " << t << " row " << r;
    }
  }
}

// The AVX-512 kernels built with GFNI (the dispatcher's choice where the CPU has it)
// and without (Cascade Lake's) unpack the same codes: every integer-path output agrees
// bit for bit, for two panels and a leftover one (40 rows), and every tile the driver
// forms. MatchesReference checks the dispatcher's choice against the reference.
TEST(MatmulAvx512, GfniKernelsMatchThePlainOnesBitForBit) {
  if (!cpu_supports(Isa::kAvx512) || !cpu_has_gfni()) GTEST_SKIP() << "CPU lacks avx512 or gfni";
  ASSERT_EQ(kernels_for(Isa::kAvx512), isa_kernels_avx512_gfni());
  ThreadPool pool(2);
  const int64_t rows = 40, cols = 512;
  for (GgmlType type : kTypes) {
    if (panel_layout(type) == nullptr) continue;
    const auto m = random_matrix(type, rows, cols, 11, pool);
    for (bool packed : {true, false}) {
      WeightMatrix w = m->w;
      if (!packed) w.packed = nullptr;
      for (int64_t tokens : {1, 5, 12, 16, 23}) {
        const auto x = gaussian(static_cast<size_t>(tokens * cols), static_cast<uint32_t>(tokens));
        std::vector<float> want(static_cast<size_t>(rows * tokens)), got(want.size(), NAN);
        matmul_parts_with(isa_kernels_avx512(), {{&w, want.data()}}, x.data(), tokens, pool);
        matmul_parts_with(isa_kernels_avx512_gfni(), {{&w, got.data()}}, x.data(), tokens, pool);
        for (size_t i = 0; i < want.size(); ++i)
          ASSERT_EQ(got[i], want[i]) << type_name(type) << ", packed " << packed << ", " << tokens << " tokens, output "
                                     << i;
      }
    }
  }
}

// One token's quantized activations, every `stride`-th place as in a group of tokens.
struct Q8Buffers {
  explicit Q8Buffers(int64_t cols, int64_t stride = 1)
      : stride(stride),
        q(cols * stride),
        d(cols / 32 * stride),
        sum32(cols / 32 * stride),
        sum16(cols / 16 * stride),
        zero16(cols / 16 * stride),
        zero32(cols / 32 * stride) {}
  Q8Token token() { return {q.data(), d.data(), sum32.data(), sum16.data(), zero16.data(), zero32.data(), stride}; }
  int64_t stride;
  std::vector<int8_t> q;
  std::vector<float> d, sum32, sum16;
  std::vector<int32_t> zero16, zero32;
};

// The SIMD activation quantizers must produce exactly the scalar reference's blocks:
// 37 blocks are two of AVX-512's groups of 16 and 5 left over; the tokens of a group
// of 12 sit 12 places apart.
TEST(QuantizeActivations, SimdMatchesScalar) {
  const int64_t cols = 32 * 37;
  auto x = gaussian(cols, 9);
  x[3] = 0.0f;
  for (int i = 64; i < 96; ++i) x[i] = 0.0f;      // an all-zero block in a group of 16
  for (int i = 1120; i < 1152; ++i) x[i] = 0.0f;  // and one left over
  for (int i = 700; i < 732; ++i) x[i] *= 1000.0f;
  for (int64_t stride : {1, 12})
    for (int zero_point : {0, 8, 128}) {
      Q8Buffers want(cols, stride);
      quantize_activations_scalar(x.data(), cols, zero_point, want.token());
      for (Isa isa : {Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512}) {
        if (!cpu_supports(isa)) continue;
        const IsaKernels* k = kernels_for(isa);
        ASSERT_NE(k, nullptr);
        Q8Buffers got(cols, stride);
        k->quantize_activations(x.data(), cols, zero_point, got.token());
        const std::string where = std::string(isa_name(isa)) + ", stride " + std::to_string(stride) +
                                  ", zero point " + std::to_string(zero_point);
        EXPECT_EQ(want.q, got.q) << where;
        EXPECT_EQ(want.d, got.d) << where;
        EXPECT_EQ(want.sum32, got.sum32) << where;
        EXPECT_EQ(want.sum16, got.sum16) << where;
        EXPECT_EQ(want.zero16, got.zero16) << where;
        EXPECT_EQ(want.zero32, got.zero32) << where;
      }
    }
}

// The reference's sums are those of its codes: what the kernels' bias and zero-point
// terms stand on.
TEST(QuantizeActivations, SumsAreThoseOfTheCodes) {
  const int64_t cols = 64;
  auto x = gaussian(cols, 4);
  Q8Buffers a(cols);
  quantize_activations_scalar(x.data(), cols, 8, a.token());
  for (int64_t h = 0; h < cols / 16; ++h) {
    int sum = 0;
    for (int64_t i = 16 * h; i < 16 * h + 16; ++i) sum += a.q[i];
    EXPECT_EQ(a.zero16[h], -8 * sum) << h;
    EXPECT_FLOAT_EQ(a.sum16[h], a.d[h / 2] * static_cast<float>(sum)) << h;
  }
  for (int64_t b = 0; b < cols / 32; ++b) {
    EXPECT_EQ(a.zero32[b], a.zero16[2 * b] + a.zero16[2 * b + 1]);
    EXPECT_FLOAT_EQ(a.sum32[b], a.d[b] * static_cast<float>(a.zero32[b] / -8));
  }
}

// Every block's code vectors start on a cache line (a 64-byte load that straddles two
// lines costs the one-token kernel 20 %), and each panel is whole lines.
TEST(PackWeights, CodeVectorsStartOnCacheLines) {
  for (GgmlType type : kTypes) {
    const PanelLayout* layout = panel_layout(type);
    if (layout == nullptr) continue;
    for (int64_t cols : {256, 768, 2048}) {
      EXPECT_EQ(layout->wide_panel_bytes(cols) % 64, 0u) << type_name(type) << ", " << cols;
      EXPECT_EQ(layout->stored_panel_bytes(cols) % 64, 0u) << type_name(type) << ", " << cols;
      size_t offset = 0, stored = 0;
      for (int64_t u = 0; u < cols / layout->block / layout->unit_blocks(); ++u) {
        if (layout->super_headers() && u % PanelLayout::kSuperUnits == 0) {
          offset += PanelLayout::kSuperHeader;
          stored += PanelLayout::kSuperHeader;
        }
        for (int i = 0; i < layout->unit_blocks(); ++i) {
          EXPECT_EQ((offset + layout->code_offset(u) + i * layout->code_bytes()) % 64, 0u)
              << type_name(type) << ", unit " << u << " block " << i;
          EXPECT_EQ((stored + layout->stored_code_offset(u) + i * layout->stored_code_bytes()) % 64, 0u)
              << type_name(type) << ", stored unit " << u << " block " << i;
        }
        if (layout->stored_bits == 3) {  // the unit's third bits, after its blocks' codes
          const size_t third = stored + layout->stored_code_offset(u) + layout->unit_blocks() * layout->stored_code_bytes();
          EXPECT_EQ(third % 64, 0u) << type_name(type) << ", stored unit " << u;
          for (int i = 0; i < layout->unit_blocks(); ++i)
            EXPECT_EQ(layout->stored_third_bits(u * layout->unit_blocks() + i), third) << type_name(type) << ", unit " << u;
        }
        offset += layout->unit_bytes();
        stored += layout->stored_unit_bytes();
      }
    }
  }
}

// The bits per weight a compact panel may take beyond the file's: Q5_K's f16 d and dmin
// per 16 rows and 256 weights are 1/8 bit; Q3_K keeps its 6-bit scale codes in a byte,
// and a whole 64-byte super-block header for 16 f16 d.
double compact_overhead_bits(GgmlType type) { return type == GgmlType::kQ3_K ? 0.19 : 0.13; }

// Compact panels (Q5_0, Q5_1, Q5_K, Q6_K, Q2_K, Q3_K) take the file's bits per weight or
// a little more (compact_overhead_bits), not the wide panels' 8-bit codes, and every
// ISA's widen_panel gives back the wide panel pack_panel makes, byte for byte (a
// partial panel too).
TEST(PackWeights, CompactPanelsWidenToTheWidePanels) {
  ThreadPool pool(2);
  const int64_t rows = 24, cols = 512;
  int compact_types = 0;
  for (GgmlType type : kTypes) {
    const PanelLayout* layout = panel_layout(type);
    if (layout == nullptr || !layout->compact()) continue;
    ++compact_types;
    const double file_bits = 8.0 * static_cast<double>(row_bytes(type, cols)) / static_cast<double>(cols);
    const double stored_bits = 8.0 * static_cast<double>(layout->stored_panel_bytes(cols)) / (kPanelRows * cols);
    EXPECT_LE(stored_bits, file_bits + compact_overhead_bits(type)) << type_name(type);
    EXPECT_LT(stored_bits, 8.0 * static_cast<double>(layout->wide_panel_bytes(cols)) / (kPanelRows * cols)) << type_name(type);
    const auto m = random_matrix(type, rows, cols, 21, pool);
    ASSERT_TRUE(m->packed.compact()) << type_name(type);
    ASSERT_EQ(m->packed.panel_bytes(), layout->stored_panel_bytes(cols));
    for (Isa isa : {Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx}) {
      if (!cpu_supports(isa)) continue;
      const IsaKernels* k = kernels_for(isa);
      for (int64_t g = 0; g < 2; ++g) {
        std::vector<uint8_t> want(layout->wide_panel_bytes(cols)), got(want.size());
        pack_panel(m->w, g, want.data());
        k->widen_panel(*layout, m->packed.panel(g), cols, got.data());
        ASSERT_EQ(got, want) << type_name(type) << ", " << isa_name(isa) << ", panel " << g;
      }
    }
  }
  EXPECT_EQ(compact_types, 6);
}

TEST(PackWeights, FloatPanelsHoldSixteenRowsColumnByColumn) {
  constexpr int64_t kRows = 20, kCols = 5;
  std::vector<float> data(kRows * kCols);
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t c = 0; c < kCols; ++c) data[r * kCols + c] = static_cast<float>(100 * r + c + 1);
  PackedWeights p = pack_weights(WeightMatrix{GgmlType::kF32, kRows, kCols, reinterpret_cast<uint8_t*>(data.data()), 0});
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p.panel_bytes(), float_panel_bytes(GgmlType::kF32, kCols));
  EXPECT_EQ(p.panel_bytes() % 64, 0u);
  for (int64_t g = 0; g < 2; ++g) {
    const auto* panel = reinterpret_cast<const float*>(p.panel(g));
    for (int64_t c = 0; c < kCols; ++c)
      for (int64_t i = 0; i < kPanelRows; ++i) {
        const int64_t r = g * kPanelRows + i;
        EXPECT_EQ(panel[c * kPanelRows + i], r < kRows ? data[r * kCols + c] : 0.0f) << "row " << r << " col " << c;
      }
  }
}

TEST(Matmul, RejectsUnsupportedTypes) {
  std::vector<uint8_t> data(292);  // one Q8_K block: an activation format, never a weight
  float x[256] = {}, y[1];
  ThreadPool pool(1);
  WeightMatrix w{GgmlType::kQ8_K, 1, 256, data.data(), 292};
  EXPECT_THROW(matmul(w, x, 1, y, pool), Error);
  EXPECT_THROW(pack_weights(w), Error);
  WeightMatrix odd{GgmlType::kQ4_0, 1, 40, data.data(), 0};
  EXPECT_THROW(matmul(odd, x, 1, y, pool), Error);
  EXPECT_THROW(pack_weights(odd), Error);
}

TEST(Isa, ScalarAlwaysSupportedAndNamesAreStable) {
  EXPECT_TRUE(cpu_supports(Isa::kScalar));
  EXPECT_STREQ(isa_name(Isa::kAvx512), "avx512");
  EXPECT_TRUE(cpu_supports(active_isa()));
  if (!cpu_supports(Isa::kAmx)) {
    EXPECT_THROW(set_active_isa(Isa::kAmx), Error);
  }
}

// AMX is opt-in until measured faster on AMX hardware: without TPS_ISA the choice stops
// at AVX-512 whatever the CPU has.
TEST(Isa, DefaultStopsBelowAmx) {
  const char* env = std::getenv("TPS_ISA");
  if (env != nullptr && *env != '\0') GTEST_SKIP() << "TPS_ISA=" << env << " sets the cap";
  EXPECT_LE(static_cast<int>(active_isa()), static_cast<int>(kDefaultIsaCap));
  EXPECT_LT(static_cast<int>(kDefaultIsaCap), static_cast<int>(Isa::kAmx));
}

// Each path asks for what its kernels use and no more: an Ice Lake server (AVX-512 VNNI
// without BF16) once fell back to AVX2.
TEST(Isa, EachPathNeedsWhatItsKernelsUseAndNoMore) {
  CpuFeatures haswell;
  haswell.avx2 = haswell.fma = true;
  CpuFeatures alder_lake = haswell;
  alder_lake.avx_vnni = true;
  CpuFeatures skylake_x = haswell;
  skylake_x.avx512f = skylake_x.avx512bw = skylake_x.avx512vl = skylake_x.avx512dq = true;
  CpuFeatures ice_lake = skylake_x;
  ice_lake.avx512vnni = true;
  ice_lake.gfni = true;
  CpuFeatures sapphire_rapids = ice_lake;
  sapphire_rapids.avx512bf16 = sapphire_rapids.avx_vnni = true;
  sapphire_rapids.amx_tile = sapphire_rapids.amx_int8 = sapphire_rapids.amx_bf16 = true;
  CpuFeatures amx_without_gfni = sapphire_rapids;  // no such CPU; the AMX build uses GFNI
  amx_without_gfni.gfni = false;
  CpuFeatures no_fma = haswell;
  no_fma.fma = false;

  auto best = [](const CpuFeatures& f) {
    Isa b = Isa::kScalar;
    for (int i = 0; i < kIsaCount; ++i)
      if (isa_runs_on(static_cast<Isa>(i), f)) b = static_cast<Isa>(i);
    return b;
  };
  EXPECT_EQ(best(CpuFeatures{}), Isa::kScalar);
  EXPECT_EQ(best(no_fma), Isa::kScalar);
  EXPECT_EQ(best(haswell), Isa::kAvx2);
  EXPECT_EQ(best(alder_lake), Isa::kAvxVnni);
  EXPECT_EQ(best(skylake_x), Isa::kAvx2);  // no VNNI: the integer kernels need it
  EXPECT_EQ(best(ice_lake), Isa::kAvx512);
  EXPECT_FALSE(isa_runs_on(Isa::kAvxVnni, ice_lake));
  EXPECT_EQ(best(sapphire_rapids), Isa::kAmx);
  EXPECT_EQ(best(amx_without_gfni), Isa::kAvx512);
}

}  // namespace
}  // namespace tps
