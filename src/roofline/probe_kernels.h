#pragma once
// The loops `tps probe` times, one set per instruction set (probe_kernels_avx2.cpp,
// probe_kernels_avx512.cpp, probe_kernels_amx.cpp are compiled with their ISA flags; the
// probe calls only those the CPU supports).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tps {

// Reads bytes [p, p + n) with the widest loads of the ISA; n is a multiple of 256 and p is
// 64-byte aligned. The returned value depends on every byte so the loads stay.
using ReadKernel = uint64_t (*)(const uint8_t* p, size_t n);

// A multiply-accumulate loop on registers only (no memory traffic): the compute roof of
// one path. run(iterations) returns a value that depends on the work done.
struct ComputeKernel {
  const char* path;           // "f32", "bf16", "int8", "amx_int8", "amx_bf16"
  const char* isa;            // the instructions, e.g. "avx512 vfmadd231ps"
  double ops_per_iteration;   // a multiply-add counts as 2 ops
  double (*run)(int64_t iterations);
};

// The read kernels' loop for a vector V of kBytes: load(at) reads one, add(a, b) sums
// 64-bit lanes. Two accumulators per half keep loads independent.
template <typename V, size_t kBytes, typename Load, typename Add>
V read_two_halves(const uint8_t* p, size_t n, Load load, Add add) {
  V a0 = V{}, a1 = V{}, a2 = V{}, a3 = V{};
  const size_t half = n / 512 * 256;
  const uint8_t* q = p + half;
  for (size_t i = 0; i < half; i += 2 * kBytes) {
    a0 = add(a0, load(p + i));
    a1 = add(a1, load(p + i + kBytes));
    a2 = add(a2, load(q + i));
    a3 = add(a3, load(q + i + kBytes));
  }
  for (size_t i = 2 * half; i < n; i += kBytes) a0 = add(a0, load(p + i));  // an odd block
  return add(add(a0, a1), add(a2, a3));
}

// acc = insn(acc, a, b) on four accumulator registers (AT&T operand order). GCC 12
// copies each VNNI or BF16 dot's accumulator through another register every iteration
// when the chains are an array of intrinsics (measured on Ice Lake: vpdpbusd at 4.0 per
// ns, not the 5.5 it issues), so the probes' dot chains are named registers in
// assembly.
#define TPS_FOUR_CHAINS(insn, a, b, c0, c1, c2, c3)                                                      \
  asm(insn " %[y], %[x], %0\n\t" insn " %[y], %[x], %1\n\t" insn " %[y], %[x], %2\n\t" insn " %[y], %[x], %3" \
      : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3)                                                             \
      : [x] "v"(a), [y] "v"(b))

// Streaming reads of n bytes (whole 256-byte blocks, 64-byte aligned): the sum of its
// 64-bit words. Each reads its two halves side by side, two memory streams, as the
// one-token matmul does: measured here, 1-9 % more bandwidth than one stream.
uint64_t read_kernel_scalar(const uint8_t* p, size_t n);
uint64_t read_kernel_avx2(const uint8_t* p, size_t n);
uint64_t read_kernel_avx512(const uint8_t* p, size_t n);

std::vector<ComputeKernel> compute_kernels_scalar();
std::vector<ComputeKernel> compute_kernels_avx2();      // f32 FMA, int8 vpmaddubsw
ComputeKernel int8_kernel_avx_vnni();                    // int8 vpdpbusd on 256 bits
std::vector<ComputeKernel> compute_kernels_avx512();    // f32 FMA (+ bf16, int8 VNNI)
std::vector<ComputeKernel> compute_kernels_amx();       // needs the OS to grant tile state

}  // namespace tps
