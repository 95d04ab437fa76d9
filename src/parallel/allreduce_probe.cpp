#include "parallel/allreduce_probe.h"

#include <algorithm>

#include "core/timer.h"

namespace tps {

std::vector<AllreduceSample> time_allreduce(TensorParallelGroup& group) {
  std::vector<AllreduceSample> samples;
  for (int64_t bytes = 4; bytes <= (int64_t{4} << 20); bytes *= 4) {
    std::vector<float> data(static_cast<size_t>(bytes / 4), 1.0f);
    // About 8 MiB moved per size, and never fewer than 20 calls: a few ms each.
    const int calls = static_cast<int>(std::clamp<int64_t>((int64_t{8} << 20) / bytes, 20, 2000));
    for (int i = 0; i < 5; ++i) group.sum(data.data(), data.size());  // warm-up: connections, buffers
    std::vector<double> times;
    for (int i = 0; i < calls; ++i) {
      const double start = now_seconds();
      group.sum(data.data(), data.size());
      times.push_back(now_seconds() - start);
    }
    std::nth_element(times.begin(), times.begin() + calls / 2, times.end());
    samples.push_back({bytes, times[calls / 2]});
  }
  return samples;
}

}  // namespace tps
