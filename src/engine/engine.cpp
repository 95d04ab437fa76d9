#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/timer.h"

namespace tps {

struct Engine::Active : Sequence {
  Active(GenerationRequest r, std::shared_ptr<RequestStream> s, uint64_t draft_seed)
      : request(std::move(r)), stream(std::move(s)), sampler(request.sampling), draft_sampler([&] {
          SamplingParams p = request.sampling;
          p.seed = draft_seed;  // its own draws: the draft's and the target's must be independent
          return p;
        }()) {}
  GenerationRequest request;
  std::shared_ptr<RequestStream> stream;
  Sampler sampler;
  // Speculative decoding: the draft model's sampler, its distribution for each draft
  // (temperature > 0), how many leading tokens have K/V in the draft's cache, and the
  // acceptance so far.
  Sampler draft_sampler;
  std::vector<TokenDistribution> draft_q;
  int32_t draft_computed = 0, draft_preemptions = 0;
  AcceptanceEstimate acceptance;
  bool speculates(const EngineConfig& c) const {
    return c.speculative.mode != SpecMode::kOff && request.speculative && request.forced.empty();
  }
};

namespace {

SchedulerConfig scheduler_config(const EngineConfig& c, const KvGeometry& g) {
  return {c.max_seqs, c.max_batch_tokens, static_cast<int32_t>(g.block_tokens), c.prefix_cache};
}

constexpr int32_t kPlaceholder = -1;  // a draft position the draft model fills after scheduling

}  // namespace

Engine::Engine(BatchModel& model, const EngineConfig& config)
    : model_(model), config_(config), context_(static_cast<int32_t>(model.kv_geometry().context)),
      pool_(static_cast<int32_t>(model.kv_geometry().blocks)),
      scheduler_(scheduler_config(config, model.kv_geometry()), pool_), draft_length_(config.speculative) {
  if (config_.speculative.mode != SpecMode::kOff) check_speculative_config(config_.speculative);
  if (config_.speculative.mode == SpecMode::kDraftModel) {
    if (config_.draft == nullptr) fail("speculative decoding with a draft model needs the draft model");
    const KvGeometry t = model.kv_geometry(), d = config_.draft->kv_geometry();
    if (d.blocks != t.blocks || d.block_tokens != t.block_tokens)
      fail("the draft model's KV cache must have the target's {} blocks of {}", t.blocks, t.block_tokens);
    if (config_.draft->vocab_size() != model.vocab_size())
      fail("the draft model's vocabulary has {} tokens, the target's {}", config_.draft->vocab_size(),
           model.vocab_size());
  }
  if (config_.is_eog)
    for (int32_t id = 0; id < model_.vocab_size(); ++id)
      if (config_.is_eog(id)) eog_ids_.push_back(id);
  publish_stats();
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  double t = now_seconds();
  for (auto& a : active_) a->stream->finish(FinishReason::kCancelled, t);
  for (auto& a : inbox_) a->stream->finish(FinishReason::kCancelled, t);
}

std::shared_ptr<RequestStream> Engine::submit(GenerationRequest request) {
  auto stream = std::make_shared<RequestStream>([this] {
    {
      std::lock_guard lock(mutex_);
      wake_ = true;
    }
    cv_.notify_all();
  });
  stream->set_arrived(now_seconds());
  stream->set_prompt_tokens(static_cast<int32_t>(request.prompt.size()));
  const uint64_t draft_seed = request.sampling.seed ^ 0x9E3779B97F4A7C15ull;
  auto active = std::make_unique<Active>(std::move(request), stream, draft_seed);
  active->tokens = active->request.prompt;
  active->prompt_len = static_cast<int32_t>(active->tokens.size());
  {
    std::lock_guard lock(mutex_);
    if (queued_ >= config_.max_queue) return nullptr;
    active->id = next_id_++;
    ++queued_;
    inbox_.push_back(std::move(active));
  }
  cv_.notify_all();
  return stream;
}

EngineStats Engine::stats() const {
  std::lock_guard lock(stats_mutex_);
  return stats_;
}

void Engine::publish_stats() {
  std::lock_guard lock(stats_mutex_);
  stats_.running = static_cast<int32_t>(scheduler_.running().size());
  {
    std::lock_guard inner(mutex_);
    stats_.waiting = queued_;
  }
  stats_.blocks_used = pool_.used();
  stats_.blocks_free = pool_.available();
  stats_.blocks_cached = pool_.cached();
  stats_.prefix_lookup_tokens = scheduler_.prefix_lookup_tokens();
  stats_.prefix_hit_tokens = scheduler_.prefix_hit_tokens();
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      bool idle = scheduler_.running().empty() && scheduler_.waiting().empty();
      cv_.wait(lock, [&] { return stop_ || wake_ || !inbox_.empty() || !idle; });
      if (stop_) return;
      wake_ = false;
      for (auto& a : inbox_) {
        // A new sequence starts from what this drafter has done for the others.
        a->acceptance = acceptance_.prior();
        scheduler_.enqueue(a.get());
        active_.push_back(std::move(a));
      }
      inbox_.clear();
    }
    drop_cancelled();
    step();
    publish_stats();
  }
}

void Engine::drop_cancelled() {
  for (size_t i = 0; i < active_.size();) {
    if (active_[i]->stream->cancelled()) {
      finish(*active_[i], FinishReason::kCancelled);  // erases active_[i]
    } else {
      ++i;
    }
  }
}

void Engine::finish(Active& a, FinishReason reason) {
  bool was_waiting = std::find(scheduler_.running().begin(), scheduler_.running().end(), &a) ==
                     scheduler_.running().end();
  scheduler_.remove(&a);
  if (was_waiting) {
    std::lock_guard lock(mutex_);
    --queued_;
  }
  a.stream->finish(reason, now_seconds());
  std::erase_if(active_, [&](const std::unique_ptr<Active>& p) { return p.get() == &a; });
}

// How many leading tokens still have K/V in the draft's cache: none after a preemption
// freed its blocks, and none past the target's (the draft's cache follows the target's block table).
int32_t Engine::draft_valid(const Active& a) {
  return a.draft_preemptions != a.preemptions ? 0 : std::min(a.draft_computed, a.computed);
}

int32_t Engine::draft_behind(const Active& a) const {
  if (config_.speculative.mode != SpecMode::kDraftModel) return 0;
  return static_cast<int32_t>(a.tokens.size()) - draft_valid(a);
}

double Engine::propose_drafts() {
  draft_work_ = {};
  if (config_.speculative.mode == SpecMode::kOff) return 0;
  const double t0 = now_seconds();
  // Candidates and the drafts each has room for before its token limit or the context
  // (the bonus token takes the last place).
  struct Candidate {
    Active* a;
    int32_t room;
  };
  std::vector<Candidate> candidates;
  std::vector<DraftCandidate> estimates;
  int32_t base_rows = 0;
  for (Sequence* s : scheduler_.running()) {
    auto* a = static_cast<Active*>(s);
    base_rows += std::max(1, a->pending());
    const bool decoding = a->pending() == 1 && a->generated() > 0;
    const int32_t room = std::min(a->request.max_tokens - a->generated(), context_ - static_cast<int32_t>(a->tokens.size())) - 1;
    if (!decoding || !a->speculates(config_) || room < config_.speculative.draft_min) continue;
    candidates.push_back({a, room});
    estimates.push_back({a->acceptance.rate(), draft_behind(*a)});
  }
  const DraftChoice choice = draft_length_.choose(base_rows, estimates);
  if (choice.k == 0) return now_seconds() - t0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (estimates[i].behind > choice.max_behind) continue;
    Active* a = candidates[i].a;
    const int32_t n = std::min(choice.k, candidates[i].room);
    std::vector<int32_t> drafts;
    if (config_.speculative.mode == SpecMode::kNgram) {
      drafts = ngram_draft(a->tokens, config_.speculative.ngram_min, config_.speculative.ngram_max, n);
    } else {
      drafts.assign(static_cast<size_t>(n), kPlaceholder);
    }
    if (static_cast<int32_t>(drafts.size()) < config_.speculative.draft_min) continue;
    a->tokens.insert(a->tokens.end(), drafts.begin(), drafts.end());
    a->drafted = static_cast<int32_t>(drafts.size());
    // The lookups are the n-gram drafter's one round.
    if (config_.speculative.mode == SpecMode::kNgram) draft_work_.rounds = 1;
  }
  return now_seconds() - t0;
}

double Engine::fill_model_drafts(StepPlan& plan) {
  if (config_.speculative.mode != SpecMode::kDraftModel) return 0;
  const double t0 = now_seconds();
  BatchModel& draft = *config_.draft;
  const int32_t vocab = draft.vocab_size();
  struct Slot {
    ScheduledChunk* chunk;
    Active* a;
    int32_t first;   // the first draft's index in a->tokens
    int32_t filled;  // drafts proposed so far
    bool open;       // still proposing
  };
  std::vector<Slot> slots;
  for (ScheduledChunk& c : plan.chunks) {
    if (c.seq->drafted == 0 || !c.wants_logits) continue;
    auto* a = static_cast<Active*>(c.seq);
    a->draft_computed = draft_valid(*a);
    a->draft_preemptions = a->preemptions;
    a->draft_q.assign(static_cast<size_t>(a->drafted), {});
    slots.push_back({&c, a, static_cast<int32_t>(a->tokens.size()) - a->drafted, 0, true});
  }
  if (slots.empty()) return 0;
  // Round 0 catches each draft cache up to the last accepted token (the whole prompt the
  // first time) and proposes; rounds 1.. feed one draft each. The catch-up of a step
  // takes at most the step budget of rows in all: a sequence further behind feeds what
  // is left of it and proposes nothing this step, so a long prompt's draft prefill is
  // spread over steps instead of stalling every sequence in the batch at once.
  int32_t catch_up_budget = config_.max_batch_tokens;
  auto timed_forward = [&](const ForwardBatch& batch) {
    const double start = now_seconds();
    draft.forward(batch, draft_logits_.data());
    draft_work_.forwards.emplace_back(static_cast<int32_t>(batch.size()), now_seconds() - start);
  };
  for (int32_t round = 0;; ++round) {
    draft_batch_.clear();
    std::vector<Slot*> fed;
    for (Slot& s : slots) {
      if (!s.open) continue;
      const int32_t begin = s.a->draft_computed, end = s.first + s.filled;  // feed tokens [begin, end)
      if (round == 0) {
        if (end - begin > catch_up_budget) {
          if (catch_up_budget > 0) {
            ForwardBatch catch_up;
            catch_up.sequences.push_back({s.a->blocks.data(), static_cast<int64_t>(s.a->blocks.size())});
            for (int32_t p = begin; p < begin + catch_up_budget; ++p) catch_up.add(s.a->tokens[p], p, 0, false);
            draft_logits_.resize(static_cast<size_t>(vocab));
            timed_forward(catch_up);
            s.a->draft_computed += catch_up_budget;
            catch_up_budget = 0;
          }
          s.open = false;
          continue;
        }
        catch_up_budget -= end - begin;
      }
      const auto seq_index = static_cast<int32_t>(draft_batch_.sequences.size());
      draft_batch_.sequences.push_back({s.a->blocks.data(), static_cast<int64_t>(s.a->blocks.size())});
      for (int32_t p = begin; p < end; ++p) draft_batch_.add(s.a->tokens[p], p, seq_index, p == end - 1);
      s.a->draft_computed = end;
      fed.push_back(&s);
    }
    if (fed.empty()) break;
    draft_logits_.resize(fed.size() * static_cast<size_t>(vocab));
    timed_forward(draft_batch_);
    ++draft_work_.rounds;
    for (size_t i = 0; i < fed.size(); ++i) {
      Slot& s = *fed[i];
      Active& a = *s.a;
      std::span<float> logits(draft_logits_.data() + i * vocab, static_cast<size_t>(vocab));
      const std::span<const int32_t> history(a.tokens.data(), static_cast<size_t>(s.first + s.filled));
      TokenDistribution& q = a.draft_q[static_cast<size_t>(s.filled)];
      a.draft_sampler.distribution(logits, history, q);
      int32_t pick = q.ids[0];
      float pick_p = q.probs[0];
      if (a.sampler.greedy()) {
        // Greedy drafts stop where the draft is unsure: softmax of the pick.
        const float max = logits[pick];
        double z = 0;
        for (float l : logits) z += std::exp(static_cast<double>(l - max));
        pick_p = static_cast<float>(1 / z);
      } else {
        pick = a.draft_sampler.draw_from(q);
        pick_p = q.prob_of(pick);
      }
      if (s.filled >= config_.speculative.draft_min && pick_p < config_.speculative.draft_p_min) {
        s.open = false;
        continue;
      }
      a.tokens[static_cast<size_t>(s.first + s.filled)] = pick;
      ++s.filled;
      if (s.filled == a.drafted) s.open = false;
    }
  }
  // Drafts the model did not propose leave the sequence and its chunk; a sequence left
  // with fewer than draft_min is verified with none.
  for (Slot& s : slots) {
    const int32_t keep = s.filled >= config_.speculative.draft_min ? s.filled : 0;
    const int32_t drop = s.a->drafted - keep;
    s.a->tokens.resize(s.a->tokens.size() - static_cast<size_t>(drop));
    s.a->drafted = keep;
    s.a->draft_q.resize(static_cast<size_t>(keep));
    s.chunk->count -= drop;
  }
  return now_seconds() - t0;
}

void Engine::step() {
  size_t waiting_before = scheduler_.waiting().size();
  const double t0 = now_seconds();
  double draft_s = propose_drafts();
  StepPlan plan = scheduler_.schedule();
  {
    // Admissions leave the queue; preempted sequences rejoin it.
    std::lock_guard lock(mutex_);
    queued_ += static_cast<int32_t>(scheduler_.waiting().size()) - static_cast<int32_t>(waiting_before);
  }
  {
    std::lock_guard lock(stats_mutex_);
    stats_.preemptions += static_cast<int64_t>(plan.preempted.size());
  }
  // Drafts of sequences that were not scheduled this step go again next step.
  for (Sequence* s : scheduler_.running())
    if (std::none_of(plan.chunks.begin(), plan.chunks.end(), [&](const ScheduledChunk& c) { return c.seq == s; }))
      s->drop_drafts();
  if (plan.empty()) {
    // Nothing fits now (only possible while blocks are short): wait for a change.
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::milliseconds(5), [&] { return stop_ || wake_ || !inbox_.empty(); });
    return;
  }
  for (auto [from, to] : plan.copies) {
    model_.copy_block(from, to);
    if (config_.draft != nullptr) config_.draft->copy_block(from, to);
  }
  draft_s += fill_model_drafts(plan);

  batch_.clear();
  int32_t logit_rows = 0, decode_rows = 0, prefill_rows = 0, drafted = 0;
  for (size_t k = 0; k < plan.chunks.size(); ++k) {
    const ScheduledChunk& c = plan.chunks[k];
    static_cast<Active*>(c.seq)->stream->set_scheduled(t0, std::max(0, c.seq->cached_tokens));
    batch_.sequences.push_back({c.seq->blocks.data(), static_cast<int64_t>(c.seq->blocks.size())});
    const int32_t first_logit = c.begin + c.count - c.logit_rows();
    for (int32_t p = c.begin; p < c.begin + c.count; ++p)
      batch_.add(c.seq->tokens[p], p, static_cast<int32_t>(k), p >= first_logit);
    logit_rows += c.logit_rows();
    drafted += c.seq->drafted;
    if (c.count - c.seq->drafted == 1 && c.seq->generated() > 0) {
      ++decode_rows;
    } else {
      prefill_rows += c.count;
    }
  }
  const int32_t vocab = model_.vocab_size();
  logits_.resize(static_cast<size_t>(logit_rows) * vocab);
  const double f0 = now_seconds();
  model_.forward(batch_, logits_.data());
  const double forward_s = now_seconds() - f0;

  // Verify first: rejected drafts leave the sequences before complete() publishes
  // their blocks. Then emit, which may finish (and free) sequences.
  struct Result {
    Active* a;
    size_t first;  // index in a->tokens of the first token this step gives
    std::vector<std::vector<float>> raw;
  };
  std::vector<Result> results;
  float* row = logits_.data();
  for (const ScheduledChunk& c : plan.chunks) {
    if (!c.wants_logits) continue;
    auto* a = static_cast<Active*>(c.seq);
    const int32_t rows = c.logit_rows();
    Result r{a, a->tokens.size() - static_cast<size_t>(a->drafted), {}};
    verify(*a, row, rows, r.raw);
    row += static_cast<size_t>(rows) * vocab;
    results.push_back(std::move(r));
  }
  scheduler_.complete(plan);
  emitted_ = 0;
  for (Result& r : results) {
    // The sampled (bonus) token is not in the cache yet: it is the next step's row.
    Active& a = *r.a;
    const size_t end = a.tokens.size();
    for (size_t i = r.first; i < end; ++i)
      if (!emit(a, i, r.raw.empty() ? nullptr : &r.raw[i - r.first])) break;
  }

  {
    std::lock_guard lock(stats_mutex_);
    stats_.steps++;
  }
  if (config_.speculative.mode != SpecMode::kOff && decode_rows == static_cast<int32_t>(plan.chunks.size())) {
    // A draft model's passes include catching up on the tokens since it last ran: the
    // price of keeping it in step.
    draft_work_.seconds = draft_s;
    draft_length_.record_step(plan.rows(), forward_s, draft_work_);
  }
  if (observer_) {
    StepInfo info{plan.rows(), static_cast<int32_t>(plan.chunks.size()), decode_rows, now_seconds() - t0};
    info.forward_seconds = forward_s;
    info.draft_seconds = draft_s;
    info.drafted = drafted;
    info.prefill_rows = prefill_rows;
    info.emitted = emitted_;
    observer_(info);
  }
}

void Engine::verify(Active& a, float* logits, int32_t logit_rows, std::vector<std::vector<float>>& raw) {
  const int32_t vocab = model_.vocab_size();
  const int32_t k = a.drafted;
  const size_t first_draft = a.tokens.size() - static_cast<size_t>(k);
  const bool keep_raw = a.request.top_logprobs >= 0;
  int32_t accepted = 0;
  int32_t next = -1;
  for (int32_t j = 0; j < logit_rows; ++j) {
    float* l = logits + static_cast<size_t>(j) * vocab;
    if (a.request.on_logits) a.request.on_logits({l, static_cast<size_t>(vocab)});
    if (keep_raw) raw.emplace_back(l, l + vocab);
    if (a.request.ignore_eos)
      for (int32_t id : eog_ids_) l[id] = -std::numeric_limits<float>::infinity();
    const std::span<float> row(l, static_cast<size_t>(vocab));
    const std::span<const int32_t> history(a.tokens.data(), first_draft + static_cast<size_t>(j));
    if (j < k) {
      const int32_t draft = a.tokens[first_draft + static_cast<size_t>(j)];
      const TokenDistribution* q = a.draft_q.size() > static_cast<size_t>(j) ? &a.draft_q[static_cast<size_t>(j)] : nullptr;
      bool kept = false;
      const int32_t t = a.sampler.verify(row, history, draft, q, &kept);
      if (kept) {
        ++accepted;
        continue;
      }
      next = t;
      break;
    }
    const auto i = static_cast<size_t>(a.generated() + j);  // forced requests never draft
    next = i < a.request.forced.size() ? a.request.forced[i] : a.sampler.sample(row, history);
  }
  if (k > 0) {
    a.acceptance.record(k, accepted);
    acceptance_.record(k, accepted);
    a.draft_computed = std::min(a.draft_computed, static_cast<int32_t>(first_draft) + accepted);
    std::lock_guard lock(stats_mutex_);
    stats_.speculative.add_step(k, accepted);
    a.stream->add_speculative(k, accepted);
  }
  a.tokens.resize(first_draft + static_cast<size_t>(accepted));
  a.drafted = 0;
  a.draft_q.clear();
  if (keep_raw) raw.resize(static_cast<size_t>(accepted) + 1);
  a.tokens.push_back(next);
}

// Log-probabilities come from the model's raw distribution, before any sampling
// transform, as OpenAI reports them.
static void fill_logprobs(const float* logits, int32_t vocab, int32_t n_top, GeneratedToken& out) {
  float max = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (int32_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - max));
  float log_z = max + static_cast<float>(std::log(sum));
  out.logprob = logits[out.id] - log_z;
  n_top = std::min(n_top, vocab);
  std::vector<int32_t> ids(vocab);
  for (int32_t i = 0; i < vocab; ++i) ids[i] = i;
  std::partial_sort(ids.begin(), ids.begin() + n_top, ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  for (int32_t i = 0; i < n_top; ++i) out.top.emplace_back(ids[i], logits[ids[i]] - log_z);
}

bool Engine::emit(Active& a, size_t index, const std::vector<float>* raw) {
  GeneratedToken token;
  token.id = a.tokens[index];
  const double t = now_seconds();
  if (!a.request.ignore_eos && config_.is_eog && config_.is_eog(token.id)) {
    finish(a, FinishReason::kStop);
    return false;
  }
  if (raw != nullptr) fill_logprobs(raw->data(), model_.vocab_size(), a.request.top_logprobs, token);
  a.stream->push(std::move(token), t);
  ++emitted_;
  const auto generated = static_cast<int32_t>(index) + 1 - a.prompt_len;
  if (generated >= a.request.max_tokens || static_cast<int32_t>(index) + 1 >= context_) {
    finish(a, FinishReason::kLength);
    return false;
  }
  return true;
}

}  // namespace tps
