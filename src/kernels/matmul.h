#pragma once
// Matrix products of weights (any supported type) with f32 activations: the heart of
// the forward pass. One entry point; the implementation picks a kernel for the weight
// type and the best instruction set the CPU has (or the one forced for tests).
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/thread_pool.h"
#include "core/cpu_features.h"
#include "quant/ggml_type.h"

namespace tps {

// Instruction-set levels, each a superset of the paths below it that this build uses:
// kAvxVnni is AVX2 with VEX-encoded vpdpbusd (Intel since Alder Lake, AMD since Zen 5),
// which CPUs without AVX-512 have too.
enum class Isa { kScalar, kAvx2, kAvxVnni, kAvx512, kAmx };
constexpr int kIsaCount = 5;
const char* isa_name(Isa isa);
// The best ISA this CPU supports up to kDefaultIsaCap, unless
// TPS_ISA=scalar|avx2|avx_vnni|avx512|amx sets the cap. AMX is opt-in (TPS_ISA=amx)
// until it has been measured faster than AVX-512 on AMX hardware.
constexpr Isa kDefaultIsaCap = Isa::kAvx512;
Isa active_isa();
bool cpu_supports(Isa isa);
// Whether this CPU has GFNI, which the AVX-512 kernels use where it is there.
bool cpu_has_gfni();
// Whether a CPU with features f runs the kernels of `isa` (cpu_supports asks it of this
// CPU, and for AMX also the OS's grant of the tile state).
bool isa_runs_on(Isa isa, const CpuFeatures& f);
// Why the AMX path can be used or not: the CPU lacks it, Linux did not grant the tile
// state, or its kernels disagreed with AVX-512 on this CPU's check (run at the first
// call, which cpu_supports(Isa::kAmx) and TPS_ISA=amx make).
enum class AmxStatus { kAbsent, kNotGranted, kDisagrees, kUsable };
AmxStatus amx_status();
// Forces a path (tests and comparisons); must be supported by the CPU.
void set_active_isa(Isa isa);

// How float weights (F32, F16, BF16) multiply. kF32, the default: as stored, in f32
// FMAs. kBf16, opt-in (TPS_FLOAT_MATH=bf16): weights and activations rounded to bf16
// (8 mantissa bits; F16 keeps 11) and multiplied by AVX512-BF16's vdpbf16ps, at twice
// the rate of f32 FMAs, or with the AMX kernels (TPS_ISA=amx) by tdpbf16ps tiles: the
// same products, summed in another order (per 32 columns, the even and the odd ones
// apart), so the two paths may differ in the last bits. Its numerics differ from
// kF32's, so it has its own golden tolerance. On either path a token's result does not
// depend on the batch. kBf16 needs a CPU with AVX512-BF16 and the AVX-512 kernels.
enum class FloatMath { kF32, kBf16 };
const char* float_math_name(FloatMath m);
FloatMath active_float_math();
bool cpu_has_avx512_bf16();
// Tests and comparisons; kBf16 must be supported by the CPU. Under an ISA below AVX-512
// float weights then still multiply in f32 (those kernels have no bf16 tiles).
void set_float_math(FloatMath m);
// Which of the probe's compute paths (roofline/probe.h) a matmul of `tokens` tokens
// runs on with `isa`: "amx_int8" (tiles, enough tokens), "int8" (vpdpbusd or its AVX2
// form: activations quantized to 8 bits) for block-quantized weights; for float weights
// under FloatMath::kBf16 "amx_bf16" (tdpbf16ps, with TPS_ISA=amx) or "bf16"
// (vdpbf16ps); "f32" (FMA) for float weights and for the scalar path.
const char* compute_path(Isa isa, bool quantized_weights, int64_t tokens);
// Sets up the kernels of the active ISA now, as the first matmul would: under
// TPS_ISA=amx that forks a child for the tiles' checks and times them, which should
// happen while the process has one thread (main calls it first).
void prepare_kernels();

class PackedWeights;

// A weight matrix as stored in GGUF: `rows` output features, each a contiguous row of
// `cols` input features in `type` blocks. Optional `packed` data is a load-time
// repacked copy a kernel may prefer (owned elsewhere, see kernels/packed_weights.h);
// `data` must stay valid too (the scalar path reads it).
struct WeightMatrix {
  GgmlType type = GgmlType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  const uint8_t* data = nullptr;
  size_t row_bytes = 0;  // 0: rows are back to back
  const PackedWeights* packed = nullptr;
};

// y[t * rows + r] = sum_c W[r, c] * x[t * cols + c], for t < n_tokens.
void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

// One matrix of several applied to the same activations, and where its products go.
struct MatmulPart {
  const WeightMatrix* w;
  float* y;
};

constexpr size_t kMaxMatmulParts = 4;

// matmul() of each part with the same x (Q, K and V; gate and up). Parts of one type
// and width share one quantization of x and one parallel region over all their rows:
// for small matrices, the fixed cost per region is a large share of the work.
void matmul_parts(std::initializer_list<MatmulPart> parts, const float* x, int64_t n_tokens, ThreadPool& pool);

// Reference used as the test oracle: dequantize each row, dot in double precision.
void matmul_reference(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y);

}  // namespace tps
