#pragma once
// Tensor element types with their GGUF/ggml ids and block layouts.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace tps {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
};

struct GgmlTypeInfo {
  const char* name;    // as llama.cpp spells it: "q4_0", "f16", ...
  int64_t block_size;  // elements per block
  size_t block_bytes;  // bytes per block
};

// nullopt for ids that are not known at all.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id);
const GgmlTypeInfo& type_info(GgmlType t);  // t must be known
const char* type_name(GgmlType t);
// Parses "q4_0", "Q4_K", "f16", ...; nullopt when unknown.
std::optional<GgmlType> parse_type_name(const std::string& name);
// Bytes of a row of n elements; n must be a multiple of the block size.
size_t row_bytes(GgmlType t, int64_t n);

}  // namespace tps
