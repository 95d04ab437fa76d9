// One engine under every command: the same prompt at temperature 0 gives the same
// tokens through `tps run`, through /v1/completions on `tps serve`, and as each of 8
// identical sequences batched together, on every ISA path this CPU runs.
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <latch>
#include <optional>
#include <thread>

#include "kernels/matmul.h"
#include "serve_helpers.h"

namespace tps {
namespace {

using testing::json;
using testing::server_fixture;

struct SameTokensCase {
  std::string model;  // fixture path
  Isa isa;
  FloatMath math = FloatMath::kF32;
};

std::vector<SameTokensCase> same_tokens_cases() {
  std::vector<SameTokensCase> cases;
  for (const char* model : {testing::kStories, "models/synthetic/llama-gqa-q4_k.gguf"})
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512, Isa::kAmx})
      if (cpu_supports(isa)) cases.push_back({model, isa});
  // The opt-in bf16 float math on float models (F32, F16): its own numerics, as
  // independent of the command and the batch as the default's.
  if (cpu_has_avx512_bf16())
    for (const char* model : {testing::kStories, "models/synthetic/llama-gqa-f16.gguf"})
      cases.push_back({model, Isa::kAvx512, FloatMath::kBf16});
  return cases;
}

// The token ids of a completion asked with logprobs named as ids.
std::vector<int32_t> completion_ids(const testing::Reply& r) {
  std::vector<int32_t> ids;
  if (r.status != 200) {
    ADD_FAILURE() << r.status << " " << r.raw;
    return ids;
  }
  for (const auto& t : r.body["choices"][0]["logprobs"]["tokens"]) {
    const std::string s = t.get<std::string>();
    EXPECT_EQ(s.rfind("token_id:", 0), 0u) << s;
    ids.push_back(std::stoi(s.substr(9)));
  }
  return ids;
}

// Sets an environment variable for the child processes a test starts, and restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

class SameTokens : public ::testing::TestWithParam<SameTokensCase> {};

TEST_P(SameTokens, ThroughRunServeAndABatchOfEight) {
  const SameTokensCase& c = GetParam();
  REQUIRE_MODEL(model, c.model);
  ScopedEnv isa("TPS_ISA", isa_name(c.isa));
  ScopedEnv math("TPS_FLOAT_MATH", float_math_name(c.math));
  const std::string prompt = "Once upon a time, there was a little girl named Lily. She loved to play outside";
  // Long enough that the 8 requests overlap however the handler threads are scheduled:
  // a tiny model makes 24 tokens in about a millisecond, and under CI's load 8 such
  // requests once took 101 steps, nearly one after another.
  constexpr int kTokens = 96;

  const json run = testing::run_json(std::string(TPS_BINARY) + " run -m " + model + " -p '" + prompt + "' -n " +
                                     std::to_string(kTokens) + " --temp 0 --ignore-eos --json -t 1 2>/dev/null");
  ASSERT_TRUE(run.is_object()) << "tps run gave no JSON";
  const auto expected = run["tokens"].get<std::vector<int32_t>>();
  ASSERT_EQ(expected.size(), static_cast<size_t>(kTokens));

  testing::ServeProcess server;
  ASSERT_EQ(server.start(model, {"--max-seqs", "8"}), "");
  const json body = {{"prompt", prompt},           {"max_tokens", kTokens}, {"temperature", 0},
                     {"ignore_eos", true},         {"logprobs", 0},         {"return_tokens_as_token_ids", true}};
  EXPECT_EQ(completion_ids(testing::post(*server.client(), "/v1/completions", body)), expected) << "alone";

  const double steps_before = testing::get_metrics(*server.client()).at("tps_steps_total");
  // The 8 requests must meet in the server: on a fast machine one alone takes under a
  // millisecond, less than starting a thread, and on a loaded one the clients' threads
  // may run far apart. So the server is paused while they connect and send (the kernel
  // queues both), and finds them all when it resumes.
  ASSERT_EQ(kill(server.pid(), SIGSTOP), 0);
  std::vector<std::future<testing::Reply>> batch;
  std::latch start(9);
  for (int i = 0; i < 8; ++i)
    batch.push_back(std::async(std::launch::async, [&] {
      auto client = server.client();
      start.arrive_and_wait();
      return testing::post(*client, "/v1/completions", body);
    }));
  start.arrive_and_wait();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(kill(server.pid(), SIGCONT), 0);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(completion_ids(batch[i].get()), expected) << "sequence " << i << " of 8";
  // Alone, 8 requests take at least 8 x 24 steps; batched, about 24 and a few prefills.
  const double steps = testing::get_metrics(*server.client()).at("tps_steps_total") - steps_before;
  EXPECT_LT(steps, 8 * kTokens / 2) << "the 8 requests hardly shared steps";
}

INSTANTIATE_TEST_SUITE_P(ModelsAndPaths, SameTokens, ::testing::ValuesIn(same_tokens_cases()),
                         [](const auto& info) {
                           std::string name = std::filesystem::path(info.param.model).stem().string() + "_" +
                                              isa_name(info.param.isa);
                           if (info.param.math != FloatMath::kF32) name += std::string("_") + float_math_name(info.param.math);
                           for (char& ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

}  // namespace
}  // namespace tps
