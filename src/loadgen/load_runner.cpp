#include "loadgen/load_runner.h"

#include "loadgen/event_tokens.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <ostream>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "core/timer.h"
#include "loadgen/prometheus_text.h"

namespace tps::loadgen {
namespace {

// Connection failures in a row after which the server is taken to be gone.
constexpr int kUnreachableLimit = 3;

// State shared by the clients of one phase (warm-up or measured) of a sweep value.
class Phase {
 public:
  Phase(const std::vector<Prompt>& prompts, size_t first_prompt, int64_t requests, double duration_s,
        const std::atomic<bool>* cancel)
      : prompts_(prompts), first_prompt_(first_prompt), requests_(requests), duration_s_(duration_s),
        cancel_(cancel) {}

  // The next request's index, or -1 when the phase has sent all it should.
  int64_t claim(double elapsed) {
    if (stop_.load() || (cancel_ && cancel_->load())) return -1;
    if (duration_s_ > 0 && elapsed >= duration_s_) return -1;
    int64_t i = next_.fetch_add(1);
    return requests_ > 0 && i >= requests_ ? -1 : i;
  }
  const Prompt& prompt(int64_t i) const { return prompts_[(first_prompt_ + size_t(i)) % prompts_.size()]; }

  void finish(RequestRecord record) {
    std::lock_guard lock(mutex_);
    consecutive_unreachable_ = record.unreachable ? consecutive_unreachable_ + 1 : 0;
    if (consecutive_unreachable_ >= kUnreachableLimit && stopped_.empty()) {
      stopped_ = fmt::format("the server stopped answering ({}); partial results kept", record.error);
      stop_ = true;
    }
    done_ += 1;
    failed_ += record.ok ? 0 : 1;
    output_tokens_ += record.ok ? record.output_tokens : 0;
    records_.push_back(std::move(record));
  }
  void note_first_send(double t) {
    std::lock_guard lock(mutex_);
    ramp_end_ = std::max(ramp_end_, t);
  }

  std::vector<RequestRecord> take_records() {
    std::lock_guard lock(mutex_);
    std::sort(records_.begin(), records_.end(),
              [](const RequestRecord& a, const RequestRecord& b) { return a.id < b.id; });
    return std::move(records_);
  }
  std::string progress_line() {
    std::lock_guard lock(mutex_);
    return fmt::format("{} done, {} failed, {:.1f} output tok/s", done_, failed_,
                       output_tokens_ / std::max(now_seconds() - origin, 1e-9));
  }
  std::string stopped() {
    std::lock_guard lock(mutex_);
    return stopped_;
  }
  double ramp_end() {
    std::lock_guard lock(mutex_);
    return ramp_end_;
  }
  int64_t failed() {
    std::lock_guard lock(mutex_);
    return failed_;
  }

  const double origin = now_seconds();

 private:
  const std::vector<Prompt>& prompts_;
  size_t first_prompt_;
  int64_t requests_;
  double duration_s_;
  const std::atomic<bool>* cancel_;
  std::atomic<int64_t> next_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::vector<RequestRecord> records_;
  int consecutive_unreachable_ = 0;
  int64_t done_ = 0, failed_ = 0;
  double output_tokens_ = 0;
  double ramp_end_ = 0;
  std::string stopped_;
};

void run_closed_loop(Phase& phase, const Endpoint& endpoint, int clients) {
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&] {
      OpenAiClient client(endpoint);
      bool first = true;
      for (int64_t i; (i = phase.claim(now_seconds() - phase.origin)) >= 0;) {
        RequestRecord record = client.stream(phase.prompt(i), phase.origin);
        record.id = i;
        if (first) phase.note_first_send(record.send_time);
        first = false;
        phase.finish(std::move(record));
      }
    });
  }
  for (auto& t : threads) t.join();
}

void run_open_loop(Phase& phase, const Endpoint& endpoint, double rate, double burstiness,
                   uint64_t seed) {
  std::mt19937_64 rng(seed);
  // Gamma inter-arrival times with mean 1/rate; shape 1 is a Poisson process, a smaller
  // shape is burstier.
  std::gamma_distribution<double> gap(burstiness, 1.0 / (rate * burstiness));
  std::mutex idle_mutex;
  std::vector<std::unique_ptr<OpenAiClient>> idle;  // reused for their open connections
  std::vector<std::thread> threads;
  double at = 0;
  for (int64_t i; (i = phase.claim(at)) >= 0;) {
    std::this_thread::sleep_until(std::chrono::steady_clock::time_point(
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(phase.origin + at))));
    threads.emplace_back([&, i] {
      std::unique_ptr<OpenAiClient> client;
      {
        std::lock_guard lock(idle_mutex);
        if (!idle.empty()) {
          client = std::move(idle.back());
          idle.pop_back();
        }
      }
      if (!client) client = std::make_unique<OpenAiClient>(endpoint);
      RequestRecord record = client->stream(phase.prompt(i), phase.origin);
      record.id = i;
      phase.finish(std::move(record));
      std::lock_guard lock(idle_mutex);
      idle.push_back(std::move(client));
    });
    if (std::isfinite(rate)) at += gap(rng);
  }
  for (auto& t : threads) t.join();
}

// Prints the progress line while a phase runs: redrawn in place on a terminal, every
// ten seconds on a line of its own otherwise.
class ProgressPrinter {
 public:
  ProgressPrinter(Phase& phase, std::string label, std::ostream& out, bool enabled)
      : phase_(phase), label_(std::move(label)), out_(out) {
    if (!enabled) return;
    bool tty = isatty(STDERR_FILENO);
    thread_ = std::thread([this, tty] {
      auto period = std::chrono::milliseconds(tty ? 500 : 10000);
      std::unique_lock lock(mutex_);
      while (!cv_.wait_for(lock, period, [this] { return done_; }))
        out_ << (tty ? "\r\033[K" : "") << label_ << ": " << phase_.progress_line() << (tty ? "" : "\n")
             << std::flush;
      out_ << (tty ? "\r\033[K" : "") << label_ << ": " << phase_.progress_line() << "\n" << std::flush;
    });
  }
  ~ProgressPrinter() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mutex_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  Phase& phase_;
  std::string label_;
  std::ostream& out_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

nlohmann::json scrape_metrics(const Endpoint& endpoint) {
  OpenAiClient client(endpoint);
  auto text = client.get("/metrics");
  return text ? parse_prometheus_text(*text) : nlohmann::json();
}

std::string value_label(const std::string& mode, double value) {
  return mode == "concurrency" ? fmt::format("concurrency {}", value) : fmt::format("rate {}/s", value);
}

}  // namespace

size_t prompts_needed(const RunSettings& settings, size_t pool) {
  size_t per_value = settings.requests > 0 ? size_t(settings.requests) : pool;
  return (per_value + size_t(settings.warmup)) * settings.values.size();
}

RunResult run_load(const RunSettings& settings, const std::vector<Prompt>& prompts,
                   TokenCounter* output_counter, std::ostream& progress_out) {
  RunResult result;
  size_t next_prompt = 0;
  for (size_t v = 0; v < settings.values.size() && result.stopped.empty(); ++v) {
    double value = settings.values[v];
    SweepPoint point;
    point.mode = settings.mode;
    point.value = value;
    std::string label = value_label(settings.mode, value);
    int clients = settings.mode == "concurrency" ? int(value) : 0;

    if (settings.warmup > 0) {
      Phase warmup(prompts, next_prompt, settings.warmup, 0, settings.cancel);
      ProgressPrinter printer(warmup, label + " warm-up", progress_out, settings.progress);
      int warm_clients = clients > 0 ? clients : int(std::min<int64_t>(settings.warmup, 16));
      run_closed_loop(warmup, settings.endpoint, std::min<int>(warm_clients, int(settings.warmup)));
      next_prompt += size_t(settings.warmup);
      point.warmup_failed = warmup.failed();
      if (!warmup.stopped().empty()) {
        result.stopped = warmup.stopped();
        break;
      }
    }

    point.metrics_before = scrape_metrics(settings.endpoint);
    Phase phase(prompts, next_prompt, settings.requests, settings.duration_s, settings.cancel);
    point.origin = phase.origin;
    point.started_unix = double(std::chrono::duration_cast<std::chrono::microseconds>(
                                    std::chrono::system_clock::now().time_since_epoch()).count()) / 1e6;
    {
      ProgressPrinter printer(phase, label, progress_out, settings.progress);
      if (clients > 0) {
        run_closed_loop(phase, settings.endpoint, clients);
      } else {
        run_open_loop(phase, settings.endpoint, value, settings.burstiness, settings.seed + v);
      }
    }
    point.records = phase.take_records();
    next_prompt += point.records.size();
    result.stopped = phase.stopped();
    if (result.stopped.empty() && settings.cancel && settings.cancel->load())
      result.stopped = "interrupted; the requests already sent were finished and are kept";
    point.metrics_after = result.stopped.empty() ? scrape_metrics(settings.endpoint) : nlohmann::json();

    for (auto& r : point.records) {
      if (r.ok && r.output_tokens_source != "usage" && output_counter && output_counter->exact() &&
          result.stopped.empty()) {
        r.output_tokens = output_counter->count(r.output_text);
        r.output_tokens_source = "tokenizer";
      }
      if (r.ok && result.stopped.empty())
        settle_event_tokens(r, output_counter && output_counter->exact() ? output_counter : nullptr);
      r.output_text.clear();
    }
    double ramp_end = clients > 0 ? phase.ramp_end()
                      : point.records.empty() ? 0.0
                                              : point.records.front().send_time;
    for (const auto& r : point.records) ramp_end = clients > 0 ? ramp_end : std::min(ramp_end, r.send_time);
    point.ramp_end = ramp_end;
    point.summary = summarize(settings.mode, value, point.records, ramp_end, settings.slo);
    result.points.push_back(std::move(point));
  }
  return result;
}

}  // namespace tps::loadgen
