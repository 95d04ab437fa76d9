#pragma once

namespace tps {

// p, hidden from the optimizer: loads through the result are not merged with loads
// through p (volatile: two calls on one pointer give two). With AVX-512 each FMA then
// takes its scalar as an embedded broadcast from memory instead of sharing one
// vbroadcastss with other FMAs. On Zen 4 such broadcasts compete with the conversions
// of halves: a loop of 16 FMAs, 8 broadcasts and 2 vcvtph2ps takes 18 cycles, with
// embedded broadcasts 16, as the FMAs alone. Same products in the same order.
template <typename T>
[[gnu::always_inline]] inline T* unmerged(T* p) {
  asm volatile("" : "+r"(p));
  return p;
}

}  // namespace tps
