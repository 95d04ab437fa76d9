#pragma once
// Files of web/ compiled into the binary at build time (cmake/embed_files.cmake), so
// pages need no network and no files at run time.
#include <string_view>

namespace tps::web_assets {

extern const std::string_view kUplotJs;     // uPlot from npm (web/package-lock.json)
extern const std::string_view kUplotCss;
extern const std::string_view kMarkedJs;    // marked from npm: the chat's Markdown
extern const std::string_view kPurifyJs;    // DOMPurify from npm: sanitizes marked's HTML
extern const std::string_view kReportHtml;  // web/report.html: `tps load --html`'s page, with placeholders
extern const std::string_view kReportJs;    // web/report.js: draws the charts
extern const std::string_view kAppHtml;     // web/app.html: the page `tps serve` answers at /
extern const std::string_view kAppCss;      // web/app.css
extern const std::string_view kAppJs;       // web/app.js: the chat and live tabs

}  // namespace tps::web_assets
