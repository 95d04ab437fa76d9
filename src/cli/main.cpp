#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/command.h"
#include "cli/model_session.h"
#include "core/error.h"
#include "kernels/matmul.h"

namespace tps::cli {

std::vector<CommandInfo>& command_registry() {
  static std::vector<CommandInfo> registry;
  return registry;
}

}  // namespace tps::cli

int main(int argc, char** argv) {
  using namespace tps::cli;
  CLI::App app{"tps: an LLM inference engine and tokens-per-second lab"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tps 0.1.0");
  // A bad flag is one line, as every other error: what was wrong and what was expected.
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return fmt::format("tps: error: {}\n", e.what()); });
  // The kernel choices every command shares; the flags stand for the environment
  // variables, which the kernels read once, so they are set before anything reads them.
  std::string isa, float_math;
  std::vector<std::string> isa_names, float_math_names;
  for (int i = 0; i < tps::kIsaCount; ++i) isa_names.push_back(tps::isa_name(static_cast<tps::Isa>(i)));
  for (auto m : {tps::FloatMath::kF32, tps::FloatMath::kBf16}) float_math_names.push_back(tps::float_math_name(m));
  app.add_option("--isa", isa, "cap the kernels' instruction set, as TPS_ISA does")->check(CLI::IsMember(isa_names));
  app.add_option("--float-math", float_math, "f32 (exact, the default) or bf16 for F32/F16/BF16 weights, as "
                                             "TPS_FLOAT_MATH does (bf16 needs AVX512-BF16)")
      ->check(CLI::IsMember(float_math_names));
  auto commands = command_registry();
  std::sort(commands.begin(), commands.end(),
            [](const CommandInfo& a, const CommandInfo& b) { return a.name < b.name; });
  std::map<CLI::App*, std::function<int()>> actions;
  for (auto& c : commands) {
    CLI::App* sub = app.add_subcommand(c.name, c.description);
    sub->fallthrough();  // `tps bench --float-math bf16 ...` as well as `tps --float-math bf16 bench ...`
    actions[sub] = c.setup(*sub);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (!isa.empty()) setenv("TPS_ISA", isa.c_str(), 1);
  if (!float_math.empty()) setenv("TPS_FLOAT_MATH", float_math.c_str(), 1);
  try {
    // The environment's choices (TPS_ISA, TPS_FLOAT_MATH), checked here, where a bad one
    // is a one-line error, not later on a worker thread.
    (void)tps::active_isa();
    (void)tps::active_float_math();
    tps::prepare_kernels();  // before any thread starts: AMX's checks fork a child
    for (auto& [sub, action] : actions)
      if (sub->parsed()) return action();
  } catch (const QuietExit& e) {
    return e.code;
  } catch (const tps::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "tps: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "tps: error: out of memory\n");
    return 2;
  }
  return 2;
}
