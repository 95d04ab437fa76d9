#include "roofline/probe.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>

#include "core/error.h"
#include "core/thread_pool.h"
#include "core/timer.h"
#include "roofline/probe_kernels.h"

namespace tps {

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

std::vector<int64_t> default_sizes(bool quick, int64_t memory_bytes) {
  std::vector<int64_t> sizes = {4 * kMiB, 64 * kMiB, 256 * kMiB};
  // The largest buffer must dwarf every cache; keep it well inside physical memory.
  int64_t big = quick ? 512 * kMiB : 2 * kGiB;
  while (big > 256 * kMiB && memory_bytes > 0 && big * 4 > memory_bytes) big /= 2;
  if (quick) sizes = {4 * kMiB, 64 * kMiB};
  sizes.push_back(big);
  return sizes;
}

// 1, 2, 4, ... and the maximum itself.
std::vector<int> thread_counts(int max_threads) {
  std::vector<int> counts;
  for (int t = 1; t < max_threads; t *= 2) counts.push_back(t);
  counts.push_back(max_threads);
  return counts;
}

struct AlignedBuffer {
  explicit AlignedBuffer(int64_t n) : size(n) {
    constexpr size_t kAlign = 2 * kMiB;  // lets the kernel back it with huge pages
    data = static_cast<uint8_t*>(std::aligned_alloc(kAlign, (n + kAlign - 1) / kAlign * kAlign));
    if (!data) fail("probe: cannot allocate a {} MiB buffer", n / kMiB);
    madvise(data, n, MADV_HUGEPAGE);
    std::memset(data, 1, n);  // fault every page in before timing
  }
  ~AlignedBuffer() { std::free(data); }
  uint8_t* data;
  int64_t size;
};

ReadKernel best_read_kernel(const CpuInfo& cpu) {
  if (cpu.avx512) return read_kernel_avx512;
  if (cpu.avx2) return read_kernel_avx2;
  return read_kernel_scalar;
}

std::atomic<uint64_t> g_sink{0};  // results of timed loops land here so nothing is elided

struct WindowRates {
  double median = 0;
  double best = 0;
};

// Many short windows: the median is what a stream sustains while the machine does what
// it does (on a shared machine, others' traffic included); the best is the hardware
// undisturbed. A window reads `window_bytes`: whole passes over a buffer smaller than
// that, else the next slice of a larger one (rotating, so a large buffer streams from
// memory and never from cache).
WindowRates measure_bandwidth(ThreadPool& pool, ReadKernel read, const uint8_t* data, int64_t bytes, int windows,
                              int64_t window_bytes) {
  int64_t span = std::min(bytes, std::max<int64_t>(256, window_bytes / 256 * 256)) / 256 * 256;
  int64_t passes = std::max<int64_t>(1, window_bytes / span);
  int64_t offset = 0;
  std::vector<double> rates;
  for (int w = 0; w < windows; ++w) {
    const uint8_t* base = data + offset;
    double t0 = now_seconds();
    pool.run([&](int ti, int n) {
      // Slices are whole 256-byte blocks so every kernel's stride divides them.
      int64_t blocks = span / 256;
      int64_t b = blocks * ti / n * 256, e = blocks * (ti + 1) / n * 256;
      uint64_t s = 0;
      for (int64_t p = 0; p < passes; ++p) s += read(base + b, e - b);
      g_sink.fetch_add(s, std::memory_order_relaxed);
    });
    rates.push_back(static_cast<double>(span) * passes / (now_seconds() - t0) / 1e9);
    offset += span;
    if (offset + span > bytes) offset = 0;
  }
  std::sort(rates.begin(), rates.end());
  return {rates[rates.size() / 2], rates.back()};
}

double measure_compute(ThreadPool& pool, const ComputeKernel& k, int repetitions, double seconds) {
  // Size the loop so one window lasts about `seconds` on one thread; best of the windows.
  int64_t iterations = 1000;
  for (;;) {
    double t0 = now_seconds();
    g_sink.fetch_add(static_cast<uint64_t>(k.run(iterations)), std::memory_order_relaxed);
    double dt = now_seconds() - t0;
    if (dt >= seconds / 4 || iterations > (int64_t{1} << 40)) {
      iterations = std::max<int64_t>(1, static_cast<int64_t>(iterations * seconds / std::max(dt, 1e-9)));
      break;
    }
    iterations *= 4;
  }
  double best = 0;
  for (int r = 0; r < repetitions; ++r) {
    double t0 = now_seconds();
    pool.run([&](int, int) {
      g_sink.fetch_add(static_cast<uint64_t>(k.run(iterations)), std::memory_order_relaxed);
    });
    double dt = now_seconds() - t0;
    best = std::max(best, k.ops_per_iteration * iterations * pool.size() / dt);
  }
  return best;
}

std::vector<ComputeKernel> available_kernels(const CpuInfo& cpu, std::vector<ComputePeak>& absent) {
  std::vector<ComputeKernel> kernels;
  if (cpu.avx512) kernels = compute_kernels_avx512();
  else if (cpu.avx2) kernels = compute_kernels_avx2();
  else kernels = compute_kernels_scalar();
  if (!cpu.avx512 && cpu.avx_vnni) {  // the quantized kernels' dot there
    for (ComputeKernel& k : kernels) {
      if (k.path == std::string("int8")) k = int8_kernel_avx_vnni();
    }
  }
  for (const char* path : {"bf16", "int8"}) {
    bool have = std::any_of(kernels.begin(), kernels.end(),
                            [&](const ComputeKernel& k) { return k.path == std::string(path); });
    if (!have) absent.push_back({path, "", "absent", {}});
  }
  if (cpu.amx_int8 || cpu.amx_bf16) {
    auto amx = compute_kernels_amx();
    if (amx.empty()) {
      absent.push_back({"amx_int8", "", "unavailable", {}});
      absent.push_back({"amx_bf16", "", "unavailable", {}});
    }
    for (auto& k : amx) {
      bool have = std::string(k.path) == "amx_int8" ? cpu.amx_int8 : cpu.amx_bf16;
      if (have) kernels.push_back(k);
      else absent.push_back({k.path, "", "absent", {}});
    }
  } else {
    absent.push_back({"amx_int8", "", "absent", {}});
    absent.push_back({"amx_bf16", "", "absent", {}});
  }
  return kernels;
}

}  // namespace

double ComputePeak::ops_per_s(int threads) const {
  double best = 0;
  int best_threads = 0;
  for (const auto& s : by_threads)
    if (s.threads <= threads && s.threads >= best_threads) {
      best_threads = s.threads;
      best = s.ops_per_s;
    }
  return best;
}

double HardwareProfile::bandwidth_gbps(int64_t bytes, int want_threads) const {
  // Closest measured thread count not above the request (or the smallest measured).
  int t_pick = 0;
  for (const auto& s : bandwidth)
    if (s.threads <= want_threads) t_pick = std::max(t_pick, s.threads);
  if (t_pick == 0)
    for (const auto& s : bandwidth)
      if (t_pick == 0 || s.threads < t_pick) t_pick = s.threads;
  const BandwidthSample* fit = nullptr;
  const BandwidthSample* largest = nullptr;
  for (const auto& s : bandwidth) {
    if (s.threads != t_pick) continue;
    if (s.bytes >= bytes && (!fit || s.bytes < fit->bytes)) fit = &s;
    if (!largest || s.bytes > largest->bytes) largest = &s;
  }
  if (fit) return fit->gbps;
  return largest ? largest->gbps : dram_read_gbps;
}

const ComputePeak* HardwareProfile::peak(const std::string& path) const {
  for (const auto& p : peaks)
    if (p.path == path) return &p;
  return nullptr;
}

double stream_read_gbps(const uint8_t* data, size_t bytes, ThreadPool& pool) {
  static const ReadKernel read = best_read_kernel(detect_cpu());
  // Whole 256-byte blocks from the first 64-byte boundary: what the read kernels take.
  const uint8_t* start = data + (64 - reinterpret_cast<uintptr_t>(data) % 64) % 64;
  const int64_t blocks = static_cast<int64_t>(bytes - static_cast<size_t>(start - data)) / 256;
  if (blocks <= 0) return 0;
  double t0 = now_seconds();
  pool.run([&](int ti, int n) {
    int64_t b = blocks * ti / n * 256, e = blocks * (ti + 1) / n * 256;
    g_sink.fetch_add(read(start + b, static_cast<size_t>(e - b)), std::memory_order_relaxed);
  });
  return static_cast<double>(blocks * 256) / (now_seconds() - t0) / 1e9;
}

HardwareProfile run_probe(const ProbeOptions& options) {
  HardwareProfile prof;
  prof.created = utc_now_iso8601();
  prof.quick = options.quick;
  prof.cpu = detect_cpu();
  double loads[1] = {0};
  if (getloadavg(loads, 1) == 1) prof.load_average = loads[0];
  int max_threads = options.threads > 0 ? options.threads : prof.cpu.logical_cpus;
  prof.threads = max_threads;
  std::vector<int64_t> sizes = options.sizes.empty()
                                   ? default_sizes(options.quick, prof.cpu.memory_bytes)
                                   : options.sizes;
  for (int64_t s : sizes)
    if (s < 256 * max_threads) fail("probe: buffer size {} is too small for {} threads", s, max_threads);
  int reps = options.repetitions > 0 ? options.repetitions : (options.quick ? 60 : 150);
  int64_t min_bytes = options.min_bytes_per_rep > 0 ? options.min_bytes_per_rep : 64 * kMiB;
  double seconds = options.compute_seconds > 0 ? options.compute_seconds : 0.004;

  AlignedBuffer buffer(*std::max_element(sizes.begin(), sizes.end()));
  ReadKernel read = best_read_kernel(prof.cpu);
  std::vector<ComputeKernel> kernels = available_kernels(prof.cpu, prof.peaks);
  std::vector<ComputePeak> measured;
  for (const auto& k : kernels) measured.push_back({k.path, k.isa, "measured", {}});

  for (int nt : thread_counts(max_threads)) {
    ThreadPool pool(nt);
    for (int64_t s : sizes) {
      WindowRates r = measure_bandwidth(pool, read, buffer.data, s, reps, min_bytes);
      prof.bandwidth.push_back({s, nt, r.median, r.best});
    }
    for (size_t i = 0; i < kernels.size(); ++i)
      measured[i].by_threads.push_back({nt, measure_compute(pool, kernels[i], reps, seconds)});
  }
  measured.insert(measured.end(), prof.peaks.begin(), prof.peaks.end());
  prof.peaks = std::move(measured);
  int64_t largest = *std::max_element(sizes.begin(), sizes.end());
  for (const auto& b : prof.bandwidth)
    if (b.bytes == largest && b.threads == max_threads) {
      prof.dram_read_gbps = b.gbps;
      prof.dram_read_peak_gbps = b.peak_gbps;
    }
  return prof;
}

AllreduceProfile fit_allreduce(int ranks, std::string transport, std::vector<AllreduceSample> samples) {
  if (samples.size() < 2) fail("an allreduce profile needs at least two message sizes");
  std::sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
  AllreduceProfile a{ranks, std::move(transport), samples.front().seconds, 0, std::move(samples)};
  const AllreduceSample& largest = a.samples.back();
  a.beta_bytes_per_s = static_cast<double>(largest.bytes) / std::max(largest.seconds - a.alpha_s, 1e-12);
  return a;
}

double AllreduceProfile::seconds(double bytes) const {
  if (bytes <= static_cast<double>(samples.front().bytes)) return samples.front().seconds;
  for (size_t i = 1; i < samples.size(); ++i) {
    const AllreduceSample &lo = samples[i - 1], &hi = samples[i];
    if (bytes > static_cast<double>(hi.bytes)) continue;
    const double f = (bytes - lo.bytes) / static_cast<double>(hi.bytes - lo.bytes);
    return lo.seconds + f * (hi.seconds - lo.seconds);
  }
  return samples.back().seconds + (bytes - samples.back().bytes) / beta_bytes_per_s;
}

nlohmann::json profile_to_json(const HardwareProfile& p) {
  using nlohmann::json;
  json bw = json::array();
  for (const auto& b : p.bandwidth)
    bw.push_back({{"bytes", b.bytes}, {"threads", b.threads}, {"gbps", b.gbps}, {"peak_gbps", b.peak_gbps}});
  json peaks = json::object();
  for (const auto& pk : p.peaks) {
    json by = json::array();
    for (const auto& t : pk.by_threads) by.push_back({{"threads", t.threads}, {"ops_per_s", t.ops_per_s}});
    json entry = {{"status", pk.status}};
    if (pk.status == "measured") {
      entry["isa"] = pk.isa;
      entry["ops_per_s"] = pk.ops_per_s(p.threads);
      entry["by_threads"] = by;
    }
    peaks[pk.path] = entry;
  }
  nlohmann::json j = {
      {"schema", "tps.profile/1"},
      {"probe_version", p.probe_version},
      {"created", p.created},
      {"quick", p.quick},
      {"load_average_1m", p.load_average},
      {"cpu", {{"model", p.cpu.model},
               {"vendor", p.cpu.vendor},
               {"logical_cpus", p.cpu.logical_cpus},
               {"isa", p.cpu.isa}}},
      {"caches", {{"l1d_bytes", p.cpu.l1d_bytes},
                  {"l2_bytes", p.cpu.l2_bytes},
                  {"l3_bytes", p.cpu.l3_bytes},
                  {"source", p.cpu.cache_source}}},
      {"memory_bytes", p.cpu.memory_bytes},
      {"threads", p.threads},
      {"dram_read_gbps", p.dram_read_gbps},
      {"dram_read_peak_gbps", p.dram_read_peak_gbps},
      {"bandwidth", bw},
      {"peaks", peaks},
  };
  if (p.allreduce) {
    json samples = json::array();
    for (const auto& s : p.allreduce->samples) samples.push_back({{"bytes", s.bytes}, {"seconds", s.seconds}});
    j["allreduce"] = {{"ranks", p.allreduce->ranks},
                      {"transport", p.allreduce->transport},
                      {"alpha_s", p.allreduce->alpha_s},
                      {"beta_bytes_per_s", p.allreduce->beta_bytes_per_s},
                      {"samples", samples}};
  }
  return j;
}

namespace {

template <typename T>
T field(const nlohmann::json& j, const char* key, const char* where) {
  if (!j.is_object() || !j.contains(key)) fail("profile: missing field '{}' in {}", key, where);
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    fail("profile: field '{}' in {} has the wrong type", key, where);
  }
}

}  // namespace

HardwareProfile profile_from_json(const nlohmann::json& j) {
  HardwareProfile p;
  std::string schema = field<std::string>(j, "schema", "the profile");
  if (schema != "tps.profile/1") fail("profile: unknown schema '{}' (expected tps.profile/1)", schema);
  p.probe_version = j.value("probe_version", 1);
  p.created = j.value("created", "");
  p.quick = j.value("quick", false);
  p.load_average = j.value("load_average_1m", 0.0);
  const auto& cpu = j.contains("cpu") ? j["cpu"] : nlohmann::json::object();
  p.cpu.model = field<std::string>(cpu, "model", "cpu");
  p.cpu.vendor = cpu.value("vendor", "");
  p.cpu.logical_cpus = field<int>(cpu, "logical_cpus", "cpu");
  p.cpu.isa = cpu.value("isa", std::vector<std::string>{});
  if (j.contains("caches")) {
    const auto& c = j["caches"];
    p.cpu.l1d_bytes = c.value("l1d_bytes", int64_t{0});
    p.cpu.l2_bytes = c.value("l2_bytes", int64_t{0});
    p.cpu.l3_bytes = c.value("l3_bytes", int64_t{0});
    p.cpu.cache_source = c.value("source", "");
  }
  p.cpu.memory_bytes = field<int64_t>(j, "memory_bytes", "the profile");
  p.threads = field<int>(j, "threads", "the profile");
  p.dram_read_gbps = field<double>(j, "dram_read_gbps", "the profile");
  if (!(p.dram_read_gbps > 0)) fail("profile: dram_read_gbps must be positive");
  p.dram_read_peak_gbps = j.value("dram_read_peak_gbps", p.dram_read_gbps);
  if (!j.contains("bandwidth") || !j["bandwidth"].is_array()) fail("profile: missing array 'bandwidth'");
  for (const auto& b : j["bandwidth"]) {
    BandwidthSample row{field<int64_t>(b, "bytes", "a bandwidth row"), field<int>(b, "threads", "a bandwidth row"),
                        field<double>(b, "gbps", "a bandwidth row"), 0};
    row.peak_gbps = b.value("peak_gbps", row.gbps);  // profiles before peak_gbps kept only one figure
    p.bandwidth.push_back(row);
  }
  if (!j.contains("peaks") || !j["peaks"].is_object()) fail("profile: missing object 'peaks'");
  for (const auto& [path, e] : j["peaks"].items()) {
    ComputePeak pk{path, e.value("isa", ""), field<std::string>(e, "status", "a peak"), {}};
    if (pk.status == "measured") {
      if (!e.contains("by_threads") || !e["by_threads"].is_array()) fail("profile: peak '{}' lacks by_threads", path);
      for (const auto& t : e["by_threads"])
        pk.by_threads.push_back({field<int>(t, "threads", "by_threads"), field<double>(t, "ops_per_s", "by_threads")});
    }
    p.peaks.push_back(std::move(pk));
  }
  if (j.contains("allreduce")) {
    const auto& a = j["allreduce"];
    std::vector<AllreduceSample> samples;
    if (!a.contains("samples") || !a["samples"].is_array()) fail("profile: allreduce lacks samples");
    for (const auto& s : a["samples"])
      samples.push_back({field<int64_t>(s, "bytes", "an allreduce sample"), field<double>(s, "seconds", "an allreduce sample")});
    p.allreduce = fit_allreduce(field<int>(a, "ranks", "allreduce"), a.value("transport", ""), std::move(samples));
  }
  return p;
}

HardwareProfile load_profile(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail("cannot open profile '{}'", path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f);
  } catch (const nlohmann::json::parse_error& e) {
    fail("profile '{}' is not valid JSON: {}", path, e.what());
  }
  return profile_from_json(j);
}

}  // namespace tps
