#include "loadgen/html_report.h"

#include "core/web_assets.h"
#include "core/web_page.h"

namespace tps::loadgen {

std::string render_html_report(const nlohmann::json& results) {
  // Inside <script> the data must not contain "</script>" or "<!--": every '<' in JSON
  // sits in a string, where the escape \u003c reads back as the same character.
  std::string data;
  for (char c : results.dump()) {
    if (c == '<') data += "\\u003c";
    else data += c;
  }
  return fill_page(web_assets::kReportHtml, {{"/*TPS_UPLOT_CSS*/", web_assets::kUplotCss},
                                             {"/*TPS_UPLOT_JS*/", web_assets::kUplotJs},
                                             {"/*TPS_DATA*/", data},
                                             {"/*TPS_REPORT_JS*/", web_assets::kReportJs}});
}

}  // namespace tps::loadgen
