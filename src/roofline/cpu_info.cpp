#include "roofline/cpu_info.h"

#include <cpuid.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>

#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/matmul.h"

namespace tps {

namespace {

std::string brand_string() {
  unsigned regs[12] = {};
  unsigned max_ext = __get_cpuid_max(0x80000000u, nullptr);
  if (max_ext < 0x80000004u) return {};
  for (unsigned i = 0; i < 3; ++i)
    __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
  char text[49] = {};
  std::memcpy(text, regs, 48);
  std::string s = text;
  size_t b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

std::string vendor_string() {
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return {};
  char text[13] = {};
  std::memcpy(text, &b, 4);
  std::memcpy(text + 4, &d, 4);
  std::memcpy(text + 8, &c, 4);
  return text;
}

// Sizes like "48K" or "32768K" from /sys/devices/system/cpu/cpu0/cache/indexN/size.
int64_t parse_size(const std::string& s) {
  if (s.empty()) return 0;
  int64_t v = std::atoll(s.c_str());
  char unit = s.find_first_not_of("0123456789") != std::string::npos
                  ? s[s.find_first_not_of("0123456789")] : ' ';
  if (unit == 'K') v <<= 10;
  if (unit == 'M') v <<= 20;
  if (unit == 'G') v <<= 30;
  return v;
}

std::string read_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

// sysfs is authoritative where present; containers and some VMs lack it.
bool caches_from_sysfs(CpuInfo& info) {
  bool any = false;
  for (int i = 0; i < 8; ++i) {
    std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::string level = read_line(dir + "level");
    if (level.empty()) continue;
    std::string type = read_line(dir + "type");
    int64_t size = parse_size(read_line(dir + "size"));
    if (level == "1" && type == "Data") info.l1d_bytes = size;
    if (level == "2") info.l2_bytes = size;
    if (level == "3") info.l3_bytes = size;
    any = true;
  }
  return any;
}

void caches_from_sysconf(CpuInfo& info) {
  info.l1d_bytes = std::max<long>(0, sysconf(_SC_LEVEL1_DCACHE_SIZE));
  info.l2_bytes = std::max<long>(0, sysconf(_SC_LEVEL2_CACHE_SIZE));
  info.l3_bytes = std::max<long>(0, sysconf(_SC_LEVEL3_CACHE_SIZE));
}

}  // namespace

CpuInfo detect_cpu() {
  CpuInfo info;
  info.model = brand_string();
  info.vendor = vendor_string();
  info.logical_cpus = ThreadPool::default_threads();
  const CpuFeatures f = read_cpu_features();
  // The kernels' own test of each path, so the probe measures the roofs they run on.
  info.avx2 = isa_runs_on(Isa::kAvx2, f);
  info.avx_vnni = isa_runs_on(Isa::kAvxVnni, f);
  info.avx512 = isa_runs_on(Isa::kAvx512, f);
  info.avx512_vnni = info.avx512 && f.avx512vnni;
  info.avx512_bf16 = info.avx512 && f.avx512bf16;
  info.amx_int8 = f.amx_tile && f.amx_int8;
  info.amx_bf16 = f.amx_tile && f.amx_bf16;
  if (info.avx2) info.isa.push_back("avx2");
  if (info.avx_vnni) info.isa.push_back("avx_vnni");
  if (info.avx512) info.isa.push_back("avx512");
  if (info.avx512_vnni) info.isa.push_back("avx512_vnni");
  if (info.avx512_bf16) info.isa.push_back("avx512_bf16");
  if (info.amx_int8) info.isa.push_back("amx_int8");
  if (info.amx_bf16) info.isa.push_back("amx_bf16");
  if (caches_from_sysfs(info)) {
    info.cache_source = "sysfs";
  } else {
    caches_from_sysconf(info);
    info.cache_source = "sysconf";
  }
  info.memory_bytes = int64_t{sysconf(_SC_PHYS_PAGES)} * sysconf(_SC_PAGESIZE);
  return info;
}

}  // namespace tps
