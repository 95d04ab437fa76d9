// CPU feature detection and the process-wide choice of instruction set.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/amx_tiles.h"
#include "core/cpu_features.h"
#include "core/error.h"
#include "kernels/matmul.h"
#include "kernels/matmul_kernels.h"

namespace tps {

namespace {

// What the CPU runs. AMX also needs Linux's grant of the tile state and the kernels'
// agreement with AVX-512 on this CPU, which is checked only when AMX is first asked
// for (amx_status): the check takes tens of milliseconds.
struct Support {
  bool flags[kIsaCount];
  bool gfni;
  Support() {
    const CpuFeatures f = read_cpu_features();
    gfni = f.gfni;
    for (int i = 0; i < kIsaCount; ++i) flags[i] = isa_runs_on(static_cast<Isa>(i), f);
  }
};

const Support& support() {
  static const Support s;
  return s;
}

AmxStatus check_amx() {
  if (!support().flags[static_cast<int>(Isa::kAmx)]) return AmxStatus::kAbsent;
  if (!request_amx_tile_state()) return AmxStatus::kNotGranted;
  if (!agrees_with_avx512(*isa_kernels_amx())) {
    std::fprintf(stderr, "tps: warning: the AMX kernels disagree with the AVX-512 kernels on this CPU; using AVX-512\n");
    return AmxStatus::kDisagrees;
  }
  return AmxStatus::kUsable;
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
