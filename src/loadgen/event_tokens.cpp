#include "loadgen/event_tokens.h"

#include <algorithm>
#include <cmath>

namespace tps::loadgen {

void settle_event_tokens(RequestRecord& r, TokenCounter* exact_counter) {
  if (r.event_tokens_source != "events" || r.arrivals.empty() || r.output_text.empty()) return;
  if (exact_counter != nullptr) {
    int64_t previous = 0;
    for (TokenArrival& a : r.arrivals) {
      const int64_t now = exact_counter->count(r.output_text.substr(0, a.text_end));
      a.tokens = std::max<int64_t>(now - previous, 0);
      previous = std::max(previous, now);
    }
    r.event_tokens_source = "tokenizer";
    return;
  }
  if (r.output_tokens_source != "usage" || r.output_tokens <= 0) return;  // no total to split
  // Cumulative shares rounded, so the events' counts add up to the total.
  const double per_byte = static_cast<double>(r.output_tokens) / static_cast<double>(r.output_text.size());
  int64_t given = 0;
  for (TokenArrival& a : r.arrivals) {
    const auto total_so_far = static_cast<int64_t>(std::llround(static_cast<double>(a.text_end) * per_byte));
    a.tokens = std::max<int64_t>(total_so_far - given, 0);
    given += a.tokens;
  }
  r.event_tokens_source = "text_length";
}

}  // namespace tps::loadgen
