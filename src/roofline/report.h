#pragma once
// `tps roofline` output: every figure of one configuration as JSON (the --json output and
// the single source the table and the SVG chart are drawn from).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "roofline/estimator.h"

namespace tps {

struct Workload {
  std::vector<int64_t> batches = {1, 8, 64};
  int64_t prompt = 1024;
  int64_t output = 256;
  int64_t context = 0;  // for memory sizing; 0: prompt + output
};

struct SpeculativeSetup {
  std::string draft_name;
  std::optional<Estimator> draft;  // its step time gives the cost ratio c
  double cost_ratio = 0;           // c given directly (used when > 0)
  int k = 4;
  double alpha = 0.7;
  double verify_cost_ratio = 1.0;  // target step of k + 1 tokens over one of 1
};

nlohmann::json roofline_report(const Estimator& est, const Workload& w,
                               const std::optional<SpeculativeSetup>& spec,
                               const std::vector<std::string>& weight_types,
                               const std::vector<std::string>& kv_types);
std::string render_report_table(const nlohmann::json& report);
std::string render_roofline_svg(const nlohmann::json& report);

nlohmann::json hardware_to_json(const Hardware& h);
std::string render_hardware_list();

}  // namespace tps
