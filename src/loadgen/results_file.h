#pragma once
// The results file of `tps load -o`: every setting, the environment, the workload, the
// server's /metrics before and after, the summary and every request's raw timings.
// `tps compare` and the HTML report read it back.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/load_runner.h"
#include "loadgen/workload.h"

namespace tps::loadgen {

nlohmann::json record_to_json(const RequestRecord& r);
RequestRecord record_from_json(const nlohmann::json& j);

nlohmann::json settings_to_json(const RunSettings& s);

// What a reader needs to trust the numbers: client host, OS, tool version, start time.
nlohmann::json environment_json();

nlohmann::json results_to_json(const RunSettings& settings, const Workload& workload,
                               const RunResult& result, const nlohmann::json& environment);

// Reads a results file; fails with a message naming the file when it is not one.
nlohmann::json read_results_file(const std::string& path);
void write_text_file(const std::string& path, const std::string& text);

}  // namespace tps::loadgen
