#pragma once
// `tps probe`: measures this machine's roofs (streaming read bandwidth by buffer size and
// thread count, peak multiply-accumulate rate of each compute path) and records them in a
// hardware profile (JSON schema in docs/profile-format.md).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/thread_pool.h"
#include "roofline/cpu_info.h"

namespace tps {

struct BandwidthSample {
  int64_t bytes = 0;   // buffer size
  int threads = 0;
  double gbps = 0;       // 1e9 bytes/s, median of the timing windows: what a stream sustains
  double peak_gbps = 0;  // the best window: what it reaches when nothing else competes
};

struct ThreadOps {
  int threads = 0;
  double ops_per_s = 0;
};

struct ComputePeak {
  std::string path;    // "f32", "bf16", "int8", "amx_int8", "amx_bf16"
  std::string isa;     // instructions timed, empty when not measured
  std::string status;  // "measured", "absent" (CPU lacks it), "unavailable" (OS refused)
  std::vector<ThreadOps> by_threads;
  double ops_per_s(int threads) const;  // at the closest measured thread count <= threads
};

// One message size of the allreduce probe: the median time of MPI_Allreduce (sum of
// floats) over the ranks of an mpirun.
struct AllreduceSample {
  int64_t bytes = 0;
  double seconds = 0;
};

// `mpirun -np N tps probe --allreduce`: the collective tensor parallelism pays twice per
// layer, summed up as time = alpha + bytes / beta.
struct AllreduceProfile {
  int ranks = 0;
  std::string transport;  // what the ranks were joined by, as the user named it (e.g. "shared memory")
  double alpha_s = 0;     // latency: the smallest message's time
  double beta_bytes_per_s = 0;  // bandwidth: the largest message over its time beyond alpha
  std::vector<AllreduceSample> samples;  // by size
  // Interpolated between the samples (alpha + bytes / beta alone is far off in between:
  // over a 1 Gbit/s veth it put 8 KiB at 187 us, measured about 100); beyond them, beta.
  double seconds(double bytes) const;
};
// alpha and beta of the samples (sorted by size; at least two).
AllreduceProfile fit_allreduce(int ranks, std::string transport, std::vector<AllreduceSample> samples);

// Bumped when a change to the probe changes what it reads on the same machine, so that
// profiles the bench cached from an older probe are measured again. 2: the int8 and
// bf16 peaks timed without GCC's register copies (they read about 1.35x low before).
constexpr int kProbeVersion = 2;
// A 1-minute load average above which a probe shared the CPUs with others' work.
constexpr double kBusyLoadAverage = 0.5;

struct HardwareProfile {
  int probe_version = kProbeVersion;  // of the probe that measured it (1 where unsaid)
  std::string created;  // ISO 8601 UTC
  bool quick = false;
  double load_average = 0;    // 1-minute load average when the probe started: others' work skews it
  CpuInfo cpu;
  int threads = 0;            // the largest thread count measured
  double dram_read_gbps = 0;  // largest buffer, all threads, sustained (median window)
  double dram_read_peak_gbps = 0;  // the same, best window
  std::vector<BandwidthSample> bandwidth;
  std::vector<ComputePeak> peaks;
  std::optional<AllreduceProfile> allreduce;  // from `tps probe --allreduce` under mpirun

  // Read bandwidth for a working set of `bytes` on `threads` threads: the sample of the
  // smallest buffer that holds it (caches help small models), else the largest buffer.
  double bandwidth_gbps(int64_t bytes, int threads) const;
  const ComputePeak* peak(const std::string& path) const;  // nullptr when not listed
};

struct ProbeOptions {
  bool quick = false;
  int threads = 0;                    // 0: every CPU this process may use
  std::vector<int64_t> sizes;         // buffer sizes; empty: the defaults for quick/full
  int repetitions = 0;                // timing windows, the best counts; 0: the default
  double compute_seconds = 0;         // length of a compute window; 0: the default
  int64_t min_bytes_per_rep = 0;      // bytes read per bandwidth window; 0: the default
};

HardwareProfile run_probe(const ProbeOptions& options);

// One timed pass of streaming reads over [data, data + bytes) on every thread of the
// pool, with the probe's widest read kernel: the in-run baseline `tps bench` sets next
// to decode, over the very bytes decode streams. GB/s.
double stream_read_gbps(const uint8_t* data, size_t bytes, ThreadPool& pool);

nlohmann::json profile_to_json(const HardwareProfile& profile);
// Throws tps::Error naming the missing or malformed field.
HardwareProfile profile_from_json(const nlohmann::json& j);
HardwareProfile load_profile(const std::string& path);

}  // namespace tps
