#include "bench/bench_runner.h"

#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "bench/bench_cost.h"
#include "core/error.h"
#include "core/timer.h"
#include "roofline/probe.h"

namespace tps {

Spread spread_of(std::vector<double> samples) {
  Spread s;
  s.samples = std::move(samples);
  if (s.samples.empty()) return s;
  double n = double(s.samples.size());
  s.mean = std::accumulate(s.samples.begin(), s.samples.end(), 0.0) / n;
  if (s.samples.size() > 1) {
    double sq = 0;
    for (double x : s.samples) sq += (x - s.mean) * (x - s.mean);
    s.std = std::sqrt(sq / (n - 1));
  }
  return s;
}

BenchRunner::BenchRunner(Model& model, uint64_t seed) : model_(model), rng_(seed) {}

int32_t BenchRunner::random_token() {
  return static_cast<int32_t>(rng_() % static_cast<uint64_t>(model_.config().vocab_size));
}

void BenchRunner::ensure_cache(const BenchCase& c) {
  const int64_t positions = c.depth + c.prompt + c.gen;
  if (positions > model_.config().context_length)
    fail("{}: depth {} + {} tokens exceeds the model's context length {}", c.label(), c.depth, c.prompt + c.gen,
         model_.config().context_length);
  const int64_t per_seq = (positions + KvCache::kDefaultBlockTokens - 1) / KvCache::kDefaultBlockTokens;
  if (!kv_ || kv_->n_blocks() < per_seq * c.batch) kv_ = std::make_unique<KvCache>(model_.config(), per_seq * c.batch);
  // Sequence s owns blocks [s * per_seq, (s + 1) * per_seq).
  blocks_per_seq_ = per_seq;
  block_table_.resize(per_seq * c.batch);
  std::iota(block_table_.begin(), block_table_.end(), 0);
}

ForwardBatch& BenchRunner::start_batch(int64_t n_seq) {
  batch_.clear();
  for (int64_t s = 0; s < n_seq; ++s) batch_.sequences.push_back({block_table_.data() + s * blocks_per_seq_, blocks_per_seq_});
  return batch_;
}

void BenchRunner::prefill(int64_t n_seq, int64_t from, int64_t to, bool want_logits, ThreadPool& pool) {
  const int64_t vocab = model_.config().vocab_size;
  logits_.resize(static_cast<size_t>(n_seq * vocab));
  start_batch(n_seq);
  for (int64_t s = 0; s < n_seq; ++s) {
    for (int64_t p = from; p < to; ++p) {
      batch_.add(random_token(), static_cast<int32_t>(p), static_cast<int32_t>(s), want_logits && p == to - 1);
      if (static_cast<int64_t>(batch_.size()) == kPrefillChunkRows) {
        model_.forward(batch_, *kv_, logits_.data(), pool);
        start_batch(n_seq);
      }
    }
  }
  if (batch_.size() > 0) model_.forward(batch_, *kv_, logits_.data(), pool);
}

void BenchRunner::fill_depth(const BenchCase& c, ThreadPool& pool) {
  if (c.depth > 0) prefill(c.batch, 0, c.depth, false, pool);
}

namespace {

// Routes the model's and the pool's timings to `trace` while in scope.
class TraceScope {
 public:
  TraceScope(Model& model, ThreadPool& pool, ForwardTrace* trace) : model_(model), pool_(pool) {
    model_.set_trace(trace);
    pool_.count_waits(trace != nullptr ? &trace->waited : nullptr);
  }
  ~TraceScope() {
    model_.set_trace(nullptr);
    pool_.count_waits(nullptr);
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  Model& model_;
  ThreadPool& pool_;
};

}  // namespace

BenchRunner::Timing BenchRunner::run_once(const BenchCase& c, int64_t gen, ThreadPool& pool, ForwardTrace* trace) {
  Timing t;
  const int64_t start = c.depth;
  if (c.kind != BenchKind::kDecode) {
    TraceScope scope(model_, pool, c.kind == BenchKind::kPrefill ? trace : nullptr);
    double t0 = now_seconds();
    prefill(c.batch, start, start + c.prompt, true, pool);
    t.prefill_seconds = now_seconds() - t0;
  }
  if (c.kind == BenchKind::kPrefill) return t;
  TraceScope scope(model_, pool, trace);
  const int64_t first = start + c.prompt;
  logits_.resize(static_cast<size_t>(c.batch * model_.config().vocab_size));
  double t0 = now_seconds();
  for (int64_t i = 0; i < gen; ++i) {
    start_batch(c.batch);
    for (int64_t s = 0; s < c.batch; ++s)
      batch_.add(random_token(), static_cast<int32_t>(first + i), static_cast<int32_t>(s), true);
    model_.forward(batch_, *kv_, logits_.data(), pool);
  }
  t.decode_seconds = now_seconds() - t0;
  return t;
}

BenchMeasurement BenchRunner::run(const BenchCase& c, int repetitions, ThreadPool& pool,
                                  const std::function<void(const std::string&)>& progress, bool breakdown) {
  ensure_cache(c);
  progress("filling context");
  fill_depth(c, pool);
  progress("warm-up");
  // The warm-up touches every weight page and scratch buffer; a few decode steps do that.
  run_once(c, std::min<int64_t>(c.gen, 4), pool);
  std::vector<double> main, prefill, stream;
  const std::span<const uint8_t> weights = model_.streamed_weights();
  const bool baseline = c.kind != BenchKind::kPrefill && !weights.empty();
  std::optional<ForwardTrace> trace;
  if (breakdown) trace.emplace();
  for (int r = 0; r < repetitions; ++r) {
    if (baseline) stream.push_back(stream_read_gbps(weights.data(), weights.size(), pool));
    progress(fmt::format("rep {}/{}", r + 1, repetitions));
    Timing t = run_once(c, c.gen, pool, trace ? &*trace : nullptr);
    switch (c.kind) {
      case BenchKind::kPrefill: main.push_back(c.tokens() / t.prefill_seconds); break;
      case BenchKind::kDecode: main.push_back(c.tokens() / t.decode_seconds); break;
      case BenchKind::kBatched:
        main.push_back(c.tokens() / t.decode_seconds);
        prefill.push_back(double(c.prompt * c.batch) / t.prefill_seconds);
        break;
    }
  }
  if (baseline) stream.push_back(stream_read_gbps(weights.data(), weights.size(), pool));
  return {c, spread_of(std::move(main)), spread_of(std::move(prefill)), spread_of(std::move(stream)), trace};
}

}  // namespace tps
