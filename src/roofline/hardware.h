#pragma once
// What the roofline needs to know of a device: memory capacity and bandwidth, dense peak
// rate per compute path, and the link between devices for tensor parallelism. Entries of
// the built-in database cite a datasheet for every figure; a `tps probe` profile gives
// measured figures for this machine.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "roofline/probe.h"

namespace tps {

struct Hardware {
  std::string id;                       // "h100-sxm"
  std::string name;                     // "NVIDIA H100 SXM5 80GB"
  std::string kind;                     // "gpu", "cpu", "probe"
  double memory_bytes = 0;
  double bandwidth = 0;                 // bytes/s, peak (or measured for a probe)
  std::map<std::string, double> peaks;  // path ("f32", "f16", "bf16", "fp8", "int8") -> dense ops/s
  std::string link;                     // "NVLink 4" ... empty: no device-to-device link
  double link_bandwidth = 0;            // bytes/s per direction per device
  double link_latency = 0;              // seconds per ring step
  // A probed allreduce of the whole group (`tps probe --allreduce`), in place of the
  // ring model of link_*.
  std::optional<AllreduceProfile> allreduce;
  std::vector<std::pair<std::string, std::string>> sources;  // figure -> where it comes from
  // A probe's bandwidth by working-set size for the chosen thread count (bytes, bytes/s).
  std::vector<std::pair<int64_t, double>> bandwidth_by_size;

  // Bandwidth for a working set of `bytes`: the smallest measured buffer holding it, or `bandwidth`.
  double bandwidth_for(double bytes) const;
  // The first path of `preferred` this device has; throws tps::Error when none.
  std::string pick_path(const std::vector<std::string>& preferred) const;
};

const std::vector<Hardware>& hardware_database();
const Hardware& find_hardware(const std::string& id);  // throws tps::Error listing the ids
// The roofs of a probed machine when running on `threads` threads (0: all it measured).
// `kernel_path` names the compute path the matmul kernels really take (kernels'
// compute_path: "int8", "amx_int8", "f32" ...): the roof is that path's peak, under the
// name of the number format it computes in. Empty: the fastest engine measured per format.
Hardware hardware_from_profile(const HardwareProfile& profile, int threads, const std::string& kernel_path = "");
// One rank's share of a host that runs `ranks` of them, each on its own threads: the
// roofs and memory of the host, measured on all their threads together, divided among
// them. They share its memory bus, so two ranks of one thread each get less than a
// thread alone.
Hardware host_share(const Hardware& host, int ranks);

}  // namespace tps
