#pragma once
// Each src/cli/*.cpp adds one subcommand of `tps` through a static CommandRegistration,
// so adding a command touches no shared list.
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

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

}  // namespace tps::cli
