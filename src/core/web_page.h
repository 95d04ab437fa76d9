#pragma once
// Fills a page template's placeholders (comments such as /*TPS_UPLOT_JS*/) with
// embedded files or data.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tps {

// Replaces each placeholder, in the order given, at its first occurrence after the
// previous one's value, so inserted text is never searched; fails when one is missing.
std::string fill_page(std::string_view page, const std::vector<std::pair<std::string_view, std::string_view>>& values);

}  // namespace tps
