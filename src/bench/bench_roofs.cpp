#include "bench/bench_roofs.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "bench/bench_model.h"
#include "core/error.h"
#include "roofline/cpu_info.h"

namespace tps {

namespace fs = std::filesystem;

namespace {

// Why a cached profile does not describe this machine now, or "" if it does.
std::string stale_reason(const HardwareProfile& profile, const CpuInfo& here, double load_now, int threads) {
  if (profile.probe_version < kProbeVersion)
    return fmt::format("is from an older probe (version {}, now {})", profile.probe_version, kProbeVersion);
  const CpuInfo& then = profile.cpu;
  if (then.model != here.model || then.vendor != here.vendor || then.logical_cpus != here.logical_cpus ||
      then.isa != here.isa)
    return fmt::format("was measured on another CPU ({}, {} CPUs; this one: {}, {} CPUs)", then.model,
                       then.logical_cpus, here.model, here.logical_cpus);
  // A quick probe that shared the CPUs read its peaks low; one made now should read
  // them better (a full profile is the user's own, and stays).
  if (profile.quick && profile.load_average > kBusyLoadAverage && load_now < profile.load_average)
    return fmt::format("was a quick probe under a load average of {:.1f} (now {:.1f})", profile.load_average,
                       load_now);
  // A quick probe measures only up to the thread count of the bench that made it: one
  // thread's DRAM read is about half of two's, so a 2-thread bench against it read MBU
  // 153 %.
  const int wanted = std::min(threads, here.logical_cpus);
  if (profile.quick && profile.threads < wanted)
    return fmt::format("was a quick probe on {} thread{} (this bench runs {})", profile.threads,
                       profile.threads == 1 ? "" : "s", wanted);
  return "";
}

}  // namespace

std::optional<LoadedProfile> cached_profile(const std::string& dir, const CpuInfo& here, double load_now,
                                            int threads, const std::function<void(const std::string&)>& status) {
  for (const char* name : {"profile.json", "profile-quick.json"}) {
    const fs::path p = fs::path(dir) / name;
    if (!fs::exists(p)) continue;
    HardwareProfile profile = load_profile(p.string());
    const std::string reason = stale_reason(profile, here, load_now, threads);
    if (reason.empty()) return LoadedProfile{profile, "profile " + p.string()};
    status(fmt::format("{} {}: not used", p.string(), reason));
  }
  return std::nullopt;
}

LoadedProfile find_or_probe_profile(const std::string& path, int threads,
                                    const std::function<void(const std::string&)>& status) {
  if (!path.empty()) return {load_profile(path), "profile " + path};
  const fs::path dir = tps_cache_dir();
  double load_now = 0;
  getloadavg(&load_now, 1);
  if (std::optional<LoadedProfile> cached = cached_profile(dir.string(), detect_cpu(), load_now, threads, status))
    return *cached;
  status("no current hardware profile: measuring bandwidth and peaks (quick probe, once)");
  ProbeOptions options;
  options.quick = true;
  options.threads = threads;
  HardwareProfile profile = run_probe(options);
  fs::path saved = dir / "profile-quick.json";
  std::ofstream out(saved);
  out << profile_to_json(profile).dump(2) << "\n";
  if (!out) return {profile, "quick probe (not saved: cannot write " + saved.string() + ")"};
  return {profile, fmt::format("quick probe (saved to {}; `tps probe -o {}` measures fully)", saved.string(),
                               (dir / "profile.json").string())};
}

}  // namespace tps
