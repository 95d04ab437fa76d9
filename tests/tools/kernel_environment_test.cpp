// The kernel choices (TPS_ISA, TPS_FLOAT_MATH, or the flags --isa, --float-math) are
// checked before any command runs: a bad one is a one-line error and exit 2 in every command. `tps run`
// once aborted (exit 134) on a bad TPS_ISA, read first on a worker thread.
#include <gtest/gtest.h>

#include <algorithm>
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

// --isa and --float-math, before or after the command, choose as the variables do;
// a bad value is a one-line error too.
TEST(KernelEnvironment, FlagsChooseAsTheVariablesDo) {
  const std::string model = test::temp_path("kernel_flags.gguf"), out = test::temp_path("kernel_flags.out");
  ThreadPool pool(2);
  synthesize_model({*find_model_preset("stories260k"), *parse_weight_scheme("q8_0"), 1, ""}, model, pool);
  const std::string bench = "bench -m " + model + " -p 8 -n 0 -r 1";
  for (const auto& [args, kernels] :
       {std::pair{"--isa avx2 " + bench, "kernels: avx2"}, std::pair{bench + " --isa scalar", "kernels: scalar"}}) {
    const std::string cmd = std::string(TPS_BINARY) + " " + args + " >" + out + " 2>&1";
    ASSERT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 0) << cmd << "\n" << test::read_text(out);
    EXPECT_NE(test::read_text(out).find(kernels), std::string::npos) << cmd << "\n" << test::read_text(out);
  }
  for (const std::string bad : {"--isa avx9", "--float-math f64"}) {
    const std::string cmd = std::string(TPS_BINARY) + " " + bench + " " + bad + " >/dev/null 2>" + out;
    EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2) << cmd;
    const std::string line = test::read_text(out);
    EXPECT_EQ(line.rfind("tps: error: ", 0), 0u) << line;
    EXPECT_EQ(std::count(line.begin(), line.end(), '\n'), 1) << line;
  }
}

}  // namespace
}  // namespace tps
