#include "quant/ggml_type.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace tps {

namespace {

struct Entry {
  uint32_t id;
  GgmlTypeInfo info;
};

constexpr std::array kTypes = {
    Entry{0, {"f32", 1, 4}},       Entry{1, {"f16", 1, 2}},       Entry{2, {"q4_0", 32, 18}},
    Entry{3, {"q4_1", 32, 20}},    Entry{6, {"q5_0", 32, 22}},    Entry{7, {"q5_1", 32, 24}},
    Entry{8, {"q8_0", 32, 34}},    Entry{9, {"q8_1", 32, 36}},    Entry{10, {"q2_k", 256, 84}},
    Entry{11, {"q3_k", 256, 110}}, Entry{12, {"q4_k", 256, 144}}, Entry{13, {"q5_k", 256, 176}},
    Entry{14, {"q6_k", 256, 210}}, Entry{15, {"q8_k", 256, 292}}, Entry{20, {"iq4_nl", 32, 18}},
    Entry{23, {"iq4_xs", 256, 136}}, Entry{24, {"i8", 1, 1}},
    Entry{25, {"i16", 1, 2}},      Entry{26, {"i32", 1, 4}},      Entry{27, {"i64", 1, 8}},
    Entry{28, {"f64", 1, 8}},      Entry{30, {"bf16", 1, 2}},
};

}  // namespace

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t id) {
  for (const auto& e : kTypes)
    if (e.id == id) return e.info;
  return std::nullopt;
}

const GgmlTypeInfo& type_info(GgmlType t) {
  for (const auto& e : kTypes)
    if (e.id == static_cast<uint32_t>(t)) return e.info;
  return kTypes[0].info;  // unreachable for enum values
}

const char* type_name(GgmlType t) { return type_info(t).name; }

std::optional<GgmlType> parse_type_name(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& e : kTypes)
    if (lower == e.info.name) return static_cast<GgmlType>(e.id);
  return std::nullopt;
}

size_t row_bytes(GgmlType t, int64_t n) {
  const auto& info = type_info(t);
  return static_cast<size_t>(n / info.block_size) * info.block_bytes;
}

}  // namespace tps
