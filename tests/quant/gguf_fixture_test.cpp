// Dequantizes every quantized tensor of files llama.cpp quantized and compares it with
// the f32 original: a wrong block layout gives an error near 1, not the format's few %.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "formats/gguf.h"
#include "quant/quantize.h"

namespace tps {
namespace {

std::string fixtures_dir() {
  if (const char* env = std::getenv("TPS_FIXTURES"); env != nullptr && *env != '\0') return env;
  return TPS_SOURCE_DIR "/../shared/fixtures";
}

double max_error_for(GgmlType t) {
  switch (t) {
    case GgmlType::kF16: return 1e-3;
    case GgmlType::kBF16: return 5e-3;
    case GgmlType::kQ8_0: return 0.008;
    case GgmlType::kQ6_K: return 0.025;
    case GgmlType::kQ5_0: case GgmlType::kQ5_1: case GgmlType::kQ5_K: return 0.05;
    default: return 0.11;  // 4-bit formats (llama.cpp's files: 0.07-0.09)
  }
}

class LlamaCppFile : public testing::TestWithParam<const char*> {};

TEST_P(LlamaCppFile, DequantizesCloseToF32Original) {
  std::string dir = fixtures_dir() + "/models/synthetic/";
  std::string name = std::string("llama-gqa-") + GetParam() + ".gguf";
  if (!std::filesystem::exists(dir + name) || !std::filesystem::exists(dir + "llama-gqa-f32.gguf"))
    GTEST_SKIP() << "fixtures not found in " << dir << " (set TPS_FIXTURES)";
  auto quantized = GgufFile::open(dir + name);
  auto original = GgufFile::open(dir + "llama-gqa-f32.gguf");
  int checked = 0;
  for (const auto& t : quantized->tensors()) {
    if (t.type == GgmlType::kF32) continue;
    const GgufTensor* ref = original->find_tensor(t.name);
    ASSERT_NE(ref, nullptr) << t.name;
    ASSERT_EQ(ref->type, GgmlType::kF32);
    ASSERT_EQ(ref->n_elements(), t.n_elements());
    int64_t n = t.n_elements();
    std::vector<float> got(static_cast<size_t>(n));
    dequantize_row(t.type, t.data, got.data(), n);
    const auto* want = reinterpret_cast<const float*>(ref->data);
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; ++i) num += (got[i] - want[i]) * (got[i] - want[i]), den += want[i] * want[i];
    double err = std::sqrt(num / den);
    EXPECT_LT(err, max_error_for(t.type)) << name << " " << t.name << " (" << type_name(t.type) << ")";
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(Synthetic, LlamaCppFile,
                         testing::Values("f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q4_k",
                                         "q5_k", "q6_k", "q4_k_m"));

}  // namespace
}  // namespace tps
