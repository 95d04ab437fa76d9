#include "bench/bench_roofs.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "bench/bench_model.h"
#include "core/error.h"

namespace tps {

namespace fs = std::filesystem;

std::optional<LoadedProfile> cached_profile(const std::string& dir,
                                            const std::function<void(const std::string&)>& status) {
  for (const char* name : {"profile.json", "profile-quick.json"}) {
    const fs::path p = fs::path(dir) / name;
    if (!fs::exists(p)) continue;
    HardwareProfile profile = load_profile(p.string());
    if (profile.probe_version >= kProbeVersion) return LoadedProfile{profile, "profile " + p.string()};
    status(fmt::format("{} is from an older probe (version {}, now {}): not used", p.string(), profile.probe_version,
                       kProbeVersion));
  }
  return std::nullopt;
}

LoadedProfile find_or_probe_profile(const std::string& path, int threads,
                                    const std::function<void(const std::string&)>& status) {
  if (!path.empty()) return {load_profile(path), "profile " + path};
  const fs::path dir = tps_cache_dir();
  if (std::optional<LoadedProfile> cached = cached_profile(dir.string(), status)) return *cached;
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
