#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <thread>
#include <utility>
#include <vector>

namespace tps {

TEST(ThreadPool, ParallelForCoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 5}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 7, 64, 1000}) {
      std::vector<int> hits(n, 0);
      pool.parallel_for(n, 4, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) hits[i]++;
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(hits[i], 1) << "n=" << n << " i=" << i;
    }
  }
}

// The ranges a parallel-for hands out, in the order they were taken.
template <typename Split>
std::vector<std::pair<int64_t, int64_t>> ranges_of(int64_t n, Split&& split) {
  std::mutex mu;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  split(n, [&](int64_t b, int64_t e, int) {
    std::lock_guard<std::mutex> lock(mu);
    ranges.emplace_back(b, e);
  });
  return ranges;
}

void expect_exact_cover(std::vector<std::pair<int64_t, int64_t>> ranges, int64_t n) {
  std::sort(ranges.begin(), ranges.end());
  int64_t at = 0;
  for (auto [b, e] : ranges) {
    EXPECT_EQ(b, at) << "gap or overlap before " << b << " of " << n;
    EXPECT_LT(b, e);
    at = e;
  }
  EXPECT_EQ(at, n);
}

TEST(ThreadPool, DynamicAndGuidedSplitsCoverEveryIndexOnce) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 128, 2000}) {
      for (int round = 0; round < 20; ++round) {
        expect_exact_cover(ranges_of(n, [&](int64_t m, auto fn) { pool.parallel_for_dynamic(m, 3, fn); }), n);
        expect_exact_cover(ranges_of(n, [&](int64_t m, auto fn) { pool.parallel_for_guided(m, 2, fn); }), n);
      }
    }
  }
}

// Guided ranges start long (a share of what is left) and never fall below the minimum
// but at the very end.
TEST(ThreadPool, GuidedRangesShrinkFromAShareOfTheWork) {
  ThreadPool pool(2);
  const int64_t n = 1000, min_grain = 4;
  auto ranges = ranges_of(n, [&](int64_t m, auto fn) { pool.parallel_for_guided(m, min_grain, fn); });
  std::sort(ranges.begin(), ranges.end());
  EXPECT_EQ(ranges.front(), std::make_pair(int64_t{0}, n / 4));
  for (size_t i = 0; i + 1 < ranges.size(); ++i) EXPECT_GE(ranges[i].second - ranges[i].first, min_grain);
  EXPECT_LT(ranges.size(), 40u);
}

TEST(ThreadPool, RunGivesEveryThreadItsIndexAndManyRoundsComplete) {
  ThreadPool pool(3);
  std::vector<long> sums(3, 0);
  for (int round = 0; round < 2000; ++round)
    pool.run([&](int ti, int nt) {
      EXPECT_EQ(nt, 3);
      sums[ti] += ti + 1;
    });
  EXPECT_EQ(sums[0], 2000);
  EXPECT_EQ(sums[1], 4000);
  EXPECT_EQ(sums[2], 6000);
}

TEST(ThreadPool, EveryShareRunsOnceWhetherItsWorkerIsAwakeOrAsleep) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> runs(3);
  for (int round = 0; round < 40; ++round) {
    // Every few rounds the workers have gone to sleep (a futex wait) in between, and the
    // caller may run their shares itself.
    if (round % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    for (auto& r : runs) r = 0;
    pool.parallel_for(3, 1, [&](int64_t b, int64_t e, int) {
      for (int64_t i = b; i < e; ++i) ++runs[static_cast<size_t>(i)];
    });
    for (int i = 0; i < 3; ++i) EXPECT_EQ(runs[static_cast<size_t>(i)], 1) << "round " << round << " share " << i;
  }
}

TEST(ThreadPool, RunGivesEachShareItsOwnThreadEvenAfterTheWorkersSlept) {
  ThreadPool pool(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  std::thread::id ids[2];
  pool.run([&](int ti, int) { ids[ti] = std::this_thread::get_id(); });
  EXPECT_NE(ids[0], ids[1]) << "the probe's reads need the threads at once";
}

TEST(ThreadPool, CountsTheCallersWaitsWhileAsked) {
  ThreadPool pool(2);
  double waited = 0;
  pool.count_waits(&waited);
  pool.run([](int thread, int) {
    if (thread == 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  EXPECT_GE(waited, 0.019) << "the caller returned at once and waited for the sleeping worker";
  pool.count_waits(nullptr);
  const double before = waited;
  pool.run([](int thread, int) {
    if (thread == 1) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  EXPECT_EQ(waited, before);
}

}  // namespace tps
