#include "roofline/bench_results.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "core/error.h"
#include "roofline/estimator.h"
#include "roofline/number_formats.h"

namespace tps {

namespace {

std::string kind_of(const std::string& test, const std::string& where) {
  for (const char* k : {"pp", "tg"})
    if (test.rfind(k, 0) == 0) return k;
  if (test == "batched" || test == "load") return test;
  fail("{}: unknown test '{}' (expected ppN, tgN, batched or load)", where, test);
}

template <typename T>
T get(const nlohmann::json& j, const char* key, const std::string& where, std::optional<T> fallback = {}) {
  if (!j.contains(key) || j[key].is_null()) {
    if (fallback) return *fallback;
    fail("{}: missing field '{}'", where, key);
  }
  try {
    return j[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    fail("{}: field '{}' has the wrong type", where, key);
  }
}

MeasuredRun parse_row(const nlohmann::json& r, const std::string& where) {
  if (!r.is_object()) fail("{}: expected an object", where);
  MeasuredRun row;
  row.test = get<std::string>(r, "test", where);
  row.kind = kind_of(row.test, where);
  if (!r.contains("model") || !r["model"].is_object()) fail("{}: missing object 'model'", where);
  const auto& m = r["model"];
  std::string preset = get<std::string>(m, "preset", where + ".model", std::string{});
  std::string file = get<std::string>(m, "file", where + ".model", std::string{});
  if (m.contains("shape")) {
    row.model = roofline_model_from_json(m["shape"]);
  } else if (!preset.empty()) {
    row.model = find_roofline_preset(preset);
  } else {
    fail("{}.model: needs 'preset' (a known name) or 'shape'", where);
  }
  row.model_label = !preset.empty() ? preset : file;
  row.model.base.name = row.model_label;
  row.weight_type = get<std::string>(m, "weight_type", where + ".model");
  row.bits_per_weight = find_weight_format(row.weight_type).bits_per_weight;
  row.weight_bytes = get<int64_t>(m, "weight_bytes", where + ".model", int64_t{0});
  row.params = get<int64_t>(m, "params", where + ".model", int64_t{0});
  if (row.weight_bytes > 0 && row.params > 0) row.bits_per_weight = 8.0 * row.weight_bytes / row.params;
  if (double step_bytes = get<double>(m, "step_weight_bytes", where + ".model", 0.0); step_bytes > 0)
    row.bits_per_weight = step_bits_per_weight(row.model, step_bytes);
  row.kv_type = get<std::string>(r, "kv_type", where, std::string{"f16"});
  row.threads = get<int>(r, "threads", where, 0);
  row.compute_path = get<std::string>(r, "compute_path", where, std::string{});
  if (r.contains("tensor_parallel") && r["tensor_parallel"].is_object())
    row.threads *= get<int>(r["tensor_parallel"], "ranks", where + ".tensor_parallel", 1);
  row.batch = get<int64_t>(r, "batch", where, int64_t{1});
  row.prompt_tokens = get<int64_t>(r, "prompt_tokens", where, int64_t{0});
  row.gen_tokens = get<int64_t>(r, "gen_tokens", where, int64_t{0});
  row.depth = get<int64_t>(r, "depth", where, int64_t{0});
  row.tokens_per_s = get<double>(r, "tokens_per_s", where);
  row.std = get<double>(r, "std", where, 0.0);
  row.bytes_per_token = get<double>(r, "bytes_per_token", where, 0.0);
  if (!(row.tokens_per_s > 0)) fail("{}: tokens_per_s must be positive", where);
  if (row.batch < 1) fail("{}: batch must be at least 1", where);
  if (row.kind == "pp" && row.prompt_tokens < 1) fail("{}: a pp test needs prompt_tokens", where);
  if (row.kind != "pp" && row.gen_tokens < 1) fail("{}: a {} test needs gen_tokens", where, row.kind);
  const double repetitions = get<double>(r, "repetitions", where, 1.0);
  row.speculative = parse_speculative_run(r, double(row.gen_tokens * row.batch) * repetitions, where);
  return row;
}

}  // namespace

BenchResults parse_bench_results(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) fail("{}: expected a JSON object", where);
  std::string schema = get<std::string>(j, "schema", where);
  if (schema != "tps.bench/1") fail("{}: unknown schema '{}' (expected tps.bench/1)", where, schema);
  BenchResults out;
  if (j.contains("profile") && !j["profile"].is_null()) out.profile = profile_from_json(j["profile"]);
  if (!j.contains("results") || !j["results"].is_array() || j["results"].empty())
    fail("{}: needs a non-empty array 'results'", where);
  for (size_t i = 0; i < j["results"].size(); ++i)
    out.rows.push_back(parse_row(j["results"][i], where + ": results[" + std::to_string(i) + "]"));
  return out;
}

nlohmann::json read_results_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail("cannot open results '{}'", path);
  try {
    return nlohmann::json::parse(f);
  } catch (const nlohmann::json::parse_error& e) {
    fail("results '{}' are not valid JSON: {}", path, e.what());
  }
}

BenchResults load_bench_results(const std::string& path) {
  return parse_bench_results(read_results_json(path), path);
}

bool is_load_results(const nlohmann::json& j) {
  return j.is_object() && j.value("format", "") == "tps-load-results/1";
}

BenchResults bench_results_from_load(const nlohmann::json& j, const std::string& where, const MeasuredRun& model_row) {
  if (!j.contains("points") || !j["points"].is_array()) fail("{}: no 'points' array", where);
  BenchResults out;
  for (size_t i = 0; i < j["points"].size(); ++i) {
    std::string at = where + ": points[" + std::to_string(i) + "].summary";
    const auto& p = j["points"][i];
    if (!p.contains("summary") || !p["summary"].is_object()) fail("{}: missing", at);
    const auto& s = p["summary"];
    auto ok = get<int64_t>(s, "requests_ok", at);
    if (ok < 1) continue;  // nothing completed: no throughput to explain
    MeasuredRun row = model_row;
    row.test = "load";
    row.kind = "load";
    row.tokens_per_s = get<double>(s, "output_tok_per_s", at);
    row.prompt_tokens = std::max<int64_t>(1, get<int64_t>(s, "input_tokens", at) / ok);
    row.gen_tokens = std::max<int64_t>(1, get<int64_t>(s, "output_tokens", at) / ok);
    double concurrency = get<double>(s, "value", at);
    if (get<std::string>(s, "mode", at) != "concurrency") {
      double e2e = s.contains("e2e_s") && s["e2e_s"].contains("mean") && s["e2e_s"]["mean"].is_number()
                       ? s["e2e_s"]["mean"].get<double>() : 0.0;
      concurrency = get<double>(s, "request_per_s", at) * e2e;
    }
    row.batch = std::max<int64_t>(1, std::llround(concurrency));
    if (!(row.tokens_per_s > 0)) continue;
    out.rows.push_back(std::move(row));
  }
  if (out.rows.empty()) fail("{}: no sweep point completed a request", where);
  return out;
}

}  // namespace tps
