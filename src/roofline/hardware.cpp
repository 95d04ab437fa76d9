#include "roofline/hardware.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace tps {

double Hardware::bandwidth_for(double bytes) const {
  const std::pair<int64_t, double>* fit = nullptr;
  for (const auto& s : bandwidth_by_size)
    if (s.first >= bytes && (!fit || s.first < fit->first)) fit = &s;
  return fit ? fit->second : bandwidth;
}

std::string Hardware::pick_path(const std::vector<std::string>& preferred) const {
  for (const auto& p : preferred)
    if (peaks.count(p) && peaks.at(p) > 0) return p;
  fail("hardware '{}' has none of the compute paths {}", id, fmt::join(preferred, ", "));
}

namespace {

constexpr double kGB = 1e9, kTB = 1e12, kT = 1e12, kGiB = 1073741824.0;

// NVIDIA datasheets print sparse tensor figures with an asterisk; dense = half of them.
const char* kH100 = "NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100), dense = sparse / 2";
const char* kH200 = "NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200), dense = sparse / 2";
const char* kA100 = "NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100), dense figures";
const char* kL40S = "NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s), dense = sparse / 2";
const char* kL4 = "NVIDIA L4 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/l4), dense = sparse / 2";
const char* kAda = "NVIDIA Ada Lovelace GPU architecture whitepaper v2.1, appendix A (GeForce RTX 4090), "
                   "dense, FP32 accumulate for FP16/BF16/FP8";
const char* kB200 = "NVIDIA HGX B200 specifications (nvidia.com/en-us/data-center/hgx), "
                    "8-GPU figures / 8, dense = sparse / 2";
const char* kMI300X = "AMD Instinct MI300X data sheet (amd.com/en/products/accelerators/instinct/mi300/mi300x.html), "
                      "dense figures";
const char* kLinkLatency = "assumption: ~2 us per ring step on NVLink/Infinity Fabric, ~5 us on PCIe "
                           "(order of nccl-tests small-message allreduce times)";
const char* kPcie4 = "PCI Express 4.0 x16: 16 GT/s x 16 lanes ~ 32 GB/s per direction";
const char* kPcie5 = "PCI Express 5.0 x16: 32 GT/s x 16 lanes ~ 64 GB/s per direction";

Hardware gpu(std::string id, std::string name, double mem_gb, double bw_tbs,
             std::map<std::string, double> peaks_tops, std::string link, double link_gbs, double latency_us,
             std::vector<std::pair<std::string, std::string>> sources) {
  Hardware h;
  h.id = std::move(id);
  h.name = std::move(name);
  h.kind = "gpu";
  h.memory_bytes = mem_gb * kGB;
  h.bandwidth = bw_tbs * kTB;
  for (auto& [k, v] : peaks_tops) h.peaks[k] = v * kT;
  h.link = std::move(link);
  h.link_bandwidth = link_gbs * kGB;
  h.link_latency = latency_us * 1e-6;
  h.sources = std::move(sources);
  return h;
}

std::vector<Hardware> build_database() {
  std::vector<Hardware> db;
  // Peaks in dense TFLOP/s (TOPS for int8). f32 = non-tensor FP32 vector rate.
  db.push_back(gpu("h100-sxm", "NVIDIA H100 SXM5 80GB", 80, 3.35,
                   {{"f32", 67}, {"tf32", 494.5}, {"f16", 989.5}, {"bf16", 989.5}, {"fp8", 1979}, {"int8", 1979}},
                   "NVLink 4 (900 GB/s bidirectional)", 450, 2,
                   {{"memory, bandwidth, peaks", kH100}, {"link bandwidth", kH100}, {"link latency", kLinkLatency}}));
  db.push_back(gpu("h100-pcie", "NVIDIA H100 PCIe 80GB", 80, 2.0,
                   {{"f32", 51}, {"tf32", 378}, {"f16", 756}, {"bf16", 756}, {"fp8", 1513}, {"int8", 1513}},
                   "PCIe 5.0 x16", 64, 5,
                   {{"memory, bandwidth, peaks", kH100}, {"link bandwidth", kPcie5}, {"link latency", kLinkLatency}}));
  db.push_back(gpu("h200", "NVIDIA H200 SXM 141GB", 141, 4.8,
                   {{"f32", 67}, {"tf32", 494.5}, {"f16", 989.5}, {"bf16", 989.5}, {"fp8", 1979}, {"int8", 1979}},
                   "NVLink 4 (900 GB/s bidirectional)", 450, 2,
                   {{"memory, bandwidth, peaks", kH200}, {"link bandwidth", kH200}, {"link latency", kLinkLatency}}));
  db.push_back(gpu("a100-40gb", "NVIDIA A100 SXM4 40GB", 40, 1.555,
                   {{"f32", 19.5}, {"tf32", 156}, {"f16", 312}, {"bf16", 312}, {"int8", 624}},
                   "NVLink 3 (600 GB/s bidirectional)", 300, 2,
                   {{"memory, bandwidth, peaks", kA100}, {"link bandwidth", kA100}, {"link latency", kLinkLatency}}));
  db.push_back(gpu("a100-80gb", "NVIDIA A100 SXM4 80GB", 80, 2.039,
                   {{"f32", 19.5}, {"tf32", 156}, {"f16", 312}, {"bf16", 312}, {"int8", 624}},
                   "NVLink 3 (600 GB/s bidirectional)", 300, 2,
                   {{"memory, bandwidth, peaks", kA100}, {"link bandwidth", kA100}, {"link latency", kLinkLatency}}));
  db.push_back(gpu("l40s", "NVIDIA L40S 48GB", 48, 0.864,
                   {{"f32", 91.6}, {"tf32", 183}, {"f16", 362}, {"bf16", 362}, {"fp8", 733}, {"int8", 733}},
                   "PCIe 4.0 x16", 32, 5,
                   {{"memory, bandwidth, peaks", kL40S}, {"link bandwidth", kPcie4}, {"link latency", kLinkLatency}}));
  db.push_back(gpu("l4", "NVIDIA L4 24GB", 24, 0.300,
                   {{"f32", 30.3}, {"tf32", 60}, {"f16", 121}, {"bf16", 121}, {"fp8", 242.5}, {"int8", 242.5}},
                   "PCIe 4.0 x16", 32, 5,
                   {{"memory, bandwidth, peaks", kL4}, {"link bandwidth", kPcie4}, {"link latency", kLinkLatency}}));
  db.push_back(gpu("rtx-4090", "NVIDIA GeForce RTX 4090 24GB", 24, 1.008,
                   {{"f32", 82.6}, {"tf32", 82.6}, {"f16", 165.2}, {"bf16", 165.2}, {"fp8", 330.3}, {"int8", 660.6}},
                   "PCIe 4.0 x16", 32, 5,
                   {{"memory, bandwidth, peaks", kAda}, {"link bandwidth", kPcie4}, {"link latency", kLinkLatency}}));
  db.push_back(gpu("b200", "NVIDIA B200 180GB (HGX)", 180, 8.0,
                   {{"f32", 75}, {"tf32", 1100}, {"f16", 2250}, {"bf16", 2250}, {"fp8", 4500}, {"int8", 4500},
                    {"fp4", 9000}},
                   "NVLink 5 (1.8 TB/s bidirectional)", 900, 2,
                   {{"memory, bandwidth, peaks", kB200}, {"link bandwidth", kB200}, {"link latency", kLinkLatency}}));
  db.push_back(gpu("mi300x", "AMD Instinct MI300X 192GB", 192, 5.3,
                   {{"f32", 163.4}, {"tf32", 653.7}, {"f16", 1307.4}, {"bf16", 1307.4}, {"fp8", 2614.9},
                    {"int8", 2614.9}},
                   "Infinity Fabric (7 links x 128 GB/s bidirectional)", 448, 2,
                   {{"memory, bandwidth, peaks", kMI300X}, {"link bandwidth", kMI300X}, {"link latency", kLinkLatency}}));
  {
    // Apple quotes memory and bandwidth; GPU FP32 = ALUs x 2 x clock (128 ALUs per GPU core).
    Hardware h = gpu("m2-max", "Apple M2 Max (38-core GPU, 96GB)", 96, 0.400, {{"f32", 13.6}, {"f16", 13.6}},
                     "", 0, 0,
                     {{"memory, bandwidth", "Apple newsroom 2023-01-17, 'Apple unveils M2 Pro and M2 Max'"},
                      {"peaks", "derived: 38 cores x 128 FP32 ALUs x 2 x 1.398 GHz; FP16 runs at the FP32 rate"}});
    db.push_back(h);
    Hardware m3 = gpu("m3-max", "Apple M3 Max (40-core GPU, 128GB)", 128, 0.400, {{"f32", 14.2}, {"f16", 14.2}},
                      "", 0, 0,
                      {{"memory, bandwidth", "Apple newsroom 2023-10-30, 'Apple unveils M3, M3 Pro, and M3 Max'"},
                       {"peaks", "derived: 40 cores x 128 FP32 ALUs x 2 x ~1.38 GHz; FP16 at the FP32 rate"}});
    db.push_back(m3);
  }
  {
    // Generic CPUs: bandwidth = channels x MT/s x 8 bytes; peaks = cores x ops/cycle x clock.
    Hardware desk = gpu("cpu-desktop", "generic desktop CPU: 8 cores AVX2 + AVX-VNNI, 2 x DDR5-5600, 64GB", 64 * kGiB / kGB,
                        0.0896, {{"f32", 1.152}, {"int8", 4.608}}, "", 0, 0,
                        {{"bandwidth", "JEDEC DDR5-5600: 2 channels x 5600 MT/s x 8 B = 89.6 GB/s"},
                         {"peaks", "derived: 8 cores x 4.5 GHz x (2 FMA x 8 lanes x 2 = 32 f32 ops; 128 int8 ops "
                                   "with 256-bit VNNI) per cycle"}});
    desk.kind = "cpu";
    db.push_back(desk);
    Hardware srv = gpu("cpu-server", "generic server CPU: 64 cores AVX-512 + VNNI + BF16, 12 x DDR5-4800, 768GB",
                       768 * kGiB / kGB, 0.4608, {{"f32", 12.3}, {"bf16", 24.6}, {"int8", 49.2}}, "", 0, 0,
                       {{"bandwidth", "JEDEC DDR5-4800: 12 channels x 4800 MT/s x 8 B = 460.8 GB/s"},
                        {"peaks", "derived: 64 cores x 3.0 GHz x (2 FMA x 16 lanes x 2 = 64 f32 ops; 128 bf16; "
                                  "256 int8 VNNI) per cycle"}});
    srv.kind = "cpu";
    db.push_back(srv);
    Hardware amx = gpu("cpu-server-amx", "generic server CPU with AMX: 56 cores, 8 x DDR5-4800, 512GB",
                       512 * kGiB / kGB, 0.3072, {{"f32", 7.2}, {"bf16", 114.7}, {"int8", 229.4}}, "", 0, 0,
                       {{"bandwidth", "JEDEC DDR5-4800: 8 channels x 4800 MT/s x 8 B = 307.2 GB/s"},
                        {"peaks", "derived: 56 cores x 2.0 GHz x (64 f32 FMA ops; AMX 1024 bf16 / 2048 int8 ops) "
                                  "per cycle, Intel optimization reference manual"}});
    amx.kind = "cpu";
    db.push_back(amx);
  }
  return db;
}

}  // namespace

const std::vector<Hardware>& hardware_database() {
  static const std::vector<Hardware> db = build_database();
  return db;
}

const Hardware& find_hardware(const std::string& id) {
  std::vector<std::string> ids;
  for (const auto& h : hardware_database()) {
    if (h.id == id) return h;
    ids.push_back(h.id);
  }
  fail("unknown hardware '{}' (known: {}; or --profile probe.json)", id, fmt::join(ids, ", "));
}

Hardware hardware_from_profile(const HardwareProfile& p, int threads, const std::string& kernel_path) {
  int t = threads > 0 ? threads : p.threads;
  Hardware h;
  h.id = "probe";
  h.name = fmt::format("{} ({} threads, probed {})", p.cpu.model, t, p.created);
  h.kind = "probe";
  h.memory_bytes = static_cast<double>(p.cpu.memory_bytes);
  int64_t largest = 0;
  for (const auto& b : p.bandwidth) largest = std::max(largest, b.bytes);
  h.bandwidth = p.bandwidth_gbps(largest, t) * 1e9;
  for (const auto& b : p.bandwidth)
    if (b.bytes < largest) h.bandwidth_by_size.push_back({b.bytes, p.bandwidth_gbps(b.bytes, t) * 1e9});
  auto measured = [&](const std::string& path) {
    const ComputePeak* pk = p.peak(path);
    return pk && pk->status == "measured" ? pk->ops_per_s(t) : 0.0;
  };
  // f32 always: attention runs on it.
  if (double f32 = measured("f32"); f32 > 0) h.peaks["f32"] = f32;
  if (!kernel_path.empty()) {
    const std::string format = kernel_path.rfind("amx_", 0) == 0 ? kernel_path.substr(4) : kernel_path;
    if (double v = measured(kernel_path); v > 0) h.peaks[format] = v;
  } else {
    // AMX, where measured, is the faster engine for the same number format.
    for (const auto& [path, amx] : {std::pair{"int8", "amx_int8"}, std::pair{"bf16", "amx_bf16"}}) {
      double v = std::max(measured(path), measured(amx));
      if (v > 0) h.peaks[path] = v;
    }
  }
  h.sources = {{"all figures", "measured by tps probe"}};
  if (p.allreduce) {
    h.link = fmt::format("MPI allreduce over {} ranks ({})", p.allreduce->ranks, p.allreduce->transport);
    h.link_latency = p.allreduce->alpha_s;
    h.link_bandwidth = p.allreduce->beta_bytes_per_s;
    h.allreduce = p.allreduce;
  }
  return h;
}

Hardware host_share(const Hardware& host, int ranks) {
  Hardware h = host;
  const double n = ranks;
  h.name = fmt::format("{}, one of {} ranks on it", host.name, ranks);
  h.memory_bytes /= n;
  h.bandwidth /= n;
  for (auto& [bytes, bw] : h.bandwidth_by_size) bw /= n;
  for (auto& [path, ops] : h.peaks) ops /= n;
  return h;
}

}  // namespace tps
