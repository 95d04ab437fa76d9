#pragma once
// Facts about the CPU the probe runs on: name, core count, instruction sets, caches, memory.
#include <cstdint>
#include <string>
#include <vector>

namespace tps {

struct CpuInfo {
  std::string model;          // brand string, e.g. "AMD EPYC 9B45"
  std::string vendor;         // "AuthenticAMD", "GenuineIntel", ...
  int logical_cpus = 0;       // CPUs this process may run on
  std::vector<std::string> isa;  // extensions that matter to the kernels, e.g. "avx512_vnni"
  // The kernels' paths (kernels/matmul.h isa_runs_on), so a roof is one they can reach.
  bool avx2 = false;          // with FMA
  bool avx_vnni = false;      // AVX2's vpdpbusd on 256 bits (VEX), also on CPUs without AVX-512
  bool avx512 = false;        // F + BW + VL + DQ + VNNI
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool amx_int8 = false;      // cpuid leaf 7 EDX bit 25 (and AMX-TILE)
  bool amx_bf16 = false;      // cpuid leaf 7 EDX bit 22 (and AMX-TILE)
  int64_t l1d_bytes = 0;      // per core
  int64_t l2_bytes = 0;       // per core
  int64_t l3_bytes = 0;       // as reported (may be shared, or a hypervisor's figure)
  std::string cache_source;   // "sysfs" or "sysconf" (glibc's cpuid decoding)
  int64_t memory_bytes = 0;   // physical memory
};

CpuInfo detect_cpu();

}  // namespace tps
