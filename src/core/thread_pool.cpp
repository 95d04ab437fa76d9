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
}  // namespace

bool ThreadPool::claim(Slot& slot, uint32_t g) {
  uint32_t seen = slot.claimed.load(std::memory_order_acquire);
  // Generations only grow (modulo 2^32): a claim of g or later stands.
  while (static_cast<int32_t>(g - seen) > 0)
    if (slot.claimed.compare_exchange_weak(seen, g, std::memory_order_acq_rel)) return true;
  return false;
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)), slots_(static_cast<size_t>(n_threads_)) {
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

void ThreadPool::dispatch(RawFn fn, void* ctx, bool caller_takes_late_shares) {
  if (n_threads_ == 1) {
    fn(ctx, 0, 1);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  const uint32_t g = generation_.fetch_add(1, std::memory_order_acq_rel) + 1;
  generation_.notify_all();
  fn(ctx, 0, n_threads_);
  const double wait_start = wait_total_ != nullptr ? now_seconds() : 0;
  for (int i = 1; i < n_threads_; ++i) {
    Slot& slot = slots_[static_cast<size_t>(i)];
    if (caller_takes_late_shares && claim(slot, g)) {
      // Its worker has not woken up yet (asleep, or its core is busy): do its share
      // here rather than wait for it.
      fn(ctx, i, n_threads_);
      continue;
    }
    // With more threads than free cores a worker may be descheduled: after a short
    // spin, give the core away instead of burning the time slice it needs.
    for (int spins = 0; slot.finished.load(std::memory_order_acquire) != g; ++spins) {
      if (spins < kSpinsBeforeYield) {
        TPS_CPU_RELAX();
      } else {
        std::this_thread::yield();
      }
    }
  }
  if (wait_total_ != nullptr) *wait_total_ += now_seconds() - wait_start;
}

void ThreadPool::worker_loop(int index) {
  Slot& slot = slots_[static_cast<size_t>(index)];
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
    // The region's share for this worker, unless the caller took it first; a later
    // region's, if this one is long over (the caller did this worker's share then).
    if (!claim(slot, g)) continue;
    fn_(ctx_, index, n_threads_);
    slot.finished.store(g, std::memory_order_release);
  }
}

}  // namespace tps
