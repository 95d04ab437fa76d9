// `tps compare a.json b.json ...`: load-test results side by side, with noise.
#include <iostream>

#include "cli/command.h"
#include "core/error.h"
#include "loadgen/compare.h"
#include "loadgen/results_file.h"

namespace tps::cli {
namespace {

const CommandRegistration kRegistration{
    "compare", "compare `tps load -o` results: change per metric and whether it beats run-to-run noise",
    [](CLI::App& app) -> std::function<int()> {
      auto files = std::make_shared<std::vector<std::string>>();
      app.add_option("results", *files, "results files of `tps load -o`; the first is the baseline")
          ->required()
          ->expected(2, -1);
      return [files] {
        std::vector<nlohmann::json> runs;
        for (const auto& f : *files) runs.push_back(loadgen::read_results_file(f));
        std::cout << loadgen::compare_results(runs, *files);
        return 0;
      };
    }};

}  // namespace
}  // namespace tps::cli
