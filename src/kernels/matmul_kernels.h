#pragma once
// The per-ISA matmul implementations behind matmul(). Each ISA file offers kernels for
// the weight types it accelerates and returns nullptr for the others, which fall back
// to the next ISA down and finally to the scalar kernel.
#include "kernels/matmul.h"

namespace tps {

using MatmulKernel = void (*)(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                              ThreadPool& pool);

void matmul_scalar(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

}  // namespace tps
