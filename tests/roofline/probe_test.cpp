#include "roofline/probe.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "core/error.h"
#include "roofline/cpu_info.h"
#include "roofline/hardware.h"
#include "roofline/probe_kernels.h"

namespace tps {

namespace {

HardwareProfile tiny_probe() {
  ProbeOptions o;
  o.threads = 2;
  o.sizes = {256 * 1024, 1024 * 1024};
  o.repetitions = 1;
  o.compute_seconds = 0.002;
  o.min_bytes_per_rep = 1024 * 1024;
  return run_probe(o);
}

}  // namespace

TEST(Probe, TinyProbeFillsEveryField) {
  HardwareProfile p = tiny_probe();
  EXPECT_FALSE(p.cpu.model.empty());
  EXPECT_GT(p.cpu.logical_cpus, 0);
  EXPECT_GT(p.cpu.memory_bytes, 0);
  EXPECT_EQ(p.threads, 2);
  EXPECT_GT(p.dram_read_gbps, 0);
  ASSERT_EQ(p.bandwidth.size(), 4u);  // 2 sizes x thread counts 1, 2
  for (const auto& b : p.bandwidth) {
    EXPECT_GT(b.gbps, 0);
    EXPECT_GE(b.peak_gbps, b.gbps);  // the best window against the median
  }
  EXPECT_GE(p.dram_read_peak_gbps, p.dram_read_gbps);
  const ComputePeak* f32 = p.peak("f32");
  ASSERT_NE(f32, nullptr);
  EXPECT_EQ(f32->status, "measured");
  for (const auto& t : f32->by_threads) EXPECT_GT(t.ops_per_s, 0);
  // The widest loops the CPU runs: a scalar loop on an AVX CPU would understate its roofs.
  const CpuInfo cpu = detect_cpu();
  const char* widest = cpu.avx512 ? "avx512" : cpu.avx2 ? "avx2" : "scalar";
  EXPECT_EQ(f32->isa.rfind(widest, 0), 0u) << f32->isa;
  if (cpu.avx2) {
    ASSERT_NE(p.peak("int8"), nullptr);
    EXPECT_EQ(p.peak("int8")->status, "measured");
  }
  for (const char* path : {"bf16", "int8", "amx_int8", "amx_bf16"}) {
    const ComputePeak* pk = p.peak(path);
    ASSERT_NE(pk, nullptr) << path;
    EXPECT_TRUE(pk->status == "measured" || pk->status == "absent" || pk->status == "unavailable") << path;
    if (pk->status == "measured") {
      EXPECT_GT(pk->ops_per_s(2), 0) << path;
    }
  }
}

TEST(Probe, JsonFollowsTheSchemaAndRoundTrips) {
  HardwareProfile p = tiny_probe();
  nlohmann::json j = profile_to_json(p);
  EXPECT_EQ(j["schema"], "tps.profile/1");
  for (const char* k : {"created", "cpu", "caches", "memory_bytes", "threads", "dram_read_gbps", "bandwidth", "peaks"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_GT(j["cpu"]["logical_cpus"].get<int>(), 0);
  EXPECT_GT(j["peaks"]["f32"]["ops_per_s"].get<double>(), 0);
  HardwareProfile back = profile_from_json(j);
  EXPECT_EQ(back.bandwidth.size(), p.bandwidth.size());
  EXPECT_DOUBLE_EQ(back.dram_read_gbps, p.dram_read_gbps);
  EXPECT_DOUBLE_EQ(back.dram_read_peak_gbps, p.dram_read_peak_gbps);
  EXPECT_DOUBLE_EQ(back.bandwidth[0].peak_gbps, p.bandwidth[0].peak_gbps);
  Hardware hw = hardware_from_profile(back, 1);
  EXPECT_GT(hw.bandwidth, 0);
  EXPECT_GT(hw.peaks.at("f32"), 0);
  EXPECT_EQ(hw.kind, "probe");
  // Working sets that fit a smaller buffer get that buffer's bandwidth.
  EXPECT_DOUBLE_EQ(hw.bandwidth_for(100), back.bandwidth_gbps(256 * 1024, 1) * 1e9);
  EXPECT_FALSE(j.contains("allreduce"));
  EXPECT_FALSE(hw.allreduce);
}

TEST(Probe, AllreduceRoundTripsAndGivesTheHardwareALink) {
  HardwareProfile p = tiny_probe();
  p.allreduce = fit_allreduce(2, "veth", {{4, 50e-6}, {4096, 80e-6}, {1 << 20, 13e-3}});
  const HardwareProfile back = profile_from_json(profile_to_json(p));
  ASSERT_TRUE(back.allreduce);
  EXPECT_EQ(back.allreduce->ranks, 2);
  EXPECT_EQ(back.allreduce->transport, "veth");
  EXPECT_EQ(back.allreduce->samples.size(), 3u);
  EXPECT_DOUBLE_EQ(back.allreduce->alpha_s, 50e-6);
  EXPECT_DOUBLE_EQ(back.allreduce->seconds(2050), 65e-6);  // halfway from 4 B to 4 KiB
  const Hardware hw = hardware_from_profile(back, 1);
  EXPECT_NE(hw.link.find("2 ranks (veth)"), std::string::npos) << hw.link;
  EXPECT_GT(hw.link_bandwidth, 0);
  EXPECT_THROW(fit_allreduce(2, "one size", {{4, 1e-6}}), Error);
}

TEST(Probe, RejectsMalformedProfiles) {
  EXPECT_THROW(profile_from_json(nlohmann::json::parse(R"({"schema": "other/1"})")), Error);
  EXPECT_THROW(profile_from_json(nlohmann::json::parse(R"({"schema": "tps.profile/1"})")), Error);
  nlohmann::json j = profile_to_json(tiny_probe());
  j["dram_read_gbps"] = "fast";
  EXPECT_THROW(profile_from_json(j), Error);
  EXPECT_THROW(load_profile("/nonexistent/profile.json"), Error);
  ProbeOptions o;
  o.sizes = {16};
  EXPECT_THROW(run_probe(o), Error);
}

TEST(Probe, StreamReadTakesAnyBufferItCanRead) {
  ThreadPool pool(2);
  std::vector<uint8_t> buffer(1 << 20, 1);
  EXPECT_GT(stream_read_gbps(buffer.data() + 3, buffer.size() - 3, pool), 0);  // unaligned start
  EXPECT_EQ(stream_read_gbps(buffer.data(), 100, pool), 0);  // less than one 256-byte block
}

// The two-stream read kernels must still read every word once, whatever the number of
// blocks (an odd count leaves a block that neither half holds).
TEST(Probe, ReadKernelsSumEveryWordOnce) {
  const CpuInfo cpu = detect_cpu();
  std::vector<std::pair<const char*, uint64_t (*)(const uint8_t*, size_t)>> kernels = {{"scalar", read_kernel_scalar}};
  if (cpu.avx2) kernels.push_back({"avx2", read_kernel_avx2});
  if (cpu.avx512) kernels.push_back({"avx512", read_kernel_avx512});
  std::mt19937_64 rng(3);
  alignas(64) static uint64_t words[7 * 32];
  for (uint64_t& w : words) w = rng();
  for (size_t blocks = 1; blocks <= 7; ++blocks) {
    const uint64_t want = std::accumulate(words, words + blocks * 32, uint64_t{0});
    for (const auto& [name, read] : kernels)
      EXPECT_EQ(read(reinterpret_cast<const uint8_t*>(words), blocks * 256), want) << name << ", " << blocks << " blocks";
  }
}

// The AVX-VNNI int8 peak loop does the multiply-adds it counts: 12 chains of 32 u8 x s8
// products per iteration, each lane gaining 4 x (3 x -2) from its start value j.
TEST(Probe, AvxVnniInt8LoopDoesTheWorkItCounts) {
  if (!detect_cpu().avx_vnni) GTEST_SKIP() << "CPU lacks AVX-VNNI";
  const ComputeKernel k = int8_kernel_avx_vnni();
  EXPECT_EQ(k.path, std::string("int8"));
  EXPECT_EQ(k.ops_per_iteration, 12 * 32 * 2.0);
  for (int64_t n : {1, 10, 1000}) EXPECT_EQ(k.run(n), 66.0 - 12 * 24.0 * double(n)) << n;
}

// The AVX-512 int8 loop: 16 chains from j = 0..15 in each of 16 lanes, each step
// adding 4 products of 3 x -2 per lane.
TEST(Probe, Avx512Int8LoopDoesTheWorkItCounts) {
  if (!detect_cpu().avx512_vnni) GTEST_SKIP() << "CPU lacks AVX512_VNNI";
  for (const ComputeKernel& k : compute_kernels_avx512()) {
    if (k.path != std::string("int8")) continue;
    EXPECT_EQ(k.ops_per_iteration, 16 * 64 * 2.0);
    for (int64_t n : {1, 10, 1000}) EXPECT_EQ(k.run(n), 16 * 16 * 7.5 - 16 * 16 * 24.0 * double(n)) << n;
    return;
  }
  FAIL() << "no int8 kernel on a CPU with AVX512_VNNI";
}

}  // namespace tps
