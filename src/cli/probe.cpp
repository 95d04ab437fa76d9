// `tps probe`: measure this machine's bandwidth and compute roofs, print them, save a profile.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/command.h"
#include "core/error.h"
#include "parallel/allreduce_probe.h"
#include "parallel/mpi_group.h"
#include "roofline/probe.h"

namespace tps::cli {

namespace {

std::string human_bytes(int64_t b) {
  if (b >= (int64_t{1} << 30) && b % (int64_t{1} << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= (int64_t{1} << 20)) return fmt::format("{} MiB", b >> 20);
  return fmt::format("{} KiB", b >> 10);
}

void print_profile(const HardwareProfile& p) {
  fmt::print("cpu: {} ({}), {} logical CPUs, isa: {}\n", p.cpu.model, p.cpu.vendor, p.cpu.logical_cpus,
             fmt::join(p.cpu.isa, " "));
  fmt::print("caches ({}): L1d {}, L2 {}, L3 {}; memory {}\n", p.cpu.cache_source, human_bytes(p.cpu.l1d_bytes),
             human_bytes(p.cpu.l2_bytes), human_bytes(p.cpu.l3_bytes), human_bytes(p.cpu.memory_bytes));
  std::vector<int> threads;
  for (const auto& b : p.bandwidth)
    if (std::find(threads.begin(), threads.end(), b.threads) == threads.end()) threads.push_back(b.threads);
  fmt::print("\nstreaming read bandwidth, GB/s: sustained (median window) / peak (best window)\n{:>10}", "buffer");
  for (int t : threads) fmt::print(" {:>13}", fmt::format("{} thr", t));
  fmt::print("\n");
  std::vector<int64_t> sizes;
  for (const auto& b : p.bandwidth)
    if (std::find(sizes.begin(), sizes.end(), b.bytes) == sizes.end()) sizes.push_back(b.bytes);
  for (int64_t s : sizes) {
    fmt::print("{:>10}", human_bytes(s));
    for (int t : threads)
      for (const auto& b : p.bandwidth)
        if (b.bytes == s && b.threads == t) fmt::print(" {:>13}", fmt::format("{:.1f} / {:.1f}", b.gbps, b.peak_gbps));
    fmt::print("\n");
  }
  fmt::print("\npeak compute, Gops/s (multiply-add = 2 ops)\n{:>10} {:>24}", "path", "instructions");
  for (int t : threads) fmt::print(" {:>9}", fmt::format("{} thr", t));
  fmt::print("\n");
  for (const auto& pk : p.peaks) {
    fmt::print("{:>10} {:>24}", pk.path, pk.status == "measured" ? pk.isa : pk.status);
    for (const auto& t : pk.by_threads) fmt::print(" {:>9.1f}", t.ops_per_s / 1e9);
    fmt::print("\n");
  }
  fmt::print("\ndram_read_gbps (largest buffer, {} threads, sustained): {:.1f} (peak {:.1f})\n", p.threads,
             p.dram_read_gbps, p.dram_read_peak_gbps);
  if (p.load_average > kBusyLoadAverage)
    fmt::print("note: the load average was {:.1f} when the probe started: other processes shared the CPUs, "
               "so these figures may read low\n", p.load_average);
}

void print_allreduce(const AllreduceProfile& a) {
  fmt::print("allreduce over {} ranks ({}): alpha {:.1f} us, beta {:.2f} GB/s\n{:>10} {:>12}\n", a.ranks, a.transport,
             a.alpha_s * 1e6, a.beta_bytes_per_s / 1e9, "bytes", "us");
  for (const auto& s : a.samples) fmt::print("{:>10} {:>12.1f}\n", s.bytes, s.seconds * 1e6);
}

struct AllreduceArgs {
  bool run = false;
  std::string profile;
  std::string transport = "mpi";
};

// Under mpirun: times the allreduce on every rank; the leader adds it to the profile.
int probe_allreduce(const AllreduceArgs& a, const std::string& out) {
  auto group = start_mpi_group();
  if (group->ranks() < 2) fail("--allreduce runs under mpirun with at least 2 ranks: mpirun -np 2 tps probe --allreduce");
  const std::vector<AllreduceSample> samples = time_allreduce(*group);
  if (!group->leader()) return 0;
  const AllreduceProfile fit = fit_allreduce(group->ranks(), a.transport, samples);
  print_allreduce(fit);
  if (a.profile.empty()) return 0;
  HardwareProfile p = load_profile(a.profile);
  p.allreduce = fit;
  const std::string path = out.empty() ? a.profile : out;
  std::ofstream f(path);
  if (!f) fail("cannot write '{}'", path);
  f << profile_to_json(p).dump(2) << "\n";
  fmt::print("allreduce added to the profile {}\n", path);
  return 0;
}

const CommandRegistration kProbe{
    "probe", "measure this machine's memory bandwidth and peak compute; write a hardware profile",
    [](CLI::App& sub) {
      auto opts = std::make_shared<ProbeOptions>();
      auto out = std::make_shared<std::string>();
      auto allreduce = std::make_shared<AllreduceArgs>();
      sub.add_flag("--quick", opts->quick, "about 10 s instead of under a minute");
      sub.add_option("-o,--output", *out, "write the profile JSON here (schema: docs/profile-format.md)");
      sub.add_option("-t,--threads", opts->threads, "largest thread count to measure (default: all CPUs)")
          ->check(CLI::PositiveNumber);
      sub.add_flag("--allreduce", allreduce->run,
                   "under mpirun -np N: time the allreduce between the ranks (alpha, beta) instead, and add it to "
                   "--profile (written to -o, else in place)");
      sub.add_option("--profile", allreduce->profile, "with --allreduce: the profile to add it to");
      sub.add_option("--transport", allreduce->transport, "with --allreduce: a name for the link, kept in the profile")
          ->capture_default_str();
      return [opts, out, allreduce]() {
        if (allreduce->run) return probe_allreduce(*allreduce, *out);
        HardwareProfile p = run_probe(*opts);
        print_profile(p);
        if (!out->empty()) {
          std::ofstream f(*out);
          if (!f) fail("cannot write '{}'", *out);
          f << profile_to_json(p).dump(2) << "\n";
          fmt::print("profile written to {}\n", *out);
        }
        return 0;
      };
    }};

}  // namespace

}  // namespace tps::cli
