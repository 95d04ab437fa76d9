#include "bench/bench_runner.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <numeric>

#include <fmt/format.h>

#include "core/error.h"
#include "core/timer.h"
#include "engine/engine.h"
#include "engine/model_runner.h"
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

namespace {

// Prefill passes are split into chunks of at most this many rows (llama.cpp's n_ubatch;
// the roofline's Deployment::ubatch).
constexpr int64_t kPrefillChunkRows = 512;

// One case's engine: the KV cache holds every sequence's depth, prompt and generated
// tokens (plus the shared depth prefix and a block each for copy-on-write); prefill
// goes in chunks of kPrefillChunkRows rows, as llama-bench's batch size.
class CaseEngine {
 public:
  CaseEngine(Model& model, const BenchCase& c, int threads, int64_t prompt_tokens, const BenchSpeculation& spec)
      : runner_(model, geometry(model, c, prompt_tokens), threads),
        draft_(spec.draft != nullptr ? std::make_unique<ModelRunner>(*spec.draft, runner_.kv_geometry(), runner_.pool())
                                     : nullptr),
        engine_(runner_, config(c, spec, draft_.get())) {
    engine_.set_step_observer([this](const StepInfo& s) { on_step(s); });
  }

  SpeculativeCounts speculative() const { return engine_.stats().speculative; }
  // Decode-step timings since the last call, from every sequence's first token on.
  BenchMeasurement take_step_times() {
    std::lock_guard lock(mutex_);
    BenchMeasurement m = steps_;
    steps_ = {};
    return m;
  }

  ThreadPool& pool() { return runner_.pool(); }
  // Whether the next requests draft, where the engine has a drafter.
  void use_speculation(bool on) { speculative_ = on; }

  // Submits one request per prompt and waits for all of them; `trace` (nullptr: none)
  // times the steps after every sequence has its first token (trace_decode), or all.
  // `cached` gets each sequence's prefix-cache hit, `generated` the first one's tokens.
  std::vector<RequestTimes> run(const std::vector<std::vector<int32_t>>& prompts, int32_t max_tokens,
                                ForwardTrace* trace, bool trace_decode, Model& model, std::vector<int32_t>* cached,
                                std::vector<int32_t>* generated = nullptr) {
    {
      std::lock_guard lock(mutex_);
      model_ = &model;
      trace_ = trace;
      trace_decode_ = trace_decode;
      if (trace_ != nullptr && !trace_decode_) start_trace();
      streams_.clear();
      for (const auto& p : prompts) {
        GenerationRequest r;
        r.prompt = p;
        r.sampling.temperature = 0;
        r.max_tokens = max_tokens;
        r.ignore_eos = true;
        r.speculative = speculative_;
        streams_.push_back(engine_.submit(std::move(r)));
        if (!streams_.back()) fail("bench: the engine refused a request");
      }
    }
    std::vector<RequestTimes> times;
    for (auto& s : streams_) {
      // Only the end wakes this thread: a wake-up per token would take a core from the
      // forward pass on a small machine.
      s->wait_finished();
      times.push_back(s->times());
      if (cached) cached->push_back(s->cached_tokens());
      if (generated && s == streams_.front()) {
        std::vector<GeneratedToken> tokens;
        s->wait(tokens, 0);  // finished: the tokens are all pending
        generated->clear();
        for (const GeneratedToken& t : tokens) generated->push_back(t.id);
      }
    }
    stop_trace();
    return times;
  }

 private:
  static KvGeometry geometry(const Model& model, const BenchCase& c, int64_t prompt_tokens) {
    const int64_t positions = c.depth + prompt_tokens + c.gen + 1;
    if (positions > model.config().context_length)
      fail("{}: depth {} + {} tokens + 1 (the token the last pass samples) needs {} positions, more than the model's "
           "context length {}",
           c.label(), c.depth, prompt_tokens + c.gen, positions, model.config().context_length);
    const int64_t bt = KvCache::kDefaultBlockTokens;
    const int64_t per_seq = (positions + bt - 1) / bt + 1;
    return {bt, per_seq * c.batch + (c.depth + bt - 1) / bt + 1, positions};
  }
  static EngineConfig config(const BenchCase& c, const BenchSpeculation& spec, BatchModel* draft) {
    EngineConfig e;
    e.max_seqs = static_cast<int32_t>(c.batch);
    e.max_batch_tokens = static_cast<int32_t>(std::max<int64_t>(kPrefillChunkRows, c.batch));
    e.max_queue = static_cast<int32_t>(c.batch);
    e.speculative = spec.config;
    e.draft = draft;
    return e;
  }
  // Called with mutex_ held, or before the requests are submitted.
  void start_trace() {
    model_->set_trace(trace_);
    pool().count_waits(&trace_->waited);
    tracing_ = true;
  }
  // Once every request has finished; the scheduler thread may still be in the last
  // step's observer, hence the lock.
  void stop_trace() {
    std::lock_guard lock(mutex_);
    if (tracing_) {
      model_->set_trace(nullptr);
      pool().count_waits(nullptr);
    }
    tracing_ = false;
    trace_ = nullptr;
  }
  // On the scheduler thread, after each step: decode is traced from the step after the
  // one that gave the last sequence its first token.
  void on_step(const StepInfo& info) {
    std::lock_guard lock(mutex_);
    bool decoding = !streams_.empty();
    for (const auto& s : streams_) decoding = decoding && s->generated_tokens() > 0;
    if (decoding && info.decode_rows == info.sequences) {
      steps_.decode_seconds += info.seconds;
      steps_.forward_seconds += info.forward_seconds;
      steps_.draft_seconds += info.draft_seconds;
      if (info.drafted > 0) {
        ++steps_.verify_steps;
        steps_.verify_step_seconds += info.forward_seconds;
        steps_.verify_rows += info.rows;
      } else {
        ++steps_.plain_steps;
        steps_.plain_step_seconds += info.forward_seconds;
      }
    }
    if (trace_ == nullptr || !trace_decode_ || tracing_ || !decoding) return;
    start_trace();
  }

  // Before the engine, so they outlive its thread.
  std::mutex mutex_;  // guards the trace state
  Model* model_ = nullptr;
  ForwardTrace* trace_ = nullptr;
  bool trace_decode_ = false, tracing_ = false, speculative_ = true;
  std::vector<std::shared_ptr<RequestStream>> streams_;
  BenchMeasurement steps_;
  ModelRunner runner_;
  std::unique_ptr<ModelRunner> draft_;
  Engine engine_;
};

struct Timing {
  double prefill_seconds = 0;
  double decode_seconds = 0;
  int64_t decode_tokens = 0;
};

// Prefill: from the first sequence's scheduling to the last one's first token. Decode:
// the tokens made after every sequence had its first one, over the time they took.
Timing timing_of(const std::vector<RequestTimes>& times) {
  double scheduled = times[0].scheduled, all_started = 0, end = 0;
  for (const RequestTimes& t : times) {
    scheduled = std::min(scheduled, t.scheduled);
    all_started = std::max(all_started, t.first_token);
    end = std::max(end, t.token_times.back());
  }
  Timing out;
  out.prefill_seconds = all_started - scheduled;
  out.decode_seconds = end - all_started;
  for (const RequestTimes& t : times)
    out.decode_tokens += std::count_if(t.token_times.begin(), t.token_times.end(), [&](double x) { return x > all_started; });
  return out;
}

// What one variant's timed repetitions gathered.
struct Gathered {
  std::vector<double> main, prefill, stream;
  double collective = 0, timed = 0;
  int64_t counted = 0;
  BenchMeasurement steps;  // the decode steps' times, summed
  SpeculativeCounts speculative;
  std::vector<int32_t> prompt, generated;
};

void add_step_times(BenchMeasurement& sum, const BenchMeasurement& m) {
  sum.decode_seconds += m.decode_seconds;
  sum.forward_seconds += m.forward_seconds;
  sum.draft_seconds += m.draft_seconds;
  sum.plain_steps += m.plain_steps;
  sum.verify_steps += m.verify_steps;
  sum.plain_step_seconds += m.plain_step_seconds;
  sum.verify_step_seconds += m.verify_step_seconds;
  sum.verify_rows += m.verify_rows;
}

void add_counts(SpeculativeCounts& sum, const SpeculativeCounts& after, const SpeculativeCounts& before) {
  sum.verify_steps += after.verify_steps - before.verify_steps;
  sum.drafted_tokens += after.drafted_tokens - before.drafted_tokens;
  sum.accepted_tokens += after.accepted_tokens - before.accepted_tokens;
  if (sum.accepted_at.size() < after.accepted_at.size()) sum.accepted_at.resize(after.accepted_at.size());
  for (size_t i = 0; i < after.accepted_at.size(); ++i)
    sum.accepted_at[i] += after.accepted_at[i] - (i < before.accepted_at.size() ? before.accepted_at[i] : 0);
}

}  // namespace

BenchMeasurement BenchRunner::run(const BenchCase& c, int repetitions, int threads,
                                  const std::function<void(const std::string&)>& progress, bool breakdown) {
  return std::move(run_variants(c, repetitions, threads, progress, breakdown, {}, {false}).front());
}

SpeculativePair BenchRunner::run_speculative(const BenchCase& c, int repetitions, int threads,
                                             const std::function<void(const std::string&)>& progress,
                                             bool breakdown, const BenchSpeculation& speculation) {
  std::vector<BenchMeasurement> m = run_variants(c, repetitions, threads, progress, breakdown, speculation, {false, true});
  return {std::move(m[0]), std::move(m[1])};
}

std::vector<BenchMeasurement> BenchRunner::run_variants(const BenchCase& c, int repetitions, int threads,
                                                        const std::function<void(const std::string&)>& progress,
                                                        bool breakdown, const BenchSpeculation& speculation,
                                                        std::initializer_list<bool> drafts) {
  const std::vector<bool> variants(drafts);
  const bool text = c.kind == BenchKind::kDecode && !text_prompt_.empty();
  const int64_t own_prompt = c.kind == BenchKind::kDecode ? (text ? static_cast<int64_t>(text_prompt_.size()) : 1)
                                                          : c.prompt;
  CaseEngine engine(model_, c, threads, own_prompt, speculation);
  const int64_t vocab = model_.config().vocab_size;
  auto random_tokens = [&](int64_t n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (int32_t& id : t) id = static_cast<int32_t>(rng_() % static_cast<uint64_t>(vocab));
    return t;
  };
  // Every sequence starts with the same `depth` tokens, computed once here and found in
  // the prefix cache by each run; its own prompt (decode: one token) follows.
  const std::vector<int32_t> depth = random_tokens(c.depth);
  if (c.depth > 0) {
    progress("filling context");
    engine.run({depth}, 1, nullptr, false, model_, nullptr);
  }
  const bool prefill_only = c.kind == BenchKind::kPrefill;
  std::vector<Gathered> gathered(variants.size());
  auto run_once = [&](int64_t gen, ForwardTrace* trace, Gathered* into) {
    std::vector<std::vector<int32_t>> prompts;
    for (int64_t s = 0; s < c.batch; ++s) {
      std::vector<int32_t> p = depth;
      const std::vector<int32_t> own = text ? text_prompt_ : random_tokens(own_prompt);
      p.insert(p.end(), own.begin(), own.end());
      prompts.push_back(std::move(p));
    }
    std::vector<int32_t> cached, generated;
    // Decode counts the steps after each sequence's first token: one more to generate.
    const auto times = engine.run(prompts, static_cast<int32_t>(prefill_only ? 1 : gen + 1), trace, !prefill_only,
                                  model_, &cached, &generated);
    for (int32_t n : cached)
      if (n < c.depth / KvCache::kDefaultBlockTokens * KvCache::kDefaultBlockTokens)
        fail("bench: the context of {} tokens was not found in the prefix cache", c.depth);
    if (into) into->prompt = std::move(prompts.front()), into->generated = std::move(generated);
    return timing_of(times);
  };
  progress("warm-up");
  // The warm-up touches every weight page and scratch buffer; a few decode steps do that.
  for (bool draft : variants) {
    engine.use_speculation(draft);
    run_once(std::min<int64_t>(c.gen, 4), nullptr, nullptr);
  }
  const std::span<const uint8_t> weights = model_.streamed_weights();
  const TensorParallelGroup* group = model_.tensor_parallel();
  // Split over ranks, the leader alone would read only its slice: no baseline.
  const bool baseline = !prefill_only && !weights.empty() && group == nullptr;
  std::optional<ForwardTrace> trace;
  if (breakdown) trace.emplace();
  engine.take_step_times();
  for (int r = 0; r < repetitions; ++r) {
    // Variants take turns, first one first and then the other, so a machine that drifts
    // (a neighbour's load, the clock) weighs on each alike.
    for (size_t k = 0; k < variants.size(); ++k) {
      const size_t v = r % 2 == 0 ? k : variants.size() - 1 - k;
      Gathered& g = gathered[v];
      engine.use_speculation(variants[v]);
      if (baseline) g.stream.push_back(stream_read_gbps(weights.data(), weights.size(), engine.pool()));
      progress(variants.size() > 1 ? fmt::format("rep {}/{} {}", r + 1, repetitions, variants[v] ? "drafting" : "plain")
                                   : fmt::format("rep {}/{}", r + 1, repetitions));
      const SpeculativeCounts before = engine.speculative();
      const double start = now_seconds(), collective_at_start = group ? group->collective_seconds() : 0;
      const Timing t = run_once(c.gen, trace && v == 0 ? &*trace : nullptr, &g);
      g.timed += now_seconds() - start;
      if (group) g.collective += group->collective_seconds() - collective_at_start;
      add_step_times(g.steps, engine.take_step_times());
      add_counts(g.speculative, engine.speculative(), before);
      g.counted += prefill_only ? c.tokens() : t.decode_tokens;
      switch (c.kind) {
        case BenchKind::kPrefill: g.main.push_back(c.tokens() / t.prefill_seconds); break;
        case BenchKind::kDecode: g.main.push_back(t.decode_tokens / t.decode_seconds); break;
        case BenchKind::kBatched:
          g.main.push_back(t.decode_tokens / t.decode_seconds);
          g.prefill.push_back(double(c.prompt * c.batch) / t.prefill_seconds);
          break;
      }
    }
  }
  std::vector<BenchMeasurement> out;
  for (size_t v = 0; v < variants.size(); ++v) {
    Gathered& g = gathered[v];
    if (baseline) g.stream.push_back(stream_read_gbps(weights.data(), weights.size(), engine.pool()));
    BenchMeasurement m = std::move(g.steps);
    m.bench_case = c;
    m.tokens_per_s = spread_of(std::move(g.main));
    m.prefill_tokens_per_s = spread_of(std::move(g.prefill));
    m.stream_gbps = spread_of(std::move(g.stream));
    if (v == 0) m.breakdown = trace;
    m.ranks = group ? group->ranks() : 1;
    m.collective_seconds = g.collective;
    m.timed_seconds = g.timed;
    m.timed_tokens = g.counted;
    m.prompt = std::move(g.prompt);
    m.generated = std::move(g.generated);
    m.speculative = std::move(g.speculative);
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace tps
