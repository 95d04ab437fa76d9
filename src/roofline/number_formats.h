#pragma once
// Storage formats of weights and KV cache as the roofline counts them: bits per value
// (block formats include their scales) and the compute path a matmul on them runs on.
#include <string>
#include <vector>

namespace tps {

struct WeightFormat {
  std::string name;                        // "q4_0"
  double bits_per_weight;                  // 4.5: 32 4-bit values + one f16 scale per block
  std::vector<std::string> compute_paths;  // preferred first: "int8", then fallbacks
};

struct KvFormat {
  std::string name;
  double bytes_per_value;
};

const std::vector<WeightFormat>& weight_formats();
const std::vector<KvFormat>& kv_formats();
// Throw tps::Error listing the known names.
const WeightFormat& find_weight_format(const std::string& name);
const KvFormat& find_kv_format(const std::string& name);

}  // namespace tps
