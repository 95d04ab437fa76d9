#pragma once
// Files of web/ compiled into the binary at build time (cmake/embed_files.cmake), so
// reports need no network and no files at run time.
#include <string_view>

namespace tps::loadgen::web_assets {

extern const std::string_view kUplotJs;     // uPlot from npm (web/package-lock.json)
extern const std::string_view kUplotCss;
extern const std::string_view kReportHtml;  // web/report.html: the page, with placeholders
extern const std::string_view kReportJs;    // web/report.js: draws the charts

}  // namespace tps::loadgen::web_assets
