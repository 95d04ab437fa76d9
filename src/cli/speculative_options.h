#pragma once
// The speculative-decoding flags that run, bench and serve share, and the drafter they
// set up on an engine: an n-gram lookup, or a draft model loaded beside the target whose
// KV cache mirrors the target's blocks and whose passes run on the target's threads.
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "engine/engine.h"
#include "engine/model_runner.h"

namespace tps::cli {

struct SpeculativeArgs {
  std::string spec = "off";  // off, ngram (or draft, implied by --draft-model)
  std::string draft_model;
  SpeculativeConfig config;
};

void add_speculative_options(CLI::App& sub, SpeculativeArgs& a);

// A drafter ready for EngineConfig: the settings, and the draft model when there is one.
struct Drafter {
  SpeculativeConfig config;
  std::unique_ptr<Model> model;
  std::unique_ptr<ModelRunner> runner;
  void apply(EngineConfig& engine) {
    engine.speculative = config;
    engine.draft = runner.get();
  }
};

// Throws tps::Error (exit 2) for a bad flag, or a draft whose vocabulary is not the
// target's.
Drafter make_drafter(const SpeculativeArgs& a, ModelRunner& target);
// The parts of make_drafter: the checked settings, and the draft model (nullptr
// without one).
SpeculativeConfig speculative_config(const SpeculativeArgs& a);
std::unique_ptr<Model> load_draft_model(const SpeculativeArgs& a, const Model& target);

}  // namespace tps::cli
