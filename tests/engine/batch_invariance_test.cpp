// A sequence's logits are the same bits whatever shares its steps: here a decoding
// sequence meets another's 120-token prompt chunk in the same forward pass (past the
// matmul driver's chunk of 96 tokens, where compact 5- and 6-bit panels are widened),
// on every ISA path this CPU runs, through the engine every command uses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/model_runner.h"
#include "../model/test_fixtures.h"
#include "../support/scoped_isa.h"

namespace tps {
namespace {

struct Case {
  std::string model;
  Isa isa;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* m : {"models/synthetic/llama-gqa-q5_k.gguf", "models/synthetic/llama-gqa-q6_k.gguf",
                        "models/synthetic/llama-gqa-q4_0.gguf"})
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx})
      if (cpu_supports(isa)) out.push_back({m, isa});
  return out;
}

constexpr int kSteps = 12;

// The raw logits of each of kSteps greedy steps after `prompt`; with `other`, a second
// request with that prompt is submitted at the first's third step.
std::vector<std::vector<float>> logits_of(Model& model, const std::vector<int32_t>& prompt,
                                          const std::vector<int32_t>& other, int* shared_steps) {
  ModelRunner runner(model, plan_kv_geometry(model.config(), {0, 0, 16, 2}, nullptr), 2);
  EngineConfig config;
  config.max_seqs = 2;
  config.max_batch_tokens = 512;
  Engine engine(runner, config);
  int steps_with_two = 0;
  engine.set_step_observer([&](const StepInfo& s) { steps_with_two += s.sequences == 2; });
  std::vector<std::vector<float>> out;
  std::shared_ptr<RequestStream> second;
  GenerationRequest r;
  r.prompt = prompt;
  r.sampling.temperature = 0;
  r.max_tokens = kSteps;
  r.ignore_eos = true;
  // On the engine's thread: the other request arrives at the third step, whatever the
  // speed of the machine, and joins the next one.
  r.on_logits = [&](std::span<const float> l) {
    out.emplace_back(l.begin(), l.end());
    if (out.size() == 3 && !other.empty()) {
      GenerationRequest o;
      o.prompt = other;
      o.max_tokens = 4;
      o.ignore_eos = true;
      second = engine.submit(o);
    }
  };
  engine.submit(r)->wait_finished();
  if (second) second->wait_finished();
  if (shared_steps) *shared_steps = steps_with_two;
  return out;
}

class BatchInvariance : public ::testing::TestWithParam<Case> {};

TEST_P(BatchInvariance, DecodeBesideALongPrefillChunkGivesTheSameBits) {
  TPS_REQUIRE_FIXTURE(path, GetParam().model);
  test::ScopedIsa forced(GetParam().isa);
  auto model = Model::load(path);
  const int64_t vocab = model->config().vocab_size;
  std::vector<int32_t> prompt = {1}, long_prompt = {1};
  for (int i = 0; i < 8; ++i) prompt.push_back(static_cast<int32_t>(3 + i * 37 % (vocab - 3)));
  for (int i = 0; i < 119; ++i) long_prompt.push_back(static_cast<int32_t>(3 + i * 101 % (vocab - 3)));
  const auto alone = logits_of(*model, prompt, {}, nullptr);
  int shared = 0;
  const auto beside = logits_of(*model, prompt, long_prompt, &shared);
  ASSERT_EQ(alone.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(beside.size(), alone.size());
  EXPECT_GT(shared, 0) << "the two sequences never shared a step";
  for (size_t s = 0; s < alone.size(); ++s)
    for (int64_t i = 0; i < vocab; ++i)
      ASSERT_EQ(beside[s][i], alone[s][i]) << "step " << s << " logit " << i;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BatchInvariance, ::testing::ValuesIn(cases()), [](const auto& info) {
  std::string name = std::filesystem::path(info.param.model).stem().string() + "_" + isa_name(info.param.isa);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
});
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(BatchInvariance);

}  // namespace
}  // namespace tps
