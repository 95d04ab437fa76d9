#pragma once
// This machine's limits for a bench: a hardware profile from `tps probe` (--profile, else
// the cache directory), or a quick probe made on the spot and cached for next time.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "roofline/probe.h"

namespace tps {

struct LoadedProfile {
  HardwareProfile profile;
  std::string source;  // "profile FILE" or "quick probe (saved to FILE)"
};

// `path` empty: <cache>/profile.json, else <cache>/profile-quick.json, else a quick probe
// on up to `threads` threads, saved as <cache>/profile-quick.json.
LoadedProfile find_or_probe_profile(const std::string& path, int threads,
                                    const std::function<void(const std::string&)>& status);

// <dir>/profile.json, else <dir>/profile-quick.json, if it still describes this
// machine: measured by this version of the probe (kProbeVersion), on a CPU like `here`
// (model, vendor, CPU count, instruction sets: a cache directory can move between
// machines), and, for a quick probe, not under a load average above kBusyLoadAverage
// higher than `load_now` nor on fewer threads than `threads` (at most the CPU count)
// wants. One that does not is skipped with a status line.
std::optional<LoadedProfile> cached_profile(const std::string& dir, const CpuInfo& here, double load_now,
                                            int threads, const std::function<void(const std::string&)>& status);

}  // namespace tps
