// One request through the engine to its end (engine/generation.h), as tps run makes it.
#include "engine/generation.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "engine/model_runner.h"
#include "../model/test_fixtures.h"
#include "scripted_model.h"

namespace tps {

namespace {

GenerationOptions greedy(int32_t n) {
  GenerationOptions o;
  o.max_tokens = n;
  o.sampling.temperature = 0;
  return o;
}

// An engine over `model` for one sequence of up to `context` tokens, as tps run builds it.
struct OneSequence {
  OneSequence(Model& model, int64_t context = 0)
      : runner(model, plan_kv_geometry(model.config(), {context, 0, 16, 1}, nullptr), 1),
        engine(runner, config(model)) {}
  static EngineConfig config(const Model& model) {
    EngineConfig c;
    c.max_seqs = 1;
    const Tokenizer& t = model.tokenizer();
    c.is_eog = [&t](int32_t id) { return t.is_eog(id); };
    return c;
  }
  ModelRunner runner;
  Engine engine;
};

}  // namespace

TEST(Generation, GreedyStreamsTheTextItReturns) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  OneSequence s(*model);
  std::string streamed;
  const std::vector<int32_t> prompt = {model->tokenizer().bos_id()};
  GenerationResult r =
      generate(s.engine, model->tokenizer(), prompt, greedy(20), [&](std::string_view t) { streamed += t; });
  EXPECT_EQ(r.tokens.size(), 20u);
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(streamed, r.text);
  EXPECT_EQ(r.text.rfind("Once upon a time", 0), 0u) << r.text;
  EXPECT_EQ(r.prompt_tokens, 1);
  EXPECT_EQ(r.itl_s.size(), 19u);
  EXPECT_GE(r.ttft_s, r.prefill_s);
  EXPECT_GT(r.prefill_s, 0);
}

TEST(Generation, StopsBeforeAStopString) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  OneSequence s(*model);
  const std::vector<int32_t> prompt = {model->tokenizer().bos_id()};
  const std::string full = generate(s.engine, model->tokenizer(), prompt, greedy(60)).text;
  const size_t at = full.find("Lily");
  ASSERT_NE(at, std::string::npos) << full;

  GenerationOptions o = greedy(60);
  o.stop = {"zzz", "Lily"};
  std::string streamed;
  GenerationResult r = generate(s.engine, model->tokenizer(), prompt, o, [&](std::string_view t) { streamed += t; });
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.text, full.substr(0, at));
  EXPECT_EQ(streamed, r.text);  // nothing of the stop string leaked into the stream
}

TEST(Generation, SameSeedSameText) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  OneSequence s(*model);
  GenerationOptions o;
  o.max_tokens = 40;
  o.sampling.seed = 42;
  const std::vector<int32_t> prompt = {model->tokenizer().bos_id()};
  const std::string a = generate(s.engine, model->tokenizer(), prompt, o).text;
  EXPECT_EQ(generate(s.engine, model->tokenizer(), prompt, o).text, a);
  o.sampling.seed = 43;
  EXPECT_NE(generate(s.engine, model->tokenizer(), prompt, o).text, a);
}

TEST(Generation, EndsAtTheContextAndRefusesAPromptThatFillsIt) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  OneSequence s(*model, 32);
  const std::vector<int32_t> prompt(10, 1);
  GenerationOptions o = greedy(100);
  o.stop_at_eog = false;
  GenerationResult r = generate(s.engine, model->tokenizer(), prompt, o);
  EXPECT_EQ(r.tokens.size(), 22u);
  EXPECT_EQ(r.finish_reason, "length");
  try {
    generate(s.engine, model->tokenizer(), std::vector<int32_t>(32, 1), greedy(1));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "the prompt is 32 tokens; the context holds 32, so it must be shorter");
  }
  EXPECT_THROW(generate(s.engine, model->tokenizer(), std::vector<int32_t>{}, greedy(1)), Error);
}

TEST(Generation, EndsAtAnEndOfGenerationTokenUnlessToldNotTo) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto base = Model::load(path);
  const int32_t eos = base->tokenizer().eos_id();
  const int32_t a = base->tokenizer().find_token("\xe2\x96\x81Once");
  ASSERT_GE(a, 0);
  testing::ScriptedModel model(std::move(base), {a, a, eos, a, a});
  OneSequence s(model, 64);
  const std::vector<int32_t> prompt = {1};
  GenerationResult r = generate(s.engine, model.tokenizer(), prompt, greedy(5));
  EXPECT_EQ(r.finish_reason, "eog");
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{a, a}));
  EXPECT_EQ(r.text, "Once Once");
  EXPECT_EQ(model.steps(), 3u);  // the EOG token was sampled, nothing run after it

  GenerationOptions o = greedy(2);
  o.stop_at_eog = false;
  r = generate(s.engine, model.tokenizer(), prompt, o);  // continues the script: a, a
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(r.tokens.size(), 2u);
}

TEST(KvGeometry, DerivesBlocksAndCutsTheContextToWhatTheyHold) {
  ModelConfig m;
  m.context_length = 2048;
  std::string note;
  KvGeometry g = plan_kv_geometry(m, {0, 0, 16, 1}, &note);
  EXPECT_EQ(g.context, 2048);
  EXPECT_EQ(g.blocks, 2048 / 16 + 1);  // the whole context and one block for copy-on-write
  EXPECT_EQ(note, "");
  g = plan_kv_geometry(m, {0, 0, 16, 8}, &note);
  EXPECT_EQ(g.blocks, 8 * 512 / 16);  // every sequence at 512 tokens
  g = plan_kv_geometry(m, {0, 9, 16, 1}, &note);
  EXPECT_EQ(g.context, 8 * 16);
  EXPECT_EQ(note, "context limited to 128 tokens by 9 KV blocks");
  g = plan_kv_geometry(m, {4096, 0, 16, 1}, &note);
  EXPECT_EQ(g.context, 4096);
  EXPECT_EQ(note, "a context of 4096 tokens is longer than the 2048 the model was trained on");
  EXPECT_THROW(plan_kv_geometry(m, {-5, 0, 16, 1}, nullptr), Error);
  EXPECT_THROW(plan_kv_geometry(m, {0, 1, 16, 1}, nullptr), Error);
  EXPECT_THROW(plan_kv_geometry(m, {0, 0, 0, 1}, nullptr), Error);
  EXPECT_THROW(plan_kv_geometry(m, {0, 0, 16, 0}, nullptr), Error);
}

TEST(Percentile, NearestRank) {
  EXPECT_EQ(percentile({}, 50), 0);
  EXPECT_EQ(percentile({3, 1, 2, 4}, 50), 2);
  EXPECT_EQ(percentile({3, 1, 2, 4}, 99), 4);
  EXPECT_EQ(percentile({3, 1, 2, 4}, 0), 1);
}

}  // namespace tps
