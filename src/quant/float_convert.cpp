// Scalar half/bfloat16 conversions (bit manipulation, so they need no F16C and round
// exactly like the hardware: to nearest, ties to even).
#include <cstring>

#include "quant/quantize.h"

namespace tps {

namespace {
uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F, man = h & 0x3FF;
  if (exp == 0) {  // zero or subnormal: man * 2^-24, exact in f32
    float v = static_cast<float>(man) * 0x1p-24f;
    return (sign != 0u) ? -v : v;
  }
  if (exp == 31) return float_of(sign | 0x7F800000u | (man << 13));
  return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t f32_to_f16(float f) {
  uint32_t x = bits_of(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  x &= 0x7FFFFFFF;
  if (x > 0x7F800000) return sign | 0x7E00;  // NaN stays a (quiet) NaN
  if (x >= 0x47800000) return sign | 0x7C00;  // >= 65536 (and inf): inf
  if (x < 0x38800000) {                       // below the smallest normal half, 2^-14
    if (x < 0x33000000) return sign;          // below 2^-25: rounds to zero
    int e = static_cast<int>(x >> 23);
    uint32_t m = (x & 0x7FFFFF) | 0x800000;
    int shift = 126 - e;  // to units of 2^-24
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t h = (x - 0x38000000) >> 13, rem = x & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;  // may carry into inf: correct
  return static_cast<uint16_t>(sign | h);
}

float bf16_to_f32(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }

uint16_t f32_to_bf16(float f) {
  uint32_t x = bits_of(f);
  if ((x & 0x7FFFFFFF) > 0x7F800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7FFF + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

}  // namespace tps
