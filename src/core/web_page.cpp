#include "core/web_page.h"

#include "core/error.h"

namespace tps {

std::string fill_page(std::string_view page, const std::vector<std::pair<std::string_view, std::string_view>>& values) {
  std::string out(page);
  size_t from = 0;
  for (const auto& [placeholder, value] : values) {
    size_t at = out.find(placeholder, from);
    if (at == std::string::npos) fail("page template lacks {}", placeholder);
    out.replace(at, placeholder.size(), value);
    from = at + value.size();
  }
  return out;
}

}  // namespace tps
