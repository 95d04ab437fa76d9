// CPU feature detection and the process-wide choice of instruction set.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/amx_tiles.h"
#include "core/cpu_features.h"
#include "core/error.h"
#include "core/trial_run.h"
#include "kernels/matmul.h"
#include "kernels/matmul_kernels.h"

namespace tps {

namespace {

// What the CPU runs. AMX also needs Linux's grant of the tile state and the kernels'
// agreement with AVX-512 on this CPU, which is checked only when AMX is first asked
// for (amx_status): the check takes tens of milliseconds.
struct Support {
  bool flags[kIsaCount];
  bool gfni, avx512_bf16;
  Support() {
    const CpuFeatures f = read_cpu_features();
    gfni = f.gfni;
    avx512_bf16 = f.avx512bf16;
    for (int i = 0; i < kIsaCount; ++i) flags[i] = isa_runs_on(static_cast<Isa>(i), f);
  }
};

const Support& support() {
  static const Support s;
  return s;
}

// The check runs in a child process (run_in_child): a kernel that faults on this CPU
// then ends the child, and this process stays on AVX-512.
AmxStatus check_amx() {
  if (!support().flags[static_cast<int>(Isa::kAmx)]) return AmxStatus::kAbsent;
  if (!request_amx_tile_state()) return AmxStatus::kNotGranted;
  const TrialRun check = run_in_child([] { return agrees_with_avx512(*isa_kernels_amx()); });
  if (check.outcome == TrialOutcome::kTrue) return AmxStatus::kUsable;
  std::fprintf(stderr, "tps: warning: the AMX kernels %s on this CPU; using AVX-512\n",
               trial_failure(check, "disagree with the AVX-512 kernels").c_str());
  return AmxStatus::kDisagrees;
}

Isa best_supported(Isa cap) {
  for (int i = static_cast<int>(cap); i > 0; --i)
    if (cpu_supports(static_cast<Isa>(i))) return static_cast<Isa>(i);
  return Isa::kScalar;
}

// AMX only when asked for: on the one Sapphire Rapids measured (issue 23) its kernels
// were slower than AVX-512 for prefill and batched decode, so the default stops below it.
Isa initial_isa() {
  Isa cap = kDefaultIsaCap;
  if (const char* env = std::getenv("TPS_ISA"); env != nullptr && *env != '\0') {
    std::string v = env;
    if (v == "scalar") cap = Isa::kScalar;
    else if (v == "avx2") cap = Isa::kAvx2;
    else if (v == "avx_vnni") cap = Isa::kAvxVnni;
    else if (v == "avx512") cap = Isa::kAvx512;
    else if (v == "amx") cap = Isa::kAmx;
    else fail("TPS_ISA={} is not one of scalar, avx2, avx_vnni, avx512, amx", v);
  }
  return best_supported(cap);
}

std::atomic<int>& active_slot() {
  static std::atomic<int> slot{static_cast<int>(initial_isa())};
  return slot;
}

bool float_math_runs(FloatMath m) { return m == FloatMath::kF32 || cpu_has_avx512_bf16(); }

FloatMath initial_float_math() {
  FloatMath m = FloatMath::kF32;
  if (const char* env = std::getenv("TPS_FLOAT_MATH"); env != nullptr && *env != '\0') {
    std::string v = env;
    if (v == "bf16") m = FloatMath::kBf16;
    else if (v != "f32") fail("TPS_FLOAT_MATH={} is not one of f32, bf16", v);
  }
  // A user's choice must be one the kernels take (set_float_math, for tests, needs only
  // the CPU: kernels without a bf16 tile, under a lower TPS_ISA, use f32).
  if (!float_math_runs(m) || (m == FloatMath::kBf16 && initial_isa() < Isa::kAvx512))
    fail("TPS_FLOAT_MATH=bf16 needs a CPU with AVX512-BF16 and the AVX-512 kernels (this one: {}, {})",
         cpu_has_avx512_bf16() ? "AVX512-BF16" : "no AVX512-BF16", isa_name(initial_isa()));
  return m;
}

std::atomic<int>& float_math_slot() {
  static std::atomic<int> slot{static_cast<int>(initial_float_math())};
  return slot;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvxVnni: return "avx_vnni";
    case Isa::kAvx512: return "avx512";
    case Isa::kAmx: return "amx";
  }
  return "?";
}

bool isa_runs_on(Isa isa, const CpuFeatures& f) {
  const bool avx2 = f.avx2 && f.fma;  // F16C came before either
  // No BF16: the AVX-512 kernels do not use it, and Ice Lake and Cascade Lake lack it.
  const bool avx512 = avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni;
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return avx2;
    case Isa::kAvxVnni: return avx2 && f.avx_vnni;
    case Isa::kAvx512: return avx512;
    case Isa::kAmx: return avx512 && f.gfni && f.amx_tile && f.amx_int8 && f.amx_bf16;
  }
  return false;
}

bool cpu_supports(Isa isa) {
  if (isa == Isa::kAmx) return amx_status() == AmxStatus::kUsable;
  return support().flags[static_cast<int>(isa)];
}

bool cpu_has_gfni() { return support().gfni; }

bool cpu_has_avx512_bf16() { return support().avx512_bf16 && support().flags[static_cast<int>(Isa::kAvx512)]; }

const char* float_math_name(FloatMath m) { return m == FloatMath::kBf16 ? "bf16" : "f32"; }

FloatMath active_float_math() { return static_cast<FloatMath>(float_math_slot().load(std::memory_order_relaxed)); }

void set_float_math(FloatMath m) {
  if (!float_math_runs(m)) fail("this CPU does not run the {} float math", float_math_name(m));
  float_math_slot().store(static_cast<int>(m), std::memory_order_relaxed);
}

AmxStatus amx_status() {
  static const AmxStatus status = check_amx();
  return status;
}

Isa active_isa() { return static_cast<Isa>(active_slot().load(std::memory_order_relaxed)); }

void set_active_isa(Isa isa) {
  if (!cpu_supports(isa)) fail("this CPU does not support the {} instruction set", isa_name(isa));
  active_slot().store(static_cast<int>(isa), std::memory_order_relaxed);
}

}  // namespace tps
