#include "server/prometheus.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tps {

static std::string number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  return fmt::format("{}", v);
}

PromHistogram::PromHistogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), buckets_(bounds_.size() + 1, 0) {}

void PromHistogram::observe(double value) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  buckets_[i]++;
  count_++;
  sum_ += value;
}

void PromHistogram::render(std::string& out, const std::string& name, const std::string& help) const {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += buckets_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, number(bounds_[i]), cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name, number(sum_), name,
                     count_);
}

std::vector<double> exponential_buckets(double start, double factor, int count) {
  std::vector<double> b;
  for (int i = 0; i < count; ++i, start *= factor) b.push_back(start);
  return b;
}

void prom_counter(std::string& out, const std::string& name, const std::string& help, double value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} counter\n{} {}\n", name, help, name, name, number(value));
}

void prom_gauge(std::string& out, const std::string& name, const std::string& help, double value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} gauge\n{} {}\n", name, help, name, name, number(value));
}

void prom_labelled(std::string& out, const std::string& name, const std::string& type, const std::string& help,
                   const std::string& label, const std::vector<std::string>& label_values,
                   const std::vector<double>& values) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
  for (size_t i = 0; i < values.size(); ++i)
    out += fmt::format("{}{{{}=\"{}\"}} {}\n", name, label, label_values[i], number(values[i]));
}

}  // namespace tps
