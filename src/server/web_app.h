#pragma once
// The page `tps serve` answers at /: a chat tab and a live tab of charts fed by
// /v1/stats/stream, one self-contained HTML file (web/app.*, uPlot) built into the binary.
#include <httplib.h>

namespace tps {

void serve_web_app(httplib::Response& res);

}  // namespace tps
