#pragma once
// What the files that compile the AVX-512 panel kernels (matmul_avx512_panels.inc)
// include first: matmul_avx512.cpp, matmul_avx512_gfni.cpp, matmul_amx.cpp,
// matmul_amx_emulated_avx512.cpp.

// GCC 12's AVX-512 headers build casts and reductions from self-initialized
// "undefined" vectors, which -Wall reports once inlined: a spurious warning.
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)  // clang (the fuzz build) has no such warning and says so
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/amx_tiles.h"
#include "kernels/matmul_kernels.h"
