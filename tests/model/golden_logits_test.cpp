// Every fixture model against llama.cpp's logits (golden/llama.cpp/MODEL.pN.json),
// teacher-forced, within the fixtures' tolerances for its weight types, on every
// instruction-set path this CPU can run.
#include <algorithm>
#include <filesystem>

#include <gtest/gtest.h>

#include "engine/logit_check.h"
#include "kernels/matmul.h"
#include "support/scoped_isa.h"
#include "test_fixtures.h"

namespace tps {

namespace {

struct GoldenCase {
  std::string golden;  // path of the reference dump
  std::string model;   // path of the GGUF it came from
  Isa isa;
  FloatMath math = FloatMath::kF32;
};

void PrintTo(const GoldenCase& c, std::ostream* os) {
  *os << c.golden << " on " << isa_name(c.isa) << ", " << float_math_name(c.math) << " float math";
}

std::vector<GoldenCase> golden_cases() {
  std::vector<GoldenCase> cases;
  const std::string dir = testing::fixtures_dir();
  if (dir.empty() || !std::filesystem::is_directory(dir + "/golden/llama.cpp")) return cases;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/golden/llama.cpp"))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    // MODEL.pN.json -> models/MODEL.gguf or models/synthetic/MODEL.gguf
    std::string stem = std::filesystem::path(f).stem().stem().string();
    std::string model = testing::fixture("models/" + stem + ".gguf");
    if (model.empty()) model = testing::fixture("models/synthetic/" + stem + ".gguf");
    if (model.empty()) continue;
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx})
      if (cpu_supports(isa)) cases.push_back({f, model, isa});
    // The opt-in bf16 float math, within its own tolerance: vdpbf16ps, and tdpbf16ps tiles.
    for (Isa isa : {Isa::kAvx512, Isa::kAmx})
      if (cpu_has_avx512_bf16() && cpu_supports(isa)) cases.push_back({f, model, isa, FloatMath::kBf16});
  }
  return cases;
}

std::string case_name(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string name = std::filesystem::path(info.param.golden).stem().string() + "_" + isa_name(info.param.isa);
  if (info.param.math != FloatMath::kF32) name += std::string("_") + float_math_name(info.param.math);
  std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
  return name;
}

class GoldenLogitsTest : public ::testing::TestWithParam<GoldenCase> {};

}  // namespace

TEST_P(GoldenLogitsTest, WithinTolerance) {
  const GoldenCase& c = GetParam();
  test::ScopedIsa forced(c.isa);
  test::ScopedFloatMath math(c.math);
  auto model = Model::load(c.model);
  // One thread: threading is covered by the forward tests.
  LogitsComparison result = compare_with_golden(*model, read_golden_logits(c.golden), 1);
  LogitsTolerance tol = default_tolerance(*model);
  EXPECT_LE(result.mean_rms_rel, tol.max_rms_rel);
  EXPECT_GE(result.top1_agreement, tol.min_top1);
  RecordProperty("mean_rms_rel", std::to_string(result.mean_rms_rel));
  RecordProperty("top1", std::to_string(result.top1_agreement));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenLogitsTest, ::testing::ValuesIn(golden_cases()), case_name);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(GoldenLogitsTest);

TEST(GoldenLogitsFixtures, Present) {
  if (testing::fixtures_dir().empty()) GTEST_SKIP() << "../shared/fixtures is absent: golden logit tests skipped";
  EXPECT_FALSE(golden_cases().empty());
}

}  // namespace tps
