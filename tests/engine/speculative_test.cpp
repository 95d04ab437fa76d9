// Speculative decoding in the engine: lossless at temperature 0 for both drafters on
// every ISA path, drafts rolled back without a trace in the prefix cache, batches that
// mix speculative and plain sequences, and the n-gram lookup itself.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/timer.h"
#include "engine/engine.h"
#include "engine/model_runner.h"
#include "model/synth.h"
#include "../model/test_fixtures.h"
#include "../support/scoped_isa.h"
#include "../support/small_llama.h"
#include "../support/test_files.h"

namespace tps {
namespace {

TEST(NgramDraft, ContinuesTheMostRecentMatchOfTheLongestNgram) {
  const std::vector<int32_t> context = {1, 2, 3, 9, 1, 2, 3, 7, 8, 5, 2, 3};
  // "2 3" last occurred at 5-6, followed by 7 8 5 2 3; then "2 3" again, and so on.
  EXPECT_EQ(ngram_draft(context, 2, 4, 3), (std::vector<int32_t>{7, 8, 5}));
  // The continuation runs into the end: the lookup goes on from the drafts.
  EXPECT_EQ(ngram_draft(context, 2, 4, 7), (std::vector<int32_t>{7, 8, 5, 2, 3, 7, 8}));
  EXPECT_TRUE(ngram_draft(context, 4, 4, 3).empty());  // "5 2 3" never came before with one more
  EXPECT_TRUE(ngram_draft(std::vector<int32_t>{1, 2, 3, 4}, 1, 4, 3).empty());
  EXPECT_EQ(ngram_draft(std::vector<int32_t>{4, 5, 4}, 1, 1, 2), (std::vector<int32_t>{5, 4}));
}

TEST(NgramCeiling, CountsTheTokensThatFollowASeenNgram) {
  SpeculativeConfig c;
  c.draft_max = 8;
  const std::vector<int32_t> prompt = {1, 2, 3}, generated = {1, 2, 3, 4, 1, 2, 5};
  // "1 2" -> 3 came before (in the prompt); no other 2-gram of the text repeats with its next token.
  c.ngram_min = 2;
  NgramCeiling two = ngram_ceiling(prompt, generated, c);
  EXPECT_EQ(two.generated, 7);
  EXPECT_EQ(two.draftable, 1);
  EXPECT_EQ(two.steps, 6);
  // 1-grams: "3" -> 1? no; "1" -> 2 twice and "2" -> 3 once follow earlier occurrences.
  c.ngram_min = 1;
  NgramCeiling one = ngram_ceiling(prompt, generated, c);
  EXPECT_EQ(one.draftable, 3);
  EXPECT_EQ(one.steps, 4);
  EXPECT_DOUBLE_EQ(one.speedup(), 7.0 / 4);
  // Every token draftable: the steps are bounded by draft_max + 1 tokens each.
  c.draft_max = 1;
  NgramCeiling all = ngram_ceiling(std::vector<int32_t>{1, 2, 1, 2}, std::vector<int32_t>{1, 2, 1, 2}, c);
  EXPECT_EQ(all.draftable, 4);
  EXPECT_EQ(all.steps, 2);
  EXPECT_EQ(ngram_ceiling(prompt, {}, c).speedup(), 0);
  // A run of draftable tokens longer than draft_max needs a step per draft_max + 1 of them.
  NgramCeiling runs = ngram_ceiling(std::vector<int32_t>{5, 1, 2},
                                    std::vector<int32_t>{9, 5, 1, 2, 8, 5, 1, 2, 7, 5, 1, 2}, c);
  EXPECT_EQ(runs.draftable, 6);  // "1 2" after each "5" but the first
  EXPECT_EQ(runs.steps, 9);
}

TEST(SpeculativeCounts, DefineTheRatesOnce) {
  SpeculativeCounts c;
  c.add_step(4, 4);
  c.add_step(4, 1);
  c.add_step(2, 0);
  EXPECT_EQ(c.verify_steps, 3);
  EXPECT_EQ(c.drafted_tokens, 10);
  EXPECT_EQ(c.accepted_tokens, 5);
  EXPECT_DOUBLE_EQ(c.acceptance_rate(), 0.5);
  EXPECT_DOUBLE_EQ(c.mean_accepted_length(), 5.0 / 3);
  EXPECT_EQ(c.accepted_at, (std::vector<int64_t>{2, 1, 1, 1}));
}

struct EngineSetup {
  // draft_min: fewer drafts than this are not verified (4: every verified step has 4).
  EngineSetup(Model& target, Model* draft_model, SpecMode mode, int32_t max_seqs = 2, int32_t draft_min = 1)
      : runner(target, plan_kv_geometry(target.config(), {0, 0, 16, max_seqs}, nullptr), 1) {
    config.max_seqs = max_seqs;
    config.speculative.mode = mode;
    config.speculative.draft_max = 4;
    config.speculative.draft_min = draft_min;
    config.speculative.draft_p_min = 0;  // draft every time: the test is about losslessness
    if (draft_model != nullptr) {
      draft = std::make_unique<ModelRunner>(*draft_model, runner.kv_geometry(), runner.pool());
      config.draft = draft.get();
    }
    engine = std::make_unique<Engine>(runner, config);
  }
  ModelRunner runner;
  std::unique_ptr<ModelRunner> draft;
  EngineConfig config;
  std::unique_ptr<Engine> engine;
};

GenerationRequest greedy(std::vector<int32_t> prompt, int32_t n, bool speculative = true) {
  GenerationRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = n;
  r.ignore_eos = true;
  r.speculative = speculative;
  return r;
}

std::vector<int32_t> tokens_of(RequestStream& s) {
  std::vector<GeneratedToken> got;
  while (!s.finished()) s.wait(got, 1e18);  // a deadline too far for the clock must still wait
  std::vector<int32_t> ids;
  for (auto& t : got) ids.push_back(t.id);
  return ids;
}

struct Case {
  std::string target, draft;  // fixture paths; an empty draft means the n-gram drafter
  Isa isa;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  const std::vector<std::pair<std::string, std::string>> models = {
      {"models/stories260K.gguf", ""},
      {"models/stories260K.gguf", "models/stories260K.gguf"},  // the target as its own draft: all accepted
      {"models/synthetic/llama-gqa-f32.gguf", ""},
      {"models/synthetic/llama-gqa-f32.gguf", "models/synthetic/llama-gqa-q4_0.gguf"},
  };
  for (const auto& [t, d] : models)
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx})
      if (cpu_supports(isa)) out.push_back({t, d, isa});
  return out;
}

class Lossless : public ::testing::TestWithParam<Case> {};

// 128 greedy tokens with and without speculation, alone and with a plain sequence
// beside the speculative one.
TEST_P(Lossless, GreedyTokensAreThoseWithoutSpeculation) {
  const Case& c = GetParam();
  TPS_REQUIRE_FIXTURE(target_path, c.target);
  test::ScopedIsa forced(c.isa);
  auto target = Model::load(target_path);
  std::unique_ptr<Model> draft;
  if (!c.draft.empty()) draft = Model::load(testing::fixture(c.draft));
  const std::vector<int32_t> prompt = target->tokenizer().encode("Once upon a time, there was a little girl named Lily. She loved to play outside", true, true);
  const std::vector<int32_t> other = target->tokenizer().encode("The cat sat on the mat.", true, true);

  EngineSetup plain(*target, nullptr, SpecMode::kOff);
  const auto want = tokens_of(*plain.engine->submit(greedy(prompt, 128)));
  const auto want_other = tokens_of(*plain.engine->submit(greedy(other, 64)));

  EngineSetup spec(*target, draft.get(), c.draft.empty() ? SpecMode::kNgram : SpecMode::kDraftModel);
  EXPECT_EQ(tokens_of(*spec.engine->submit(greedy(prompt, 128))), want) << "alone";
  auto a = spec.engine->submit(greedy(prompt, 128));
  auto b = spec.engine->submit(greedy(other, 64, false));
  EXPECT_EQ(tokens_of(*a), want) << "beside a plain sequence";
  EXPECT_EQ(tokens_of(*b), want_other) << "the plain sequence beside it";
  const SpeculativeCounts counts = spec.engine->stats().speculative;
  EXPECT_GT(counts.drafted_tokens, 0) << "nothing was drafted";
  EXPECT_EQ(b->speculative().verify_steps, 0) << "\"speculative\": false drafted";
  if (c.draft == c.target) {
    EXPECT_EQ(counts.accepted_tokens, counts.drafted_tokens) << "the target as its own draft";
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Lossless, ::testing::ValuesIn(cases()), [](const auto& info) {
  std::string name = std::filesystem::path(info.param.target).stem().string() + "_" +
                     (info.param.draft.empty() ? std::string("ngram") : std::filesystem::path(info.param.draft).stem().string()) +
                     "_" + isa_name(info.param.isa);
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
});
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Lossless);

// A synthetic model with a skewed output head (`tps synth --output-skew`) falls into
// loops, so the n-gram drafter's drafts are accepted more than one a step, on every
// path: the fixtures' texts rarely give more than one.
class LoopingText : public ::testing::TestWithParam<Isa> {};

std::string looping_model() {
  static const std::string path = [] {
    // TinyLlama's 32000 tokens: on a small vocabulary even unskewed text soon repeats.
    SynthOptions o{test::small_llama(32000), *parse_weight_scheme("q4_0"), 1, ""};
    o.output_skew = 10;
    const std::string p = test::temp_path("looping-q4_0.gguf");
    ThreadPool pool(2);
    synthesize_model(o, p, pool);
    return p;
  }();
  return path;
}

TEST_P(LoopingText, MoreThanOneDraftIsAcceptedPerStepAndLossless) {
  if (!cpu_supports(GetParam())) GTEST_SKIP() << "this CPU has no " << isa_name(GetParam());
  test::ScopedIsa forced(GetParam());
  auto model = Model::load(looping_model());
  const std::vector<int32_t> prompt = model->tokenizer().encode("Once upon a time, there was a little girl named Lily. She loved to play outside", true, true);
  EngineSetup plain(*model, nullptr, SpecMode::kOff);
  const auto want = tokens_of(*plain.engine->submit(greedy(prompt, 128)));
  SpeculativeConfig bigrams;
  bigrams.ngram_min = 2;
  EXPECT_GT(ngram_ceiling(prompt, want, bigrams).draftable, 64) << "the skewed model's text does not repeat";

  EngineSetup spec(*model, nullptr, SpecMode::kNgram, 2, 4);  // every lookup that finds 4 tokens is verified
  EXPECT_EQ(tokens_of(*spec.engine->submit(greedy(prompt, 128))), want);
  const SpeculativeCounts counts = spec.engine->stats().speculative;
  // About 2.1 on every path (4 drafts a step).
  EXPECT_GE(counts.mean_accepted_length(), 1.5) << counts.accepted_tokens << " accepted in "
                                                 << counts.verify_steps << " steps";
}

INSTANTIATE_TEST_SUITE_P(Paths, LoopingText,
                         ::testing::Values(Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

// Rejected drafts never reach the prefix cache: a request run with a draft model that
// is mostly wrong leaves blocks whose hashes match a later plain run of the same text.
TEST(Speculative, RejectedDraftsLeaveNoBlockBehind) {
  TPS_REQUIRE_FIXTURE(target_path, "models/synthetic/llama-gqa-f32.gguf");
  TPS_REQUIRE_FIXTURE(draft_path, "models/stories260K.gguf");  // same vocabulary, other weights
  auto target = Model::load(target_path);
  auto draft = Model::load(draft_path);
  EngineSetup spec(*target, draft.get(), SpecMode::kDraftModel, 1);
  std::vector<int32_t> prompt = {1};
  for (int i = 0; i < 40; ++i) prompt.push_back(3 + (i * 31) % 500);
  const auto first = tokens_of(*spec.engine->submit(greedy(prompt, 60)));
  const SpeculativeCounts counts = spec.engine->stats().speculative;
  ASSERT_GT(counts.drafted_tokens, counts.accepted_tokens) << "some drafts must be rejected";
  // The same prompt and its continuation again: every full block of the first run is
  // found in the cache, and the output is the same, so the blocks held accepted tokens.
  std::vector<int32_t> again = prompt;
  again.insert(again.end(), first.begin(), first.end() - 1);
  auto s = spec.engine->submit(greedy(again, 8, false));
  tokens_of(*s);
  EXPECT_EQ(s->cached_tokens(), static_cast<int32_t>(again.size()) / 16 * 16);
  EngineSetup plain(*target, nullptr, SpecMode::kOff, 1);
  EXPECT_EQ(tokens_of(*plain.engine->submit(greedy(prompt, 60))), first);
}

// A draft model starts behind by the whole prompt. Its catch-up takes at most the step
// budget of rows a step, so a long prompt's draft prefill does not stall every sequence
// of a batch in one step; drafting starts once it has caught up, and stays lossless.
TEST(Speculative, ADraftsCatchUpIsSpreadOverSteps) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  // The draft, counting the rows it is fed in each step.
  class RowCounter : public BatchModel {
   public:
    explicit RowCounter(BatchModel& inner) : inner_(inner) {}
    int32_t vocab_size() const override { return inner_.vocab_size(); }
    KvGeometry kv_geometry() const override { return inner_.kv_geometry(); }
    void forward(const ForwardBatch& b, float* logits) override {
      step_rows += static_cast<int64_t>(b.size());
      inner_.forward(b, logits);
    }
    void copy_block(int32_t from, int32_t to) override { inner_.copy_block(from, to); }
    int64_t step_rows = 0;

   private:
    BatchModel& inner_;
  };
  ModelRunner runner(*model, plan_kv_geometry(model->config(), {0, 0, 16, 1}, nullptr), 1);
  ModelRunner draft(*model, runner.kv_geometry(), runner.pool());
  RowCounter counter(draft);
  EngineConfig config;
  config.max_seqs = 1;
  config.max_batch_tokens = 16;
  config.speculative.mode = SpecMode::kDraftModel;
  // A fixed length: every step drafts, whatever drafting costs this tiny model.
  config.speculative.draft_min = config.speculative.draft_max = 4;
  config.speculative.draft_p_min = 0;
  config.draft = &counter;
  int64_t most = 0;  // the most draft rows in one step
  Engine engine(runner, config);
  engine.set_step_observer([&](const StepInfo&) {
    most = std::max(most, counter.step_rows);
    counter.step_rows = 0;
  });
  std::vector<int32_t> prompt = model->tokenizer().encode(
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her "
      "friends. One day, she saw a big red ball under a tree, and she ran to get it. Her mom said it was time "
      "to go home, but Lily wanted to play a little longer.",
      true, true);
  ASSERT_GT(prompt.size(), 3 * 16u);
  const auto got = tokens_of(*engine.submit(greedy(prompt, 48)));
  // Catch-up rows within the budget, plus one row a round for the other drafts.
  EXPECT_LE(most, 16 + config.speculative.draft_max);
  EXPECT_GT(engine.stats().speculative.accepted_tokens, 0) << "the target as its own draft: drafts once caught up";
  EngineSetup plain(*model, nullptr, SpecMode::kOff, 1);
  EXPECT_EQ(got, tokens_of(*plain.engine->submit(greedy(prompt, 48))));
}

TEST(Speculative, ADraftWithAnotherVocabularyIsRefused) {
  TPS_REQUIRE_FIXTURE(target_path, "models/stories260K.gguf");
  auto target = Model::load(target_path);
  ModelRunner runner(*target, plan_kv_geometry(target->config(), {0, 0, 16, 1}, nullptr), 1);
  class OtherVocab : public BatchModel {
   public:
    explicit OtherVocab(KvGeometry g) : g_(g) {}
    int32_t vocab_size() const override { return 7; }
    KvGeometry kv_geometry() const override { return g_; }
    void forward(const ForwardBatch&, float*) override {}
    void copy_block(int32_t, int32_t) override {}
   private:
    KvGeometry g_;
  } other(runner.kv_geometry());
  EngineConfig config;
  config.speculative.mode = SpecMode::kDraftModel;
  config.draft = &other;
  EXPECT_THROW(Engine(runner, config), Error);
}

}  // namespace
}  // namespace tps
