#pragma once
// Each src/cli/*.cpp adds one subcommand of `tps` through a static CommandRegistration,
// so adding a command touches no shared list.
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace tps::cli {

// Sets up the subcommand's options and returns the action to run when it is chosen.
// The action returns the process exit code; a tps::Error it throws exits with 2.
using CommandSetup = std::function<std::function<int()>(CLI::App& sub)>;

struct CommandInfo {
  std::string name;
  std::string description;
  CommandSetup setup;
};

std::vector<CommandInfo>& command_registry();

struct CommandRegistration {
  CommandRegistration(std::string name, std::string description, CommandSetup setup) {
    command_registry().push_back({std::move(name), std::move(description), std::move(setup)});
  }
};

// CLI11's Range, with the bounds written as a person would (CLI11 prints doubles with
// six decimals): "--port: Value 70000 not in range 0 to 65535".
template <typename T>
CLI::Validator in_range(T lo, T hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        T value{};
        if (CLI::detail::lexical_cast(text, value) && value >= lo && value <= hi) return "";
        return fmt::format("Value {} not in range {} to {}", text, lo, hi);
      },
      fmt::format("{} to {}", lo, hi));
}

// An option whose value must lie in [lo, hi]; its default is shown in --help.
template <typename T, typename Bound>
CLI::Option* add_ranged_option(CLI::App& app, const std::string& flag, T& value, const std::string& help, Bound lo,
                               Bound hi) {
  return app.add_option(flag, value, help)->capture_default_str()->check(in_range(lo, hi));
}

}  // namespace tps::cli
