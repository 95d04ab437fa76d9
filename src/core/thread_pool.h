#pragma once
// A fork-join pool for the forward pass. On two cores every barrier counts, so workers
// spin briefly on a generation counter before sleeping (C++20 atomic wait = futex),
// in a work split the caller does the share of a worker that has not woken up, and
// dispatch passes a plain function reference: no allocation per op.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace tps {

class ThreadPool {
 public:
  explicit ThreadPool(int n_threads);  // n_threads includes the calling thread
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Runs fn(thread_index, n_threads) on every thread at once, the caller being thread
  // 0, and returns when all have finished (what the probe's concurrent reads need).
  template <typename F>
  void run(F&& fn) {
    dispatch(trampoline<F>, &fn, false);
  }

  // Splits [0, n) into contiguous ranges of whole grains, one per thread:
  // fn(begin, end, thread_index).
  template <typename F>
  void parallel_for(int64_t n, int64_t grain, F&& fn) {
    if (n <= 0) return;
    int64_t grains = (n + grain - 1) / grain;
    if (n_threads_ == 1 || grains == 1) {
      fn(int64_t{0}, n, 0);
      return;
    }
    run_shares([&](int ti, int nt) {
      int64_t g0 = grains * ti / nt, g1 = grains * (ti + 1) / nt;
      int64_t b = std::min(n, g0 * grain), e = std::min(n, g1 * grain);
      if (b < e) fn(b, e, ti);
    });
  }

  // Hands out [0, n) in grains to whichever thread is free next: for work items of
  // uneven cost (causal attention rows), where a fixed split leaves a thread idle.
  template <typename F>
  void parallel_for_dynamic(int64_t n, int64_t grain, F&& fn) {
    share_out(n, grain, 0, fn);
  }

  // Like parallel_for_dynamic, but each grab takes a share of what is left (at least
  // min_grain): long contiguous ranges first, which streaming reads need (the
  // hardware prefetchers restart at every jump), then shorter ones that even out
  // threads slowed by other tenants.
  template <typename F>
  void parallel_for_guided(int64_t n, int64_t min_grain, F&& fn) {
    share_out(n, min_grain, 2 * n_threads_, fn);
  }

  // While `total` is set (nullptr: off), the calling thread adds to it the seconds it
  // spends waiting for the other threads at the end of each parallel region.
  void count_waits(double* total) { wait_total_ = total; }

  // The default thread count: the cores this process may run on.
  static int default_threads();

 private:
  using RawFn = void (*)(void*, int, int);
  template <typename F>
  static void trampoline(void* ctx, int ti, int nt) {
    (*static_cast<std::remove_reference_t<F>*>(ctx))(ti, nt);
  }
  // fn(thread_index, n_threads) for every index; the caller runs the share of any
  // worker that has not woken up by the time its own share is done (work splits, where
  // who runs a share does not matter).
  template <typename F>
  void run_shares(F&& fn) {
    dispatch(trampoline<F>, &fn, true);
  }
  void dispatch(RawFn fn, void* ctx, bool caller_takes_late_shares);

  // Ranges of `grain` items, or with share > 0 of max(grain, what is left / share),
  // to whichever thread asks next: fn(begin, end, thread_index).
  template <typename F>
  void share_out(int64_t n, int64_t grain, int64_t share, F& fn) {
    if (n <= 0) return;
    if (n_threads_ == 1 || n <= grain) {
      fn(int64_t{0}, n, 0);
      return;
    }
    std::atomic<int64_t> next{0};
    run_shares([&](int ti, int) {
      int64_t b = next.load(std::memory_order_relaxed);
      while (b < n) {
        const int64_t e = std::min(n, b + (share > 0 ? std::max(grain, (n - b) / share) : grain));
        if (next.compare_exchange_weak(b, e, std::memory_order_relaxed)) {
          fn(b, e, ti);
          b = next.load(std::memory_order_relaxed);
        }
      }
    });
  }
  void worker_loop(int index);

  // Thread i's share of each work split (generation g) is run by whichever of it and
  // the calling thread claims g first: a worker that sleeps (a futex wake can take
  // hundreds of microseconds on a VM whose idle vCPU is halted) never holds the caller up.
  struct alignas(64) Slot {
    std::atomic<uint32_t> claimed{0};   // the last generation whose share was claimed
    std::atomic<uint32_t> finished{0};  // the last generation its worker finished
  };

  // Whether this thread claimed generation g of the slot (no one had g or later).
  static bool claim(Slot& slot, uint32_t g);

  int n_threads_;
  std::vector<Slot> slots_;  // by thread index; slot 0 (the caller's) unused
  std::vector<std::thread> workers_;
  RawFn fn_ = nullptr;
  void* ctx_ = nullptr;
  std::atomic<uint32_t> generation_{0};
  std::atomic<bool> stop_{false};
  double* wait_total_ = nullptr;
};

}  // namespace tps
