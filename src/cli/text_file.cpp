#include "cli/text_file.h"

#include <fstream>
#include <sstream>

#include "core/error.h"

namespace tps::cli {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open the file '{}'", path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tps::cli
