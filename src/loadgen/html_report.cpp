#include "loadgen/html_report.h"

#include "core/error.h"
#include "loadgen/web_assets.h"

namespace tps::loadgen {
namespace {

// Replaces the first placeholder at or after `from`; returns where the inserted value ends,
// so inserted text is never searched for the next placeholder.
size_t replace_after(std::string& page, size_t from, std::string_view placeholder, std::string_view value) {
  size_t at = page.find(placeholder, from);
  if (at == std::string::npos) fail("report template lacks {}", placeholder);
  page.replace(at, placeholder.size(), value);
  return at + value.size();
}

}  // namespace

std::string render_html_report(const nlohmann::json& results) {
  // Inside <script> the data must not contain "</script>" or "<!--": every '<' in JSON
  // sits in a string, where the escape \u003c reads back as the same character.
  std::string data;
  for (char c : results.dump()) {
    if (c == '<') data += "\\u003c";
    else data += c;
  }
  std::string page(web_assets::kReportHtml);
  size_t at = replace_after(page, 0, "/*TPS_UPLOT_CSS*/", web_assets::kUplotCss);
  at = replace_after(page, at, "/*TPS_UPLOT_JS*/", web_assets::kUplotJs);
  at = replace_after(page, at, "/*TPS_DATA*/", data);
  replace_after(page, at, "/*TPS_REPORT_JS*/", web_assets::kReportJs);
  return page;
}

}  // namespace tps::loadgen
