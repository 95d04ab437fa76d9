#include "parallel/allreduce_probe.h"

#include <algorithm>

#include "core/timer.h"

namespace tps {

namespace {

double median(std::vector<double> times) {
  const auto mid = times.begin() + static_cast<std::ptrdiff_t>(times.size() / 2);
  std::nth_element(times.begin(), mid, times.end());
  return *mid;
}

// Busy until `seconds` after `from`: the rank computes, as between a layer's two sums.
void compute_until(double from, double seconds) {
  while (now_seconds() - from < seconds) {
  }
}

}  // namespace

std::vector<AllreduceSample> time_allreduce(TensorParallelGroup& group) {
  // A forward pass's sums are spaced by compute, so each finds the link idle. Sums back
  // to back measure a link's sustained rate instead: behind a rate limiter with a burst
  // allowance (tc tbf, a switch's buffer), an 8 KiB sum took 67 us back to back and
  // 26 us after 50 us of compute. So each size is timed twice: back to back, to learn
  // how long the sum keeps the link busy, then each call after the ranks compute at
  // least that long (and at least kMinGap), and the latter is the sample.
  constexpr double kMinGap = 50e-6;
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
    // Every rank waits the same gap, the ranks' mean, so neither arrives with the other still
    // finishing the last sum (they enter within about one sum's skew, not together).
    float gap = static_cast<float>(median(times));
    group.sum(&gap, 1);
    gap = std::max(gap / static_cast<float>(group.ranks()), static_cast<float>(kMinGap));
    times.clear();
    double end = now_seconds();
    for (int i = 0; i < calls; ++i) {
      compute_until(end, gap);
      const double start = now_seconds();
      group.sum(data.data(), data.size());
      end = now_seconds();
      times.push_back(end - start);
    }
    samples.push_back({bytes, median(times)});
  }
  return samples;
}

}  // namespace tps
