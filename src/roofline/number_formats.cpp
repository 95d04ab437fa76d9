#include "roofline/number_formats.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"

namespace tps {

namespace {

// Quantized matmuls run on int8 dot products (llama.cpp quantizes activations to 8 bits);
// where a device has no int8 path, on its 16-bit or f32 units.
const std::vector<std::string> kIntPaths = {"int8", "f16", "bf16", "f32"};

}  // namespace

const std::vector<WeightFormat>& weight_formats() {
  // Bits per weight include block scales: q8_0 = 32 x 8 bits + f16 scale = 34 bytes / 32.
  static const std::vector<WeightFormat> formats = {
      {"f32", 32, {"f32"}},
      {"f16", 16, {"f16", "f32"}},
      {"bf16", 16, {"bf16", "f16", "f32"}},
      {"fp8", 8, {"fp8", "f16", "bf16", "f32"}},
      {"int8", 8, kIntPaths},
      {"q8_0", 8.5, kIntPaths},
      {"q6_k", 6.5625, kIntPaths},
      {"q5_1", 6, kIntPaths},
      {"q5_0", 5.5, kIntPaths},
      {"q5_k", 5.5, kIntPaths},
      {"q4_1", 5, kIntPaths},
      {"q4_k_m", 4.85, kIntPaths},  // mix of q4_k and q6_k, llama.cpp's typical average
      {"q4_0", 4.5, kIntPaths},
      {"q4_k", 4.5, kIntPaths},
      {"iq4_nl", 4.5, kIntPaths},
      {"iq4_xs", 4.25, kIntPaths},
      {"int4", 4.125, kIntPaths},   // 4 bits + an f16 scale per 128 (GPTQ/AWQ style)
      {"q3_k", 3.4375, kIntPaths},
      {"q2_k", 2.625, kIntPaths},
  };
  return formats;
}

const std::vector<KvFormat>& kv_formats() {
  static const std::vector<KvFormat> formats = {
      {"f32", 4}, {"f16", 2}, {"bf16", 2}, {"q8_0", 34.0 / 32}, {"fp8", 1}, {"q4_0", 18.0 / 32},
  };
  return formats;
}

const WeightFormat& find_weight_format(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& f : weight_formats()) {
    if (f.name == name) return f;
    names.push_back(f.name);
  }
  fail("unknown weight type '{}' (known: {})", name, fmt::join(names, ", "));
}

const KvFormat& find_kv_format(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& f : kv_formats()) {
    if (f.name == name) return f;
    names.push_back(f.name);
  }
  fail("unknown KV type '{}' (known: {})", name, fmt::join(names, ", "));
}

}  // namespace tps
