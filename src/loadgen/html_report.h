#pragma once
// `tps load --html`: one self-contained page (chart library, data and code inline) with
// throughput and latency against the sweep, TTFT and ITL distributions and a timeline
// of token arrivals per request. Needs no network and no files to view.
#include <string>

#include <nlohmann/json.hpp>

namespace tps::loadgen {

// Renders the page from a results document (the JSON `tps load -o` writes).
std::string render_html_report(const nlohmann::json& results);

}  // namespace tps::loadgen
