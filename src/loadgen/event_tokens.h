#pragma once
// How many tokens each stream event carried when the server did not say (no usage or
// logprobs per event): a speculative server, or one that batches its stream, sends
// several in one event, and counting one per event makes ITL that many times too long.
#include "loadgen/request_record.h"
#include "loadgen/token_counter.h"

namespace tps::loadgen {

// For a record whose events have no counts ("events"): with an exact tokenizer, each
// event's tokens are the change in the token count of the cumulative text (a piece split
// across events is not counted twice); without one, the server's total (final usage) is
// split by each event's share of the text. Sets event_tokens_source ("tokenizer" or
// "text_length"); with neither, the events count one token each.
void settle_event_tokens(RequestRecord& r, TokenCounter* exact_counter);

}  // namespace tps::loadgen
