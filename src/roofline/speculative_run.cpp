#include "roofline/speculative_run.h"

#include "core/error.h"
#include "roofline/estimator.h"

namespace tps {

double SpeculativeRun::per_token_acceptance() const {
  return tps::per_token_acceptance(mean_accepted_length, mean_draft_length);
}

double SpeculativeRun::predicted_speedup() const {
  const double f = verify_step_share;
  return (1 + f * mean_accepted_length) / (1 + f * (verify_cost_ratio - 1 + draft_cost));
}

double SpeculativeRun::predicted_speedup(double per_token_alpha) const {
  SpeculativeRun other = *this;
  other.mean_accepted_length = speculative_tokens_per_step(per_token_alpha, mean_draft_length) - 1;
  return other.predicted_speedup();
}

std::optional<SpeculativeRun> parse_speculative_run(const nlohmann::json& row, double decode_tokens,
                                                    const std::string& where) {
  if (!row.contains("speculative") || row["speculative"].is_null()) return std::nullopt;
  const nlohmann::json& s = row["speculative"];
  const std::string at = where + ".speculative";
  auto number = [&](const char* key) {
    if (!s.contains(key) || !s[key].is_number()) fail("{}: needs the number '{}'", at, key);
    return s[key].get<double>();
  };
  SpeculativeRun r;
  r.drafter = s.value("drafter", std::string{});
  const double verify_steps = number("verify_steps");
  const double drafted = number("drafted_tokens");
  const double accepted = number("accepted_tokens");
  if (verify_steps < 0 || drafted < 0 || accepted < 0 || accepted > drafted)
    fail("{}: counts must be >= 0 with accepted_tokens <= drafted_tokens", at);
  r.mean_draft_length = verify_steps > 0 ? drafted / verify_steps : 0;
  r.acceptance_rate = drafted > 0 ? accepted / drafted : 0;
  r.mean_accepted_length = verify_steps > 0 ? accepted / verify_steps : 0;
  // Every decode step yields one token, a verify step also its accepted drafts.
  const double steps = decode_tokens - accepted;
  if (!(steps >= verify_steps) || steps <= 0)
    fail("{}: {} verify steps and {} accepted tokens do not fit in {} generated tokens", at, verify_steps, accepted,
         decode_tokens);
  r.verify_step_share = verify_steps / steps;
  r.verify_cost_ratio = number("verify_cost_ratio");
  // draft_share and verify_share are of the same decode time, and a verify step costs r
  // plain steps: drafting per verify step = draft_share / verify_share x r plain steps.
  const double verify_share = number("verify_share");
  r.draft_cost = verify_share > 0 ? number("draft_share") / verify_share * r.verify_cost_ratio : 0;
  r.measured_speedup = number("speedup");
  return r;
}

}  // namespace tps
