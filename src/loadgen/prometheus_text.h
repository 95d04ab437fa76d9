#pragma once
// Reads the Prometheus text format servers expose at /metrics (vLLM, llama-server,
// SGLang, tps serve), so a run can save what the server itself counted.
#include <string_view>

#include <nlohmann/json.hpp>

namespace tps::loadgen {

// {"series{labels}": value, ...}; comments and lines that do not parse are skipped.
nlohmann::json parse_prometheus_text(std::string_view text);

// after - before for every series in both (counters and histograms grow during a run).
nlohmann::json prometheus_delta(const nlohmann::json& before, const nlohmann::json& after);

}  // namespace tps::loadgen
