#pragma once
// A speculative `tps bench` row (--spec ngram, --draft-model) as the roofline explains it.
// Of the decode steps, a share f verify drafts and the rest decode one token (an adaptive
// drafter skips steps). A verify step yields 1 + L tokens (L: mean accepted length) and
// costs r plain steps (r: the verify cost ratio) plus d plain steps of drafting, so
//   speedup = (1 + f L) / (1 + f (r - 1 + d)).
// With a per-token acceptance alpha from another run, L = E(alpha, k) - 1 at this run's
// mean draft length k (estimator.h): the speedup that acceptance would give at this
// run's costs (docs/roofline.md, "Speculative decoding").
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace tps {

struct SpeculativeRun {
  std::string drafter;
  double mean_draft_length = 0;     // k: drafted tokens per verify step
  double acceptance_rate = 0;       // accepted / drafted draft tokens
  double mean_accepted_length = 0;  // L: accepted draft tokens per verify step
  double verify_step_share = 0;     // f: verify steps / decode steps
  double verify_cost_ratio = 0;     // r: a verify step's forward pass over a plain step's
  double draft_cost = 0;            // d: drafting per verify step, in plain steps
  double measured_speedup = 0;      // tokens/s over the same case without speculation

  // The run's per-token acceptance (the alpha whose series gives its L at its k).
  double per_token_acceptance() const;
  double predicted_speedup() const;                        // with the run's own L
  double predicted_speedup(double per_token_alpha) const;  // with another run's acceptance
};

// The "speculative" object of a tps.bench/1 row, whose case generated `decode_tokens`
// tokens over its timed repetitions (all sequences). nullopt when the row has none;
// throws tps::Error naming `where` and the field when it is malformed.
std::optional<SpeculativeRun> parse_speculative_run(const nlohmann::json& row, double decode_tokens,
                                                    const std::string& where);

}  // namespace tps
