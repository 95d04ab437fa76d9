// Every weight type `tps synth` writes, loaded and run end to end on every ISA path the
// CPU has: its logits stay within the type's rounding of the F32 model of the same
// seed, and each path within activation rounding of the scalar path. The kernel tests
// check products; this checks that a whole model of the type loads and runs.
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/synth.h"

#include "support/scoped_isa.h"
#include "support/small_llama.h"
#include "support/test_files.h"

namespace tps {
namespace {

const std::vector<int32_t> kPrompt = {1, 40, 77, 12, 250, 9, 131, 64};

// Logits after the prompt, run as one batch.
std::vector<float> last_logits(const std::string& path, ThreadPool& pool) {
  auto m = Model::load(path);
  KvCache kv(m->config(), 1, 16);
  std::vector<int32_t> table = {0};
  ForwardBatch b;
  b.sequences.push_back({table.data(), 1});
  for (size_t i = 0; i < kPrompt.size(); ++i) b.add(kPrompt[i], static_cast<int32_t>(i), 0, i + 1 == kPrompt.size());
  std::vector<float> out(static_cast<size_t>(m->config().vocab_size));
  m->forward(b, kv, out.data(), pool);
  return out;
}

double relative_rms(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) err += (a[i] - b[i]) * (a[i] - b[i]), norm += b[i] * b[i];
  return std::sqrt(err / norm);
}

std::string synth_model(const std::string& type, ThreadPool& pool) {
  const std::string path = test::temp_path("synth-types-" + type + ".gguf");
  synthesize_model({test::small_llama(512), *parse_weight_scheme(type), 7, ""}, path, pool);
  return path;
}

}  // namespace

TEST(SynthTypes, EveryTypeRunsOnEveryPathNearItsF32Twin) {
  ThreadPool pool(2);
  const std::string f32_path = synth_model("f32", pool);
  const std::vector<float> f32 = last_logits(f32_path, pool);
  for (const std::string& type : weight_scheme_names()) {
    SCOPED_TRACE(type);
    const std::string path = synth_model(type, pool);
    std::vector<float> scalar;
    {
      test::ScopedIsa isa(Isa::kScalar);
      scalar = last_logits(path, pool);
    }
    // The logits of two layers move by about twice the weights' rounding: Q2_K's weights
    // by 0.27 of their spread, its logits 0.62; Q3_K's 0.15, its logits 0.33; 4-bit
    // types' 0.07-0.09, their logits 0.19-0.20; 8-bit ones 0.01.
    const double bound = type == "q2_k" ? 0.7 : type == "q3_k" ? 0.4 : 0.25;
    EXPECT_LT(relative_rms(scalar, f32), bound) << "the type's model is far from its F32 twin";
    for (Isa isa : {Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512}) {
      if (!cpu_supports(isa)) continue;
      test::ScopedIsa scoped(isa);
      EXPECT_LT(relative_rms(last_logits(path, pool), scalar), 0.05) << isa_name(isa);
    }
    std::filesystem::remove(path);
  }
  std::filesystem::remove(f32_path);
}

}  // namespace tps
