#pragma once
// The CPU's instruction-set extensions as CPUID reports them, read in one place for the
// kernels' dispatch and the hardware probe alike (GCC 12's __builtin_cpu_supports
// names neither AVX-VNNI nor AMX).
#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace tps {

struct CpuFeatures {
  bool avx2 = false, fma = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512vnni = false, avx512bf16 = false;
  bool avx_vnni = false;  // VEX-encoded vpdpbusd on 256 bits
  bool gfni = false;      // Galois-field byte instructions (gf2p8affineqb: any bit matrix per byte)
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;  // the CPU's; the OS must also grant tile state
};

inline CpuFeatures read_cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
  unsigned a, b, c, d;
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avx_vnni = ((a >> 4) & 1u) != 0;  // EAX bit 4
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {  // ECX bit 8; EDX bits 22, 24, 25
    f.gfni = ((c >> 8) & 1u) != 0;
    f.amx_bf16 = ((d >> 22) & 1u) != 0;
    f.amx_tile = ((d >> 24) & 1u) != 0;
    f.amx_int8 = ((d >> 25) & 1u) != 0;
  }
#endif
  return f;
}

}  // namespace tps
