#pragma once
// The per-ISA tables behind kernels/ops.h (one compilation of ops_impl.inc each).
#include <cstdint>

#include "kernels/ops.h"

namespace tps {

struct OpsKernels {
  void (*axpy)(float, const float*, float*, int64_t);
  void (*rmsnorm)(const float*, const float*, int64_t, float, float*);
  void (*silu_mul)(const float*, const float*, int64_t, float*);
  // cos/sin: head_dim / 2 values for the position
  void (*rope)(float*, int64_t, int64_t, const float*, const float*, RopeStyle);
  void (*to_f16)(const float*, int64_t, uint16_t*, int64_t);
  void (*attend)(const AttentionQueries&, int64_t, float, const AttentionBlock*, int64_t, int64_t, int64_t, bool);
};

const OpsKernels& ops_kernels_baseline();  // no ISA flags: SSE2 on x86-64
const OpsKernels& ops_kernels_avx2();
const OpsKernels& ops_kernels_avx512();

}  // namespace tps
