#include "bench/bench_model.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "core/error.h"
#include "model/synth.h"

namespace tps {

namespace fs = std::filesystem;

namespace {

// Bumped when synthesized files change, so stale cached models are not reused.
constexpr int kSynthFormatVersion = 1;

}  // namespace

std::string tps_cache_dir() {
  fs::path dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) dir = fs::path(xdg) / "tps";
  else if (const char* home = std::getenv("HOME"); home && *home) dir = fs::path(home) / ".cache" / "tps";
  else dir = "/tmp/tps-cache";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) fail("cannot create the cache directory '{}': {}", dir.string(), ec.message());
  return dir.string();
}

std::string cached_synth_model(const std::string& preset, const std::string& type, uint64_t seed, float output_skew,
                               ThreadPool& pool, const std::function<void(const std::string&)>& status) {
  auto config = find_model_preset(preset);
  if (!config) fail("unknown preset '{}' (see `tps synth --list`)", preset);
  auto scheme = parse_weight_scheme(type);
  if (!scheme) fail("unknown weight type '{}'", type);
  const std::string skew = output_skew == 1.0f ? "" : fmt::format("-skew{}", output_skew);
  fs::path path = fs::path(tps_cache_dir()) /
                  fmt::format("synth-v{}-{}-{}-s{}{}.gguf", kSynthFormatVersion, preset, scheme->name, seed, skew);
  if (fs::exists(path)) {
    try {
      GgufFile::open(path.string());
      return path.string();
    } catch (const Error&) {
      // Damaged (e.g. an interrupted copy): make it again.
    }
  }
  status(fmt::format("synthesizing {} {} into {}", preset, scheme->name, path.string()));
  fs::path tmp = path;
  tmp += fmt::format(".tmp{}", ::getpid());
  try {
    synthesize_model({*config, *scheme, seed, "", output_skew}, tmp.string(), pool);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  fs::rename(tmp, path);
  return path.string();
}

BenchModelInfo describe_model(const GgufFile& file, const ModelConfig& config) {
  BenchModelInfo info;
  info.file = file.path();
  info.config = config;
  info.weight_bytes = static_cast<int64_t>(file.tensor_data_bytes());
  // The token embedding is a lookup (one row per token) unless it doubles as the output head.
  const bool lookup_only = file.find_tensor("output.weight") != nullptr;
  for (const auto& t : file.tensors())
    if (t.name != "token_embd.weight" || !lookup_only) info.step_weight_bytes += static_cast<int64_t>(t.nbytes);
  std::map<GgmlType, int64_t> bytes_by_type;
  for (const auto& t : file.tensors()) {
    info.params += t.n_elements();
    if (t.dims.size() >= 2) bytes_by_type[t.type] += static_cast<int64_t>(t.nbytes);
  }
  // The name llama.cpp's file type stands for, else the type holding most matrix bytes.
  int64_t file_type = file.get_int("general.file_type", -1);
  for (const auto& name : weight_scheme_names())
    if (parse_weight_scheme(name)->file_type() == file_type) info.weight_type = name;
  if (info.weight_type.empty() && !bytes_by_type.empty()) {
    auto best = bytes_by_type.begin();
    for (auto it = bytes_by_type.begin(); it != bytes_by_type.end(); ++it)
      if (it->second > best->second) best = it;
    info.weight_type = type_name(best->first);
  }
  return info;
}

}  // namespace tps
