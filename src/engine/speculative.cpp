#include "engine/speculative.h"

#include <algorithm>
#include <set>

#include "core/error.h"

namespace tps {

void check_speculative_config(const SpeculativeConfig& c) {
  if (c.draft_max < 1 || c.draft_max > 64) fail("--draft-max must be in 1..64, got {}", c.draft_max);
  if (c.draft_min < 1 || c.draft_min > c.draft_max)
    fail("--draft-min must be in 1..--draft-max ({}), got {}", c.draft_max, c.draft_min);
  if (!(c.draft_p_min >= 0.0f && c.draft_p_min <= 1.0f)) fail("--draft-p-min must be in 0..1, got {}", c.draft_p_min);
  if (c.ngram_min < 1 || c.ngram_min > c.ngram_max || c.ngram_max > 64)
    fail("--ngram-min and --ngram-max need 1 <= min <= max <= 64, got {} and {}", c.ngram_min, c.ngram_max);
}

void SpeculativeCounts::add_step(int32_t drafted, int32_t accepted) {
  ++verify_steps;
  drafted_tokens += drafted;
  accepted_tokens += accepted;
  if (accepted_at.size() < static_cast<size_t>(drafted)) accepted_at.resize(static_cast<size_t>(drafted), 0);
  for (int32_t i = 0; i < accepted; ++i) ++accepted_at[static_cast<size_t>(i)];
}

SpeculativeCounts& SpeculativeCounts::operator+=(const SpeculativeCounts& o) {
  verify_steps += o.verify_steps;
  drafted_tokens += o.drafted_tokens;
  accepted_tokens += o.accepted_tokens;
  if (accepted_at.size() < o.accepted_at.size()) accepted_at.resize(o.accepted_at.size(), 0);
  for (size_t i = 0; i < o.accepted_at.size(); ++i) accepted_at[i] += o.accepted_at[i];
  return *this;
}

namespace {

// The tokens after the most recent earlier occurrence of the context's last n tokens
// (the longest n that has one), at most max_tokens; empty when there is none.
std::vector<int32_t> continuation(std::span<const int32_t> context, int32_t ngram_min, int32_t ngram_max,
                                  int64_t max_tokens) {
  const auto size = static_cast<int64_t>(context.size());
  for (int64_t n = std::min<int64_t>(ngram_max, size - 1); n >= ngram_min; --n) {
    const std::span<const int32_t> tail = context.subspan(static_cast<size_t>(size - n));
    for (int64_t start = size - n - 1; start >= 0; --start) {
      if (!std::equal(tail.begin(), tail.end(), context.begin() + start)) continue;
      const int64_t from = start + n, to = std::min(size, from + max_tokens);
      return {context.begin() + from, context.begin() + to};
    }
  }
  return {};
}

}  // namespace

std::vector<int32_t> ngram_draft(std::span<const int32_t> context, int32_t ngram_min, int32_t ngram_max,
                                 int32_t max_tokens) {
  // A match near the end continues only up to the end: look up again from the drafted
  // tokens, so a repeated phrase drafts whole.
  std::vector<int32_t> extended;
  extended.reserve(context.size() + static_cast<size_t>(std::max(0, max_tokens)));
  extended.assign(context.begin(), context.end());
  const auto drafted = [&] { return static_cast<int64_t>(extended.size() - context.size()); };
  while (drafted() < max_tokens) {
    const std::vector<int32_t> more = continuation(extended, ngram_min, ngram_max, max_tokens - drafted());
    if (more.empty()) break;
    for (int32_t t : more) extended.push_back(t);
  }
  return {extended.begin() + static_cast<std::ptrdiff_t>(context.size()), extended.end()};
}

NgramCeiling ngram_ceiling(std::span<const int32_t> prompt, std::span<const int32_t> generated,
                           const SpeculativeConfig& c) {
  std::vector<int32_t> text(prompt.begin(), prompt.end());
  text.insert(text.end(), generated.begin(), generated.end());
  const auto n = static_cast<size_t>(c.ngram_min);
  std::set<std::vector<int32_t>> seen;  // every ngram_min-gram with the token after it so far
  std::vector<bool> draftable;            // per generated token
  for (size_t i = n; i < text.size(); ++i) {
    std::vector<int32_t> gram(text.begin() + static_cast<std::ptrdiff_t>(i - n), text.begin() + static_cast<std::ptrdiff_t>(i + 1));
    const bool before = !seen.insert(std::move(gram)).second;
    if (i >= prompt.size()) draftable.push_back(before);
  }
  draftable.insert(draftable.begin(), generated.size() - draftable.size(), false);  // texts shorter than n
  NgramCeiling out;
  out.ngram_min = c.ngram_min;
  out.generated = static_cast<int64_t>(generated.size());
  // Each step verifies up to draft_max draftable tokens in a row and adds one token of
  // its own; taking as many as it may is the fewest steps.
  for (size_t i = 0; i < draftable.size(); ++out.steps) {
    for (int32_t k = 0; k < c.draft_max && i < draftable.size() && draftable[i]; ++k) ++i;
    ++i;
  }
  out.draftable = std::count(draftable.begin(), draftable.end(), true);
  return out;
}

}  // namespace tps
