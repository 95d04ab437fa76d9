#pragma once
// The micro-benchmarks' thread pool: 2 threads, as the bars are set; TPS_THREADS
// overrides (e.g. 1 on a busy machine).
#include <cstdlib>

#include "core/thread_pool.h"

namespace tps {

inline ThreadPool& bench_pool() {
  static ThreadPool p(std::getenv("TPS_THREADS") != nullptr ? std::atoi(std::getenv("TPS_THREADS")) : 2);
  return p;
}

}  // namespace tps
