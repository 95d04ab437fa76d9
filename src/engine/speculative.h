#pragma once
// Speculative decoding's settings and counters, one vocabulary for run, bench, serve and
// /metrics:
//   acceptance rate      = accepted draft tokens / drafted tokens;
//   mean accepted length = accepted draft tokens per verify step (the bonus token, which
//                          every verify step gives, not counted);
//   tokens per step      = mean accepted length + 1.
// A verify step is one sequence's chunk of its last token and k >= 1 drafts.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tps {

enum class SpecMode { kOff, kNgram, kDraftModel };

struct SpeculativeConfig {
  SpecMode mode = SpecMode::kOff;
  int32_t draft_max = 8;      // drafts per verify step at most
  int32_t draft_min = 1;      // fewer proposals than this are not verified
  float draft_p_min = 0.6f;   // a draft model stops proposing below this probability of its pick
  // n-gram lookup: the context's last n tokens, n from max down to min. Down to 1, as
  // llama.cpp's lookup: on looping text a 1-gram drafts where no 2-gram matches yet, and
  // the draft length adapts where its drafts miss (docs/perf-log.md, session 27).
  int32_t ngram_min = 1;
  int32_t ngram_max = 4;
};

// Throws tps::Error naming the flag for a value out of range.
void check_speculative_config(const SpeculativeConfig& c);

struct SpeculativeCounts {
  int64_t verify_steps = 0;      // vLLM's num_drafts
  int64_t drafted_tokens = 0;    // num_draft_tokens
  int64_t accepted_tokens = 0;   // num_accepted_tokens
  std::vector<int64_t> accepted_at;  // accepted tokens by draft position (0: the first draft)

  void add_step(int32_t drafted, int32_t accepted);
  SpeculativeCounts& operator+=(const SpeculativeCounts& o);
  double acceptance_rate() const { return drafted_tokens > 0 ? double(accepted_tokens) / double(drafted_tokens) : 0; }
  double mean_accepted_length() const { return verify_steps > 0 ? double(accepted_tokens) / double(verify_steps) : 0; }
};

// Up to max_tokens tokens that followed the most recent earlier occurrence of the
// context's last n tokens, trying n from ngram_max down to ngram_min (prompt lookup
// decoding), looked up again from the drafts where that occurrence's continuation ends;
// empty when there is none.
std::vector<int32_t> ngram_draft(std::span<const int32_t> context, int32_t ngram_min, int32_t ngram_max,
                                 int32_t max_tokens);

// The most n-gram lookup could give on a generated text. A lookup drafts a token only
// where the n tokens before it (n >= ngram_min) were followed by it earlier in the prompt
// or the text, so every other token needs a step of its own. With every such token
// drafted and accepted, at most draft_max in a row a step, and drafting and verifying
// free, the speedup is generated / steps.
struct NgramCeiling {
  int32_t ngram_min = 0;   // the shortest n-gram looked up
  int64_t generated = 0;   // tokens generated
  int64_t draftable = 0;   // of them, those that follow a seen ngram_min-gram with the same token
  int64_t steps = 0;       // the fewest steps that generate them
  double speedup() const { return steps > 0 ? double(generated) / double(steps) : 0; }
};
NgramCeiling ngram_ceiling(std::span<const int32_t> prompt, std::span<const int32_t> generated,
                           const SpeculativeConfig& c);

}  // namespace tps
