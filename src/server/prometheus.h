#pragma once
// Prometheus text exposition (version 0.0.4) of counters, gauges and histograms.
#include <cstdint>
#include <string>
#include <vector>

namespace tps {

class PromHistogram {
 public:
  explicit PromHistogram(std::vector<double> upper_bounds);
  void observe(double value);
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> buckets_;  // non-cumulative; rendered cumulatively
  uint64_t count_ = 0;
  double sum_ = 0;
};

// Bounds growing by `factor` from `start`: the usual latency buckets.
std::vector<double> exponential_buckets(double start, double factor, int count);

void prom_counter(std::string& out, const std::string& name, const std::string& help, double value);
void prom_gauge(std::string& out, const std::string& name, const std::string& help, double value);
// A metric with one label dimension: values[i] is labelled `label`=label_values[i].
void prom_labelled(std::string& out, const std::string& name, const std::string& type, const std::string& help,
                   const std::string& label, const std::vector<std::string>& label_values,
                   const std::vector<double>& values);

}  // namespace tps
