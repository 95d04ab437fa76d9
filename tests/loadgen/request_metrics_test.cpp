#include "loadgen/request_metrics.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "loadgen/event_tokens.h"

namespace tps::loadgen {
namespace {

RequestRecord record(double send, std::vector<TokenArrival> arrivals, int64_t output_tokens) {
  RequestRecord r;
  r.ok = true;
  r.send_time = send;
  r.arrivals = std::move(arrivals);
  r.end_time = r.arrivals.empty() ? send : r.arrivals.back().time;
  r.output_tokens = output_tokens;
  r.output_tokens_source = "usage";
  r.event_tokens_source = "usage";
  return r;
}

TEST(RequestMetrics, FollowTheDefinitions) {
  // Sent at 1.0; first text at 1.1; then one token at 1.3, three tokens at 1.6, one at 1.7.
  auto m = compute_request_metrics(record(1.0, {{1.1, 1}, {1.3, 1}, {1.6, 3}, {1.7, 1}}, 6));
  EXPECT_NEAR(m.ttft, 0.1, 1e-12);
  EXPECT_NEAR(m.e2e, 0.7, 1e-12);
  EXPECT_NEAR(m.tpot, 0.6 / 5, 1e-12);
  ASSERT_EQ(m.itl.size(), 5u);  // every token after the first event's
  EXPECT_NEAR(m.itl[0], 0.2, 1e-12);
  for (int i = 1; i <= 3; ++i) EXPECT_NEAR(m.itl[size_t(i)], 0.1, 1e-12);  // 0.3 s shared by 3 tokens
  EXPECT_NEAR(m.itl[4], 0.1, 1e-12);
}

// A speculative server streams 1, 1, 3, 1, 2 tokens per event, 20 ms apart per token,
// with only a final usage: one token per event would make ITL p50 40 ms.
RequestRecord speculative_stream() {
  RequestRecord r = record(0, {{0.10, 1, 1}, {0.12, 1, 3}, {0.18, 1, 9}, {0.20, 1, 11}, {0.24, 1, 15}}, 8);
  r.output_text = "a b c d e f g h";  // "a", " b", " c d e", " f", " g h"
  r.event_tokens_source = "events";
  return r;
}

// Counts words, as an exact tokenizer of this text would count its tokens.
class WordCounter : public TokenCounter {
 public:
  int64_t count(const std::string& text) override {
    int64_t n = 0;
    for (size_t i = 0; i < text.size(); ++i) n += text[i] != ' ' && (i == 0 || text[i - 1] == ' ');
    return n;
  }
  std::string name() const override { return "words"; }
  bool exact() const override { return true; }
};

TEST(EventTokens, ATokenizerCountsEachEventsTokensFromTheCumulativeText) {
  RequestRecord r = speculative_stream();
  WordCounter words;
  settle_event_tokens(r, &words);
  EXPECT_EQ(r.event_tokens_source, "tokenizer");
  std::vector<int64_t> counts;
  for (const auto& a : r.arrivals) counts.push_back(a.tokens);
  EXPECT_EQ(counts, (std::vector<int64_t>{1, 1, 3, 1, 2}));
  const auto m = compute_request_metrics(r);
  ASSERT_EQ(m.itl.size(), 7u);
  for (double itl : m.itl) EXPECT_NEAR(itl, 0.02, 1e-9);
}

TEST(EventTokens, WithoutATokenizerTheTotalIsSplitByTextLength) {
  RequestRecord r = speculative_stream();
  settle_event_tokens(r, nullptr);
  EXPECT_EQ(r.event_tokens_source, "text_length");
  int64_t total = 0;
  for (const auto& a : r.arrivals) total += a.tokens;
  EXPECT_EQ(total, 8);
  EXPECT_EQ(r.arrivals[2].tokens, 3);  // " c d e": 6 of 15 bytes of 8 tokens
  const auto m = compute_request_metrics(r);
  std::vector<double> itl = m.itl;
  std::sort(itl.begin(), itl.end());
  EXPECT_NEAR(itl[itl.size() / 2], 0.02, 1e-9);  // not 0.04
}

TEST(RequestMetrics, ATextEventWithoutANewTokenLendsItsGapToTheNext) {
  auto m = compute_request_metrics(record(0, {{0.5, 1}, {0.6, 0}, {0.9, 2}}, 3));
  ASSERT_EQ(m.itl.size(), 2u);
  EXPECT_NEAR(m.itl[0], 0.2, 1e-12);
  EXPECT_NEAR(m.itl[1], 0.2, 1e-12);
}

TEST(RequestMetrics, OneTokenAnswersHaveNoTpot) {
  auto m = compute_request_metrics(record(0, {{0.25, 1}}, 1));
  EXPECT_DOUBLE_EQ(m.ttft, 0.25);
  EXPECT_TRUE(std::isnan(m.tpot));
  EXPECT_TRUE(m.itl.empty());
}

TEST(Distribution, InterpolatesPercentilesLikeNumpy) {
  auto d = describe({4, 1, 3, 2, kNaN});
  EXPECT_EQ(d.count, 4);
  EXPECT_DOUBLE_EQ(d.mean, 2.5);
  EXPECT_DOUBLE_EQ(d.p50, 2.5);
  EXPECT_DOUBLE_EQ(d.p90, 3.7);
  EXPECT_DOUBLE_EQ(d.p99, 3.97);
  EXPECT_DOUBLE_EQ(d.min, 1);
  EXPECT_DOUBLE_EQ(d.max, 4);
}

TEST(Slo, ParsesUnitsAndRejectsNonsense) {
  Slo slo = parse_slo("ttft=500ms,tpot=0.05s,e2e=2000000us");
  EXPECT_DOUBLE_EQ(*slo.ttft, 0.5);
  EXPECT_DOUBLE_EQ(*slo.tpot, 0.05);
  EXPECT_DOUBLE_EQ(*slo.e2e, 2.0);
  EXPECT_THROW(parse_slo("ttft"), Error);
  EXPECT_THROW(parse_slo("itl=5ms"), Error);
  EXPECT_THROW(parse_slo("ttft=5min"), Error);
  EXPECT_THROW(parse_slo("ttft=fast"), Error);
}

TEST(Summary, MeasuresThroughputOverTheSteadyWindowAndCountsFailures) {
  // Closed loop of two clients: ramp-up ends at 0.1 (second client's first send), the
  // last send is at 2.0, so the window is [0.1, 2.0].
  std::vector<RequestRecord> records = {
      record(0.0, {{0.5, 1}, {1.0, 1}}, 2),    // ends at 1.0 in window
      record(0.1, {{0.6, 1}, {1.5, 1}}, 2),    // ends at 1.5
      record(1.0, {{1.8, 1}, {2.5, 1}}, 2),    // one token in window, ends after
      record(2.0, {{2.2, 2}, {3.0, 2}}, 4),    // outside
  };
  RequestRecord failed;
  failed.send_time = 1.5;
  failed.end_time = 1.6;
  failed.error = "HTTP 500: boom";
  records.push_back(failed);
  Slo slo = parse_slo("ttft=600ms");
  SweepSummary s = summarize("concurrency", 2, records, 0.1, slo);
  EXPECT_EQ(s.requests_ok, 4);
  EXPECT_EQ(s.requests_failed, 1);
  ASSERT_EQ(s.errors.size(), 1u);
  EXPECT_EQ(s.errors[0], "1 x HTTP 500: boom");
  EXPECT_DOUBLE_EQ(s.window.start, 0.1);
  EXPECT_DOUBLE_EQ(s.window.end, 2.0);
  EXPECT_EQ(s.completed_in_window, 2);
  EXPECT_NEAR(s.output_tok_per_s, 5.0 / 1.9, 1e-12);  // arrivals at 0.5 1.0 0.6 1.5 1.8
  EXPECT_NEAR(s.request_per_s, 2.0 / 1.9, 1e-12);
  EXPECT_NEAR(s.goodput, 2.0 / 1.9, 1e-12);            // both completions had TTFT <= 0.6 s
  EXPECT_DOUBLE_EQ(s.duration, 3.0);
  EXPECT_EQ(s.ttft.count, 4);
  EXPECT_EQ(s.itl.count, 5);  // 1 + 1 + 1 + 2
  EXPECT_EQ(s.output_tokens_source, "usage");
}

TEST(Summary, FallsBackToTheWholeRunWhenThereIsNoSteadyState) {
  std::vector<RequestRecord> records = {record(0.0, {{0.5, 1}, {1.0, 1}}, 2)};
  SweepSummary s = summarize("concurrency", 1, records, 0.0, Slo{});
  EXPECT_DOUBLE_EQ(s.window.start, 0.0);
  EXPECT_DOUBLE_EQ(s.window.end, 1.0);
  EXPECT_NE(s.window.rule.find("whole run"), std::string::npos);
  EXPECT_NEAR(s.output_tok_per_s, 2.0, 1e-12);
  EXPECT_TRUE(std::isnan(s.goodput));
}

}  // namespace
}  // namespace tps::loadgen
