#pragma once
// The model a bench measures: a GGUF given by the user, or a random-weight model of a
// preset's shape, synthesized once and kept in a cache directory for later runs.
#include <cstdint>
#include <functional>
#include <string>

#include "bench/bench_report.h"
#include "core/thread_pool.h"
#include "formats/gguf.h"
#include "model/model_config.h"

namespace tps {

// $XDG_CACHE_HOME/tps, else $HOME/.cache/tps, else /tmp/tps-cache (created on demand).
std::string tps_cache_dir();

// The cached GGUF for (preset, type, seed, output skew); synthesized (to a temporary
// name, then renamed) when absent or unreadable. `status` hears what is happening.
std::string cached_synth_model(const std::string& preset, const std::string& type, uint64_t seed, float output_skew,
                               ThreadPool& pool, const std::function<void(const std::string&)>& status);

// Sizes, parameter count and weight type name from the file's tensors and metadata.
BenchModelInfo describe_model(const GgufFile& file, const ModelConfig& config);

}  // namespace tps
