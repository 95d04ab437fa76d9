#include "core/thread_pool.h"

#include <sched.h>

#include "core/timer.h"

#if defined(__x86_64__)
#include <immintrin.h>
#define TPS_CPU_RELAX() _mm_pause()
#else
#define TPS_CPU_RELAX() ((void)0)
#endif

namespace tps {

namespace {
constexpr int kSpinsBeforeSleep = 1 << 14;
constexpr int kSpinsBeforeYield = 1 << 12;
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

int ThreadPool::default_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

void ThreadPool::dispatch(RawFn fn, void* ctx) {
  if (n_threads_ == 1) {
    fn(ctx, 0, 1);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  fn(ctx, 0, n_threads_);
  const double wait_start = wait_total_ != nullptr ? now_seconds() : 0;
  // With more threads than free cores a worker may be descheduled: after a short spin,
  // give the core away instead of burning the time slice it needs.
  for (int spins = 0; pending_.load(std::memory_order_acquire) != 0; ++spins) {
    if (spins < kSpinsBeforeYield) {
      TPS_CPU_RELAX();
    } else {
      std::this_thread::yield();
    }
  }
  if (wait_total_ != nullptr) *wait_total_ += now_seconds() - wait_start;
}

void ThreadPool::worker_loop(int index) {
  uint32_t seen = 0;
  for (;;) {
    int spins = 0;
    uint32_t g;
    while ((g = generation_.load(std::memory_order_acquire)) == seen) {
      if (++spins < kSpinsBeforeYield) {
        TPS_CPU_RELAX();
      } else if (spins < kSpinsBeforeSleep) {
        std::this_thread::yield();
      } else {
        generation_.wait(seen, std::memory_order_acquire);
      }
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    fn_(ctx_, index, n_threads_);
    pending_.fetch_sub(1, std::memory_order_release);
  }
}

}  // namespace tps
