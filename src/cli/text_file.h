#pragma once
// A text file's whole contents, for the commands that take a prompt or a text from one.
#include <string>

namespace tps::cli {

// Throws tps::Error naming the file when it cannot be read.
std::string read_text_file(const std::string& path);

}  // namespace tps::cli
