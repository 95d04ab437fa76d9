#include "engine/engine.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/timer.h"

namespace tps {

struct Engine::Active : Sequence {
  Active(GenerationRequest r, std::shared_ptr<RequestStream> s)
      : request(std::move(r)), stream(std::move(s)), sampler(request.sampling) {}
  GenerationRequest request;
  std::shared_ptr<RequestStream> stream;
  Sampler sampler;
};

namespace {

SchedulerConfig scheduler_config(const EngineConfig& c, const KvGeometry& g) {
  return {c.max_seqs, c.max_batch_tokens, static_cast<int32_t>(g.block_tokens), c.prefix_cache};
}

}  // namespace

Engine::Engine(BatchModel& model, const EngineConfig& config)
    : model_(model), config_(config), context_(static_cast<int32_t>(model.kv_geometry().context)),
      pool_(static_cast<int32_t>(model.kv_geometry().blocks)),
      scheduler_(scheduler_config(config, model.kv_geometry()), pool_) {
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
  auto active = std::make_unique<Active>(std::move(request), stream);
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

void Engine::step() {
  size_t waiting_before = scheduler_.waiting().size();
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
  if (plan.empty()) {
    // Nothing fits now (only possible while blocks are short): wait for a change.
    std::unique_lock lock(mutex_);
    cv_.wait_for(lock, std::chrono::milliseconds(5), [&] { return stop_ || wake_ || !inbox_.empty(); });
    return;
  }
  double t0 = now_seconds();
  for (auto [from, to] : plan.copies) model_.copy_block(from, to);

  batch_.clear();
  int32_t logit_rows = 0, decode_rows = 0;
  for (size_t k = 0; k < plan.chunks.size(); ++k) {
    const ScheduledChunk& c = plan.chunks[k];
    static_cast<Active*>(c.seq)->stream->set_scheduled(t0, std::max(0, c.seq->cached_tokens));
    batch_.sequences.push_back({c.seq->blocks.data(), static_cast<int64_t>(c.seq->blocks.size())});
    for (int32_t p = c.begin; p < c.begin + c.count; ++p) {
      bool last = p == c.begin + c.count - 1;
      batch_.add(c.seq->tokens[p], p, static_cast<int32_t>(k), last && c.wants_logits);
    }
    if (c.wants_logits) ++logit_rows;
    if (c.count == 1 && c.seq->generated() > 0) ++decode_rows;
  }
  const int32_t vocab = model_.vocab_size();
  logits_.resize(static_cast<size_t>(logit_rows) * vocab);
  model_.forward(batch_, logits_.data());
  scheduler_.complete(plan);

  int32_t row = 0;
  std::vector<Active*> sampled;
  for (const ScheduledChunk& c : plan.chunks)
    if (c.wants_logits) sampled.push_back(static_cast<Active*>(c.seq));
  for (Active* a : sampled) sample_and_emit(*a, logits_.data() + static_cast<size_t>(row++) * vocab);

  {
    std::lock_guard lock(stats_mutex_);
    stats_.steps++;
  }
  if (observer_)
    observer_({plan.rows(), static_cast<int32_t>(plan.chunks.size()), decode_rows, now_seconds() - t0});
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

void Engine::sample_and_emit(Active& a, float* logits) {
  const int32_t vocab = model_.vocab_size();
  if (a.request.on_logits) a.request.on_logits({logits, static_cast<size_t>(vocab)});
  std::vector<float> raw;
  if (a.request.top_logprobs >= 0) raw.assign(logits, logits + vocab);
  if (a.request.ignore_eos)
    for (int32_t id : eog_ids_) logits[id] = -std::numeric_limits<float>::infinity();
  GeneratedToken token;
  const auto i = static_cast<size_t>(a.generated());
  token.id = i < a.request.forced.size() ? a.request.forced[i]
                                         : a.sampler.sample({logits, static_cast<size_t>(vocab)}, a.tokens);
  double t = now_seconds();
  if (!a.request.ignore_eos && config_.is_eog && config_.is_eog(token.id)) {
    finish(a, FinishReason::kStop);
    return;
  }
  if (!raw.empty()) fill_logprobs(raw.data(), vocab, a.request.top_logprobs, token);
  a.tokens.push_back(token.id);
  a.stream->push(std::move(token), t);
  if (a.generated() >= a.request.max_tokens || static_cast<int32_t>(a.tokens.size()) >= context_)
    finish(a, FinishReason::kLength);
}

}  // namespace tps
