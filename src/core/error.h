#pragma once
// Errors caused by user input (files, flags, requests). The CLI prints the message on
// one line and exits with code 2; the server turns it into a 4xx JSON error.
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace tps {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace tps
