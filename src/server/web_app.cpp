#include "server/web_app.h"

#include <string>

#include "core/web_assets.h"
#include "core/web_page.h"

namespace tps {

void serve_web_app(httplib::Response& res) {
  static const std::string page = fill_page(web_assets::kAppHtml, {{"/*TPS_UPLOT_CSS*/", web_assets::kUplotCss},
                                                                   {"/*TPS_APP_CSS*/", web_assets::kAppCss},
                                                                   {"/*TPS_UPLOT_JS*/", web_assets::kUplotJs},
                                                                   {"/*TPS_MARKED_JS*/", web_assets::kMarkedJs},
                                                                   {"/*TPS_PURIFY_JS*/", web_assets::kPurifyJs},
                                                                   {"/*TPS_APP_JS*/", web_assets::kAppJs}});
  // Everything is inline and the page only talks to this server.
  res.set_header("Content-Security-Policy",
                 "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_content(page, "text/html; charset=utf-8");
}

}  // namespace tps
