// The log-probabilities the engine reports (and the server returns) are log_softmax of
// the model's raw logits, computed here independently in double precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/timer.h"
#include "engine/engine.h"
#include "engine/model_runner.h"
#include "../model/test_fixtures.h"

namespace tps {
namespace {

std::vector<double> log_softmax(const std::vector<float>& logits) {
  const double max = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(l - max);
  std::vector<double> out;
  for (float l : logits) out.push_back(l - max - std::log(sum));
  return out;
}

TEST(Logprobs, AreLogSoftmaxOfTheRawLogits) {
  TPS_REQUIRE_FIXTURE(path, "models/stories260K.gguf");
  auto model = Model::load(path);
  ModelRunner runner(*model, plan_kv_geometry(model->config(), {0, 0, 16, 1}, nullptr), 1);
  Engine engine(runner, EngineConfig{});
  GenerationRequest r;
  r.prompt = {1, 403, 407};
  r.sampling.temperature = 0.8f;  // sampled tokens need not be the top one
  r.sampling.seed = 7;
  r.max_tokens = 16;
  r.ignore_eos = true;
  r.top_logprobs = 4;
  std::vector<std::vector<float>> raw;
  r.on_logits = [&](std::span<const float> l) { raw.emplace_back(l.begin(), l.end()); };
  auto stream = engine.submit(r);
  std::vector<GeneratedToken> got;
  while (!stream->finished()) stream->wait(got, now_seconds() + 30);
  ASSERT_EQ(got.size(), 16u);
  ASSERT_EQ(raw.size(), got.size());
  int not_top = 0;
  for (size_t s = 0; s < got.size(); ++s) {
    const std::vector<double> want = log_softmax(raw[s]);
    EXPECT_NEAR(got[s].logprob, want[got[s].id], 1e-4) << "step " << s;
    ASSERT_EQ(got[s].top.size(), 4u);
    std::vector<int32_t> order(want.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
    std::partial_sort(order.begin(), order.begin() + 4, order.end(), [&](int32_t a, int32_t b) { return want[a] > want[b]; });
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(got[s].top[k].first, order[k]) << "step " << s << " rank " << k;
      EXPECT_NEAR(got[s].top[k].second, want[order[k]], 1e-4) << "step " << s << " rank " << k;
    }
    not_top += got[s].id != order[0];
  }
  EXPECT_GT(not_top, 0) << "every sampled token was the top one: the check of the chosen token proves little";
}

}  // namespace
}  // namespace tps
