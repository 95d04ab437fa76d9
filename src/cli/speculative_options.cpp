#include "cli/speculative_options.h"

#include "cli/command.h"

#include "core/error.h"

namespace tps::cli {

void add_speculative_options(CLI::App& sub, SpeculativeArgs& a) {
  sub.add_option("--spec", a.spec, "speculative decoding: off, or ngram (prompt and context lookup)")
      ->capture_default_str();
  sub.add_option("--draft-model", a.draft_model, "speculative decoding with this smaller GGUF as the draft");
  add_ranged_option(sub, "--draft-max", a.config.draft_max, "drafts per verify step at most", 1, 64);
  add_ranged_option(sub, "--draft-min", a.config.draft_min, "fewer drafts than this are not verified", 1, 64);
  add_ranged_option(sub, "--draft-p-min", a.config.draft_p_min, "a draft model stops below this probability of its pick",
                    0.0f, 1.0f);
  add_ranged_option(sub, "--ngram-min", a.config.ngram_min, "shortest n-gram looked up", 1, 64);
  add_ranged_option(sub, "--ngram-max", a.config.ngram_max, "longest n-gram looked up", 1, 64);
}

namespace {

void check_same_vocabulary(const Tokenizer& target, const Tokenizer& draft, const std::string& path) {
  if (draft.vocab_size() != target.vocab_size())
    fail("the draft model {} has a vocabulary of {} tokens, the target {}", path, draft.vocab_size(),
         target.vocab_size());
  for (int32_t id = 0; id < target.vocab_size(); ++id)
    if (draft.token_to_piece(id, true) != target.token_to_piece(id, true))
      fail("the draft model {} has another vocabulary: token {} is '{}', the target's '{}'", path, id,
           draft.token_to_piece(id, true), target.token_to_piece(id, true));
}

}  // namespace

SpeculativeConfig speculative_config(const SpeculativeArgs& a) {
  SpeculativeConfig c = a.config;
  if (!a.draft_model.empty()) {
    if (a.spec != "off" && a.spec != "draft") fail("--draft-model and --spec {} exclude each other", a.spec);
    c.mode = SpecMode::kDraftModel;
  } else if (a.spec == "ngram") {
    c.mode = SpecMode::kNgram;
  } else if (a.spec != "off") {
    fail("--spec must be off or ngram (or use --draft-model), got '{}'", a.spec);
  }
  if (c.mode != SpecMode::kOff) check_speculative_config(c);
  return c;
}

std::unique_ptr<Model> load_draft_model(const SpeculativeArgs& a, const Model& target) {
  if (a.draft_model.empty()) return nullptr;
  auto draft = Model::load(a.draft_model);
  check_same_vocabulary(target.tokenizer(), draft->tokenizer(), a.draft_model);
  return draft;
}

Drafter make_drafter(const SpeculativeArgs& a, ModelRunner& target) {
  Drafter d;
  d.config = speculative_config(a);
  d.model = load_draft_model(a, target.model());
  if (d.model) d.runner = std::make_unique<ModelRunner>(*d.model, target.kv_geometry(), target.pool());
  return d;
}

}  // namespace tps::cli
