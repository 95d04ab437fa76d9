#pragma once
// A model's roofline shape and storage from a GGUF file's metadata and tensor table.
#include <string>

#include "roofline/roofline_model.h"

namespace tps {

struct GgufModelInfo {
  RooflineModel model;
  std::string weight_type;   // the type holding most weight bytes, e.g. "q4_0"
  double bits_per_weight;    // all tensor bytes * 8 / all parameters
  int64_t weight_bytes;
  int64_t params;
};

GgufModelInfo read_gguf_model(const std::string& path);  // throws tps::Error

}  // namespace tps
