// The environment's kernel choices (TPS_ISA, TPS_FLOAT_MATH) are checked before any
// command runs: a bad one is a one-line error and exit 2 in every command. `tps run`
// once aborted (exit 134) on a bad TPS_ISA, read first on a worker thread.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/thread_pool.h"
#include "model/synth.h"

#include "support/test_files.h"

namespace tps {
namespace {

TEST(KernelEnvironment, ABadChoiceIsAOneLineErrorInEveryCommand) {
  const std::string model = test::temp_path("kernel_env.gguf"), err = test::temp_path("kernel_env.err");
  ThreadPool pool(2);
  synthesize_model({*find_model_preset("stories260k"), *parse_weight_scheme("q8_0"), 1, ""}, model, pool);
  const std::pair<std::string, std::string> bad[] = {
      {"TPS_ISA=avx9", "tps: error: TPS_ISA=avx9 is not one of scalar, avx2, avx_vnni, avx512, amx\n"},
      {"TPS_FLOAT_MATH=f64", "tps: error: TPS_FLOAT_MATH=f64 is not one of f32, bf16\n"}};
  for (const std::string& command : {"run -m " + model + " -n 2 -p hi", std::string("synth --list")})
    for (const auto& [env, line] : bad) {
      const std::string cmd = env + " " + TPS_BINARY + " " + command + " >/dev/null 2>" + err;
      EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2) << cmd;
      EXPECT_EQ(test::read_text(err), line) << cmd;
    }
}

}  // namespace
}  // namespace tps
