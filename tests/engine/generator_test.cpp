#include "engine/generator.h"

#include <gtest/gtest.h>

#include "core/error.h"
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

}  // namespace

TEST(Generator, GreedyStreamsTheTextItReturns) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  ThreadPool pool(1);
  Generator g(*model, pool);
  std::string streamed;
  const std::vector<int32_t> prompt = {model->tokenizer().bos_id()};
  GenerationResult r = g.generate(prompt, greedy(20), [&](std::string_view t) { streamed += t; });
  EXPECT_EQ(r.tokens.size(), 20u);
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(streamed, r.text);
  EXPECT_EQ(r.text.rfind("Once upon a time", 0), 0u) << r.text;
  EXPECT_EQ(r.prompt_tokens, 1);
  EXPECT_EQ(r.itl_s.size(), 19u);
  EXPECT_GE(r.ttft_s, r.prefill_s);
  EXPECT_EQ(g.position(), 20);  // the prompt and all but the last generated token
}

TEST(Generator, StopsBeforeAStopString) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  ThreadPool pool(1);
  Generator g(*model, pool);
  const std::vector<int32_t> prompt = {model->tokenizer().bos_id()};
  const std::string full = g.generate(prompt, greedy(60)).text;
  const size_t at = full.find("Lily");
  ASSERT_NE(at, std::string::npos) << full;

  GenerationOptions o = greedy(60);
  o.stop = {"zzz", "Lily"};
  std::string streamed;
  GenerationResult r = g.generate(prompt, o, [&](std::string_view t) { streamed += t; });
  EXPECT_EQ(r.finish_reason, "stop");
  EXPECT_EQ(r.text, full.substr(0, at));
  EXPECT_EQ(streamed, r.text);  // nothing of the stop string leaked into the stream
}

TEST(Generator, SameSeedSameText) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  ThreadPool pool(1);
  Generator g(*model, pool);
  GenerationOptions o;
  o.max_tokens = 40;
  o.sampling.seed = 42;
  const std::vector<int32_t> prompt = {model->tokenizer().bos_id()};
  const std::string a = g.generate(prompt, o).text;
  EXPECT_EQ(g.generate(prompt, o).text, a);
  o.sampling.seed = 43;
  EXPECT_NE(g.generate(prompt, o).text, a);
}

TEST(Generator, RefusesMoreThanTheContext) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  ThreadPool pool(1);
  Generator g(*model, pool, 32);
  const std::vector<int32_t> prompt(10, 1);
  try {
    g.generate(prompt, greedy(23));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "prompt of 10 tokens plus 23 to generate exceeds the context of 32");
  }
  EXPECT_NO_THROW(g.generate(prompt, greedy(22)));
  EXPECT_THROW(Generator(*model, pool, model->config().context_length + 1), Error);
}

TEST(Generator, PrefillThenStepMatchesOnePrefill) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  ThreadPool pool(1);
  Generator g(*model, pool, 64);
  const std::vector<int32_t> tokens = {1, 403, 407, 261, 378};
  std::span<float> all = g.prefill(tokens);
  std::vector<float> expected(all.begin(), all.end());
  g.reset();
  g.prefill(std::span(tokens).first(4));
  std::span<float> last = g.step(tokens[4]);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(last[i], expected[i], 1e-4) << i;
  EXPECT_EQ(g.position(), 5);
}

TEST(Generator, KvCacheGrowsKeepingWhatItHolds) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  ThreadPool pool(1);
  std::vector<int32_t> tokens = {1};
  for (int i = 0; i < 40; ++i) tokens.push_back(300 + (i * 7) % 200);
  Generator whole(*model, pool, 128);
  whole.reserve(128);
  std::span<float> all = whole.prefill(tokens);
  std::vector<float> expected(all.begin(), all.end());
  Generator stepwise(*model, pool, 128);  // grows block by block, past 16 and 32
  std::span<float> last;
  for (int32_t t : tokens) last = stepwise.step(t);
  // One prompt forward and 41 one-token steps sum in different orders, and a last-bit
  // difference can round a cached half the other way: halves' precision (2^-11) bounds
  // what agrees. A grown cache that lost a block would be off by far more.
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) worst = std::max<double>(worst, std::fabs(last[i] - expected[i]));
  EXPECT_LT(worst, 2e-3);
}

TEST(Percentile, NearestRank) {
  EXPECT_EQ(percentile({}, 50), 0);
  EXPECT_EQ(percentile({3, 1, 2, 4}, 50), 2);
  EXPECT_EQ(percentile({3, 1, 2, 4}, 99), 4);
  EXPECT_EQ(percentile({3, 1, 2, 4}, 0), 1);
}

}  // namespace tps

namespace tps {

TEST(Generator, EndsAtAnEndOfGenerationTokenUnlessToldNotTo) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto base = Model::load(path);
  const int32_t eos = base->tokenizer().eos_id();
  const int32_t a = base->tokenizer().find_token("\xe2\x96\x81Once");
  ASSERT_GE(a, 0);
  testing::ScriptedModel model(std::move(base), {a, a, eos, a, a});
  ThreadPool pool(1);
  Generator g(model, pool, 64);
  const std::vector<int32_t> prompt = {1};
  GenerationResult r = g.generate(prompt, greedy(5));
  EXPECT_EQ(r.finish_reason, "eog");
  EXPECT_EQ(r.tokens, (std::vector<int32_t>{a, a}));
  EXPECT_EQ(r.text, "Once Once");
  EXPECT_EQ(model.steps(), 3u);  // the EOG token was sampled, nothing run after it

  GenerationOptions o = greedy(2);
  o.stop_at_eog = false;
  r = g.generate(prompt, o);  // continues the script: a, a
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_EQ(r.tokens.size(), 2u);
}

}  // namespace tps
