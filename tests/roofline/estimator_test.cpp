#include "roofline/estimator.h"

#include <gtest/gtest.h>

#include "core/error.h"

namespace tps {

namespace {

// Roofs at their peaks, no fixed costs: the pure roofline.
Efficiency ideal() {
  Efficiency e;
  e.bandwidth = 1;
  e.compute = 1;
  e.layer_latency = 0;
  e.memory_usable = 1;
  return e;
}

Hardware two_tb_part() {
  Hardware h;
  h.id = "test-2tbs";
  h.kind = "gpu";
  h.memory_bytes = 80e9;
  h.bandwidth = 2e12;
  h.peaks = {{"f16", 1e18}, {"f32", 1e18}};
  return h;
}

}  // namespace

TEST(Estimator, DecodeBoundOf7BFp16OnA2TBsPart) {
  // Llama-2-7B: 6,738,415,616 parameters, less the embedding table (32000 x 4096, not read
  // per token) and the norms (kept f32): 6,607,077,376 matrix weights x 2 bytes
  // + 266,240 norm values x 4 bytes = 13,215,219,712 bytes per token -> 151.34 tokens/s.
  Estimator est(find_roofline_preset("llama-2-7b"), two_tb_part(), make_deployment("f16", "f16", 1, 1), ideal());
  PassCost c = est.decode_cost(1, 0);
  EXPECT_DOUBLE_EQ(c.bytes(), 13215219712.0 + 524288.0);  // + the new token's K and V
  EXPECT_NEAR(1 / est.decode_step_seconds(1, 0), 151.34, 0.01);
  EXPECT_EQ(est.time(c).bound, "memory");
}

// Four prompts of 300 tokens laid end to end in passes of 512 rows: [0 0-299, 1 0-211],
// [1 212-299, 2 0-299, 3 0-123], [3 124-299].
TEST(Estimator, PrefillPassesPackPromptsIntoTheTokenBudget) {
  Estimator est(find_roofline_preset("llama-2-7b"), two_tb_part(), make_deployment("f16", "f16", 1, 1), ideal());
  const std::vector<PassCost> passes = est.prefill_passes(4, 300, 0);
  ASSERT_EQ(passes.size(), 3u);
  EXPECT_EQ(passes[0].tokens, 512);
  EXPECT_EQ(passes[1].tokens, 512);
  EXPECT_EQ(passes[2].tokens, 176);
  EXPECT_EQ(passes[0].logits, 1);  // a prompt's last token gives logits
  EXPECT_EQ(passes[1].logits, 2);
  EXPECT_EQ(passes[2].logits, 1);
  // Each pass reads the weights once, the head included; the K and V traffic differs:
  // pass 1 writes 512 positions; pass 2 reads sequence 1's first 212 and writes 512;
  // pass 3 reads sequence 3's first 124 and writes 176.
  const double kv = est.kv_bytes_per_token();
  EXPECT_NEAR(passes[0].bytes() - passes[2].bytes(), (512 - 124 - 176) * kv, 1e-3);
  EXPECT_NEAR(passes[1].bytes() - passes[2].bytes(), (212 + 512 - 124 - 176) * kv, 1e-3);
  // Attention pairs add up to four prompts' worth: 4 x 300 x 301 / 2.
  double attn = 0;
  for (const PassCost& p : passes) attn += p.attention.attn_flops;
  EXPECT_NEAR(attn, 4 * est.prefill_total_cost(300, 0).attention.attn_flops, 1e-6 * attn);
  // One prompt: passes of ubatch rows, each after the ones before it.
  const std::vector<PassCost> one = est.prefill_passes(1, 1024, 100);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_DOUBLE_EQ(one[1].bytes(), est.prefill_cost(512, 612, 1).bytes());
  EXPECT_DOUBLE_EQ(one[0].bytes(), est.prefill_cost(512, 100, 0).bytes());
}

TEST(Estimator, DecodeCrossoverBatchOfH100InBf16) {
  // Ridge point 989.5e12 / 3.35e12 = 295.4 FLOP/byte; a bf16 weight gives 2 FLOP per 2 bytes
  // per sequence in the batch, so decode turns compute-bound at a batch of about 296.
  Estimator est(find_roofline_preset("llama-3-8b"), find_hardware("h100-sxm"), make_deployment("bf16", "f16", 1, 1),
                ideal());
  auto b = est.crossover_batch(0);
  ASSERT_TRUE(b.has_value());
  EXPECT_NEAR(static_cast<double>(*b), 296, 2);
  // At long context the KV traffic grows with the batch as fast as compute: no crossover.
  EXPECT_FALSE(est.crossover_batch(32768).has_value());
}

TEST(Estimator, SpeculativeSpeedupFollowsLeviathan) {
  // E = (1 - a^(k+1)) / (1 - a); speedup = E / (k c + 1).
  EXPECT_NEAR(speculative_tokens_per_step(0.8, 4), 3.3616, 1e-9);
  EXPECT_NEAR(speculative_speedup(0.8, 4, 0.05), 3.3616 / 1.2, 1e-9);
  EXPECT_NEAR(speculative_speedup(0.6, 2, 0.1), 1.96 / 1.2, 1e-9);
  EXPECT_NEAR(speculative_speedup(0.9, 8, 0.02), 6.12579511 / 1.16, 1e-8);
  EXPECT_NEAR(speculative_speedup(0.0, 3, 0.1), 1 / 1.3, 1e-12);  // nothing accepted: pure cost
  EXPECT_NEAR(speculative_speedup(1.0, 5, 0.0), 6.0, 1e-12);       // everything accepted
}

TEST(Estimator, MaxBatchAndMemory) {
  // 80 GB x 0.9 usable - 16.06 GB of bf16 Llama-3-8B, at 131,072 bytes per token x 8192 tokens.
  Efficiency e;
  Estimator est(find_roofline_preset("llama-3-8b"), find_hardware("h100-sxm"), make_deployment("bf16", "f16", 1, 1), e);
  double expect = std::floor((80e9 * 0.9 - est.weight_bytes()) / (131072.0 * 8192));
  EXPECT_EQ(est.max_batch(8192), static_cast<int64_t>(expect));
  EXPECT_EQ(est.max_batch(8192), 52);
  // Q8_0 KV stores 34 bytes per 32 values: more sequences fit.
  Estimator q8(find_roofline_preset("llama-3-8b"), find_hardware("h100-sxm"), make_deployment("bf16", "q8_0", 1, 1), e);
  EXPECT_DOUBLE_EQ(q8.kv_bytes_per_token(), 65536 * 34.0 / 32);
  EXPECT_GT(q8.max_batch(8192), est.max_batch(8192));
  // 70B in bf16 does not fit one 80 GB device.
  Estimator big(find_roofline_preset("llama-3-70b"), find_hardware("h100-sxm"), make_deployment("bf16", "f16", 1, 1), e);
  EXPECT_EQ(big.max_batch(8192), 0);
}

TEST(Estimator, TensorParallelAllreduceIsARing) {
  Efficiency e = ideal();
  Hardware hw = find_hardware("h100-sxm");
  Estimator est(find_roofline_preset("llama-3-8b"), hw, make_deployment("bf16", "f16", 8, 4), e);
  // Per layer two allreduces of 4096 x 2 bytes per token over 4 ranks:
  // 2 (p-1)/p S / B + 2 (p-1) latency each.
  double s = 4096 * 2.0;
  double one = 2.0 * 3 / 4 * s / hw.link_bandwidth + 2.0 * 3 * hw.link_latency;
  EXPECT_NEAR(est.allreduce_seconds(1), 2 * 32 * one, 1e-12);
  EXPECT_EQ(est.replicas(), 2);
  EXPECT_DOUBLE_EQ(est.weight_bytes_per_device(), est.weight_bytes() / 4);
  EXPECT_THROW(Estimator(find_roofline_preset("llama-3-8b"), find_hardware("m2-max"),
                         make_deployment("f16", "f16", 2, 2), e),
               Error);  // no device link
  EXPECT_THROW(make_deployment("f16", "f16", 3, 2), Error);
}

TEST(Estimator, ProbedAllreduceIsInterpolatedBetweenItsSamples) {
  // As `tps probe --allreduce` measured it: 10 us for 4 B, 20 us for 4 KiB, 100 us for 64 KiB.
  HardwareProfile p;
  p.allreduce = fit_allreduce(2, "test", {{65536, 100e-6}, {4, 10e-6}, {4096, 20e-6}});
  EXPECT_DOUBLE_EQ(p.allreduce->alpha_s, 10e-6);
  EXPECT_DOUBLE_EQ(p.allreduce->beta_bytes_per_s, 65536 / 90e-6);
  Hardware hw = two_tb_part();
  hw.link_bandwidth = 1;  // a link exists
  hw.allreduce = p.allreduce;
  Deployment dep = make_deployment("f16", "f16", 2, 2);
  dep.activation_bytes = 4;
  const RooflineModel m = find_roofline_preset("llama-3-8b");  // dim 4096, 32 layers
  Estimator est(m, hw, dep, ideal());
  // One token: 16 KiB a sum, a quarter of the way from 4 KiB to 64 KiB by bytes.
  const double one = 20e-6 + (16384.0 - 4096) / (65536 - 4096) * 80e-6;
  EXPECT_NEAR(est.allreduce_seconds(1), 2 * 32 * one, 1e-12);
  // A decode step adds the broadcast (alpha) and the gather of one row of f32 logits.
  const double gathered = m.base.vocab_size * 4.0;
  EXPECT_NEAR(est.step_exchange_seconds(1), 10e-6 + 100e-6 + (gathered - 65536) / p.allreduce->beta_bytes_per_s, 1e-12);
}

TEST(Estimator, RanksOnOneHostShareItsRoofs) {
  HardwareProfile p;
  p.threads = 2;
  p.cpu.memory_bytes = 16'000'000'000;
  // One thread reads 30 GB/s alone; two read 48 GB/s together.
  p.bandwidth = {{1 << 29, 1, 30, 30}, {1 << 29, 2, 48, 48}};
  const Hardware alone = hardware_from_profile(p, 1);
  Hardware host = hardware_from_profile(p, 2);
  host.peaks = {{"f32", 1e12}, {"int8", 4e12}};
  host.link_bandwidth = 1e18;  // a link that costs nothing: only the roofs differ
  const Hardware share = host_share(host, 2);
  EXPECT_DOUBLE_EQ(alone.bandwidth, 30e9);
  EXPECT_DOUBLE_EQ(share.bandwidth, 24e9);  // less than a thread alone: the bus is shared
  EXPECT_DOUBLE_EQ(share.memory_bytes, 8e9);
  EXPECT_DOUBLE_EQ(share.peaks.at("int8"), 2e12);
  EXPECT_DOUBLE_EQ(share.peaks.at("f32"), 0.5e12);
  // Two ranks each decode half the weights at their share: the host's one-process step.
  Deployment split = make_deployment("q4_0", "f16", 2, 2), whole = make_deployment("q4_0", "f16", 1, 1);
  const RooflineModel m = find_roofline_preset("llama-3-8b");
  const double shared_step = Estimator(m, share, split, ideal()).decode_step_seconds(1, 512);
  const double one_process = Estimator(m, host, whole, ideal()).decode_step_seconds(1, 512);
  EXPECT_NEAR(shared_step / one_process, 1.0, 0.02);
}

TEST(Estimator, MoeDecodeReadsActiveExpertsAtBatchOneAndAllAtLargeBatch) {
  Efficiency e = ideal();
  RooflineModel m = find_roofline_preset("mixtral-8x7b");
  Estimator est(m, find_hardware("h100-sxm"), make_deployment("bf16", "f16", 1, 1), e);
  double expert_bytes = m.expert_params() * 2.0 * m.n_moe_layers();
  double router_bytes = m.router_params() * 2.0 * m.n_moe_layers();
  EXPECT_NEAR(est.decode_cost(1, 0).mlp.bytes, 2 * expert_bytes + router_bytes, 1);
  EXPECT_NEAR(est.decode_cost(4096, 0).mlp.bytes, 8 * expert_bytes + router_bytes, 1e3);
}

TEST(Estimator, WeightFormatsSetBytesAndComputePath) {
  Efficiency e;
  Hardware hw = find_hardware("h100-sxm");
  RooflineModel m = find_roofline_preset("tinyllama-1.1b");
  Estimator q4(m, hw, make_deployment("q4_0", "f16", 1, 1), e);
  Estimator f16(m, hw, make_deployment("f16", "f16", 1, 1), e);
  EXPECT_EQ(q4.weight_path(), "int8");
  EXPECT_EQ(f16.weight_path(), "f16");
  EXPECT_NEAR(q4.weight_bytes() / f16.weight_bytes(), 4.5 / 16, 1e-3);
  // Apple GPUs have no int8 entry: quantized weights fall back to f16 units.
  Estimator apple(m, find_hardware("m2-max"), make_deployment("q4_0", "f16", 1, 1), e);
  EXPECT_EQ(apple.weight_path(), "f16");
  EXPECT_THROW(find_hardware("no-such-gpu"), Error);
}

}  // namespace tps

namespace tps {

// The engine's terms map onto the model's: a mean accepted length over k drafts gives
// back the per-token acceptance, and the verify cost ratio divides the speedup.
TEST(Speculative, MeanAcceptedLengthAndVerifyCostMapOntoTheModel) {
  for (double alpha : {0.0, 0.3, 0.7, 0.95}) {
    const double length = speculative_tokens_per_step(alpha, 4) - 1;
    EXPECT_NEAR(per_token_acceptance(length, 4), alpha, 1e-9) << alpha;
  }
  EXPECT_EQ(per_token_acceptance(4, 4), 1.0);
  // alpha 0.5, k 2: E = 1.75; c 0.1, r 1.2: 1.75 / 1.4.
  EXPECT_NEAR(speculative_speedup(0.5, 2, 0.1, 1.2), 1.25, 1e-12);
}

}  // namespace tps
