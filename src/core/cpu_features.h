#pragma once
// CPUID bits that __builtin_cpu_supports does not name (GCC 12), for the kernels'
// dispatch and the hardware probe alike.
#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace tps {

// AVX-VNNI: VEX-encoded vpdpbusd on 256 bits, CPUID.(EAX=7, ECX=1):EAX bit 4.
inline bool cpu_has_avx_vnni() {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 1, &a, &b, &c, &d) && ((a >> 4) & 1u) != 0;
#else
  return false;
#endif
}

}  // namespace tps
