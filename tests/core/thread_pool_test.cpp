#include "core/thread_pool.h"

#include <gtest/gtest.h>

#include <numeric>
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

}  // namespace tps
