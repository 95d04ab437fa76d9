#include "loadgen/prometheus_text.h"

#include <cstdlib>
#include <string>

namespace tps::loadgen {

nlohmann::json parse_prometheus_text(std::string_view text) {
  nlohmann::json out = nlohmann::json::object();
  while (!text.empty()) {
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (line.empty() || line.front() == '#') continue;
    // The value follows the series name and its optional {labels}, which may hold spaces.
    size_t name_end = line.find('{') != std::string_view::npos ? line.find('}') : line.find(' ');
    if (name_end == std::string_view::npos) continue;
    size_t value_start = line.find_first_not_of(' ', line.find(' ', name_end));
    if (value_start == std::string_view::npos) continue;
    std::string value(line.substr(value_start, line.find(' ', value_start) - value_start));
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str()) continue;
    std::string series(line.substr(0, line.find(' ', name_end)));
    out[series] = v;
  }
  return out;
}

nlohmann::json prometheus_delta(const nlohmann::json& before, const nlohmann::json& after) {
  nlohmann::json out = nlohmann::json::object();
  if (!before.is_object() || !after.is_object()) return out;
  for (const auto& [series, value] : after.items())
    if (auto it = before.find(series); it != before.end() && it->is_number() && value.is_number())
      out[series] = value.get<double>() - it->get<double>();
  return out;
}

}  // namespace tps::loadgen
