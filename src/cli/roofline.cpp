// `tps roofline`: predicted speed of a model on a device from bytes and FLOPs, the
// hardware database, and the efficiency of measured runs (docs/roofline.md).
#include <algorithm>
#include <fstream>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/command.h"
#include "core/error.h"
#include "roofline/gguf_model.h"
#include "roofline/measurement.h"
#include "roofline/report.h"

namespace tps::cli {

namespace {

struct RooflineArgs {
  std::string preset, config, model_file;
  std::string hardware, profile;
  int threads = 0, gpus = 0, tp = 1;  // gpus 0: as many as --tp
  int ranks_per_host = 1;             // of a probed host: ranks sharing its memory bus
  std::vector<std::string> weights, kv_types;
  std::vector<int64_t> batches = {1, 8, 64};
  int64_t prompt = 1024, output = 256, context = 0, ubatch = 512;
  std::string spec_draft;
  int spec_k = 4;
  double spec_accept = 0.7, spec_cost = 0, spec_verify_cost = 1, spec_mean_accepted = -1;
  bool json = false;
  std::string plot, efficiency_file, save_efficiency;
  std::vector<std::string> measured, calibrate;  // result files, rows merged
  std::string spec_accept_from;                  // a tps bench JSON with a speculative row
  double eff_bandwidth = 0, eff_compute = 0, layer_latency_us = -1;
};

nlohmann::json read_json(const std::string& path, const char* what) {
  std::ifstream f(path);
  if (!f) fail("cannot open {} '{}'", what, path);
  try {
    return nlohmann::json::parse(f);
  } catch (const nlohmann::json::parse_error& e) {
    fail("{} '{}' is not valid JSON: {}", what, path, e.what());
  }
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f || !(f << text)) fail("cannot write '{}'", path);
}

Efficiency efficiency_from_args(const RooflineArgs& a) {
  Efficiency e = a.efficiency_file.empty() ? Efficiency{}
                                           : efficiency_from_json(read_json(a.efficiency_file, "efficiency"));
  if (a.eff_bandwidth > 0) e.bandwidth = a.eff_bandwidth;
  if (a.eff_compute > 0) {
    e.compute = a.eff_compute;
    e.compute_by_path.clear();
  }
  if (a.layer_latency_us >= 0) e.layer_latency = a.layer_latency_us * 1e-6;
  return e;
}

HardwareSource hardware_source(const RooflineArgs& a, const BenchResults* results) {
  HardwareSource hs;
  if (!a.profile.empty()) hs.profile = load_profile(a.profile);
  else if (!a.hardware.empty()) hs.fixed = find_hardware(a.hardware);
  else if (results && results->profile) hs.profile = results->profile;
  return hs;
}

// The per-token acceptance the speculative rows are predicted with: that of the first
// speculative row of --spec-accept-from, else none (each row's own).
struct AcceptanceSource {
  std::optional<double> alpha;
  std::string from;
};

AcceptanceSource acceptance_source(const std::string& path) {
  if (path.empty()) return {};
  for (const MeasuredRun& row : load_bench_results(path).rows)
    if (row.speculative && row.speculative->mean_draft_length > 0)
      return {row.speculative->per_token_acceptance(), fmt::format("{} ({})", path, row.test)};
  fail("--spec-accept-from {}: no row with speculative decoding that drafted", path);
}

double predicted_speedup(const SpeculativeRun& s, const AcceptanceSource& acceptance) {
  return acceptance.alpha ? s.predicted_speedup(*acceptance.alpha) : s.predicted_speedup();
}

// Speculative rows: the speedup predicted from acceptance and the run's costs, measured.
std::string speculative_table(const BenchResults& res, const AcceptanceSource& acceptance) {
  std::string o;
  auto out = std::back_inserter(o);
  for (const auto& row : res.rows) {
    if (!row.speculative) continue;
    const SpeculativeRun& s = *row.speculative;
    if (o.empty())
      fmt::format_to(out, "\nspeculative decoding{}:\n{:<8} {:<16} {:<10} {:>6} {:>7} {:>6} {:>6} {:>6} {:>6} {:>9} {:>9} {:>7}\n",
                     acceptance.alpha ? fmt::format(", acceptance per token {:.3f} from {}", *acceptance.alpha, acceptance.from)
                                      : std::string(),
                     "test", "model", "drafter", "k", "accept", "L", "f", "r", "d", "predicted", "measured", "error");
    const double p = predicted_speedup(s, acceptance);
    fmt::format_to(out, "{:<8} {:<16} {:<10} {:>6.2f} {:>7.3f} {:>6.2f} {:>6.3f} {:>6.2f} {:>6.3f} {:>8.2f}x {:>8.2f}x {:>6.0f}%\n",
                   row.test, row.model_label, s.drafter, s.mean_draft_length, s.acceptance_rate,
                   s.mean_accepted_length, s.verify_step_share, s.verify_cost_ratio, s.draft_cost, p,
                   s.measured_speedup, 100 * (p / s.measured_speedup - 1));
  }
  if (!o.empty())
    o += "(k: drafted per verify step; accept: accepted / drafted; L: accepted per verify step; f: verify steps / "
         "steps; r: verify cost ratio; d: drafting per verify step in plain steps; predicted = (1 + f L) / (1 + f "
         "(r - 1 + d)))\n";
  return o;
}

// Before/after table of a calibration, or MBU/MFU of measured runs.
std::string measured_table(const BenchResults& res, const HardwareSource& hs, const Efficiency& eff,
                           const Efficiency* before) {
  std::string o;
  auto out = std::back_inserter(o);
  fmt::format_to(out, "{:<8} {:<16} {:>7} {:>4} {:>6} {:>10} {:>10} {:>7} {:>9} {:>6} {:>6} {:>9}\n", "test",
                 "model", "weights", "thr", "batch", "measured", "predicted", "error", before ? "uncalib." : "",
                 "MBU", "MFU", "bound");
  for (const auto& row : res.rows) {
    RowAnalysis a = analyze_row(row, hs, eff);
    std::string pre = before ? fmt::format("{:+.0f} %", 100 * (predict_tokens_per_s(row, hs, *before) /
                                                                      row.tokens_per_s - 1))
                             : "";
    fmt::format_to(out, "{:<8} {:<16} {:>7} {:>4} {:>6} {:>10.2f} {:>10.2f} {:>6.0f}% {:>9} {:>5.0f}% {:>5.1f}% {:>9}\n",
                   row.test, row.model_label, row.weight_type, row.threads, row.batch, row.tokens_per_s,
                   a.predicted_tokens_per_s, 100 * (a.predicted_tokens_per_s / row.tokens_per_s - 1), pre,
                   100 * a.mbu, 100 * a.mfu, a.bound);
  }
  fmt::format_to(out, "(MBU: achieved / peak bandwidth; MFU: achieved / peak ops on the weights' compute path; "
                      "bound: the nearer roof, or overhead when both are under 10 %)\n");
  return o;
}

nlohmann::json measured_json(const BenchResults& res, const HardwareSource& hs, const Efficiency& eff,
                            const AcceptanceSource& acceptance = {}) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : res.rows) {
    RowAnalysis a = analyze_row(row, hs, eff);
    rows.push_back({{"test", row.test}, {"model", row.model_label}, {"weight_type", row.weight_type},
                    {"threads", row.threads}, {"batch", row.batch}, {"measured_tokens_per_s", row.tokens_per_s},
                    {"predicted_tokens_per_s", a.predicted_tokens_per_s},
                    {"achieved_bytes_per_s", a.achieved_bytes_per_s}, {"achieved_flops_per_s", a.achieved_flops_per_s},
                    {"peak_bytes_per_s", a.peak_bytes_per_s}, {"peak_flops_per_s", a.peak_flops_per_s},
                    {"compute_path", a.compute_path}, {"mbu", a.mbu}, {"mfu", a.mfu}, {"bound", a.bound},
                    {"predicted_bound", a.predicted_bound}});
    if (row.speculative) {
      const SpeculativeRun& sp = *row.speculative;
      rows.back()["speculative"] = {{"drafter", sp.drafter},
                                    {"mean_draft_length", sp.mean_draft_length},
                                    {"acceptance_rate", sp.acceptance_rate},
                                    {"mean_accepted_length", sp.mean_accepted_length},
                                    {"per_token_acceptance", sp.per_token_acceptance()},
                                    {"verify_step_share", sp.verify_step_share},
                                    {"verify_cost_ratio", sp.verify_cost_ratio},
                                    {"draft_cost", sp.draft_cost},
                                    {"predicted_speedup", predicted_speedup(sp, acceptance)},
                                    {"measured_speedup", sp.measured_speedup}};
    }
  }
  return rows;
}

struct LoadedModel {
  RooflineModel model;
  std::string weight_type;  // from a GGUF file; empty otherwise
  double bits_per_weight = 0;
};

std::optional<LoadedModel> load_model(const RooflineArgs& a) {
  int given = !a.preset.empty() + !a.config.empty() + !a.model_file.empty();
  if (given > 1) fail("give only one of --preset, --config and --model");
  if (!a.preset.empty()) return LoadedModel{find_roofline_preset(a.preset), "", 0};
  if (!a.config.empty()) return LoadedModel{load_hf_config(a.config), "", 0};
  if (!a.model_file.empty()) {
    GgufModelInfo g = read_gguf_model(a.model_file);
    return LoadedModel{g.model, g.weight_type, g.bits_per_weight};
  }
  return std::nullopt;
}

// A tps bench file names its models; a tps load file does not, so the model, weight and
// KV type and threads come from the flags.
BenchResults read_measured(const std::string& path, const RooflineArgs& a, const std::optional<LoadedModel>& lm) {
  nlohmann::json j = read_results_json(path);
  if (!is_load_results(j)) return parse_bench_results(j, path);
  if (!lm) fail("{} is a tps load result: give the served model with --preset, --config or --model", path);
  MeasuredRun row;
  row.model = lm->model;
  row.model_label = lm->model.base.name;
  row.weight_type = !a.weights.empty() ? a.weights[0] : !lm->weight_type.empty() ? lm->weight_type : "f16";
  row.bits_per_weight = a.weights.empty() && lm->bits_per_weight > 0 ? lm->bits_per_weight
                                                                      : find_weight_format(row.weight_type).bits_per_weight;
  row.kv_type = a.kv_types.empty() ? "f16" : a.kv_types[0];
  row.threads = a.threads;
  return bench_results_from_load(j, path, row);
}

// The rows of several result files together (the first embedded profile counts).
BenchResults read_all_measured(const std::vector<std::string>& paths, const RooflineArgs& a,
                               const std::optional<LoadedModel>& lm) {
  BenchResults all;
  for (const std::string& path : paths) {
    BenchResults res = read_measured(path, a, lm);
    all.rows.insert(all.rows.end(), res.rows.begin(), res.rows.end());
    if (!all.profile) all.profile = res.profile;
  }
  return all;
}

bool any_load_results(const std::vector<std::string>& paths) {
  return std::any_of(paths.begin(), paths.end(), [](const std::string& p) { return is_load_results(read_results_json(p)); });
}

int run_roofline(const RooflineArgs& a) {
  if (a.hardware == "list") {
    std::fputs(render_hardware_list().c_str(), stdout);
    return 0;
  }
  Efficiency eff = efficiency_from_args(a);
  std::optional<LoadedModel> lm = load_model(a);
  if (!a.calibrate.empty()) {
    BenchResults res = read_all_measured(a.calibrate, a, lm);
    HardwareSource hs = hardware_source(a, &res);
    Efficiency before = eff;
    eff = calibrate(res.rows, hs, before);
    if (!a.save_efficiency.empty()) write_file(a.save_efficiency, efficiency_to_json(eff).dump(2) + "\n");
    // With a model given only to describe a tps load file, stop after the calibration too.
    if (a.measured.empty() && (!lm || any_load_results(a.calibrate))) {
      if (a.json) {
        fmt::print("{}\n", nlohmann::json{{"efficiency", efficiency_to_json(eff)},
                                          {"rows", measured_json(res, hs, eff)}}.dump(2));
      } else {
        fmt::print("calibrated on {} run(s) of {}:\n{}\n\n{}", res.rows.size(), fmt::join(a.calibrate, ", "),
                   efficiency_to_json(eff).dump(2), measured_table(res, hs, eff, &before));
      }
      return 0;
    }
  }
  if (!a.spec_accept_from.empty() && a.measured.empty()) fail("--spec-accept-from needs --measured");
  if (!a.measured.empty()) {
    BenchResults res = read_all_measured(a.measured, a, lm);
    HardwareSource hs = hardware_source(a, &res);
    const AcceptanceSource acceptance = acceptance_source(a.spec_accept_from);
    if (a.json) fmt::print("{}\n", nlohmann::json{{"efficiency", efficiency_to_json(eff)},
                                                  {"rows", measured_json(res, hs, eff, acceptance)}}.dump(2));
    else fmt::print("{}{}", measured_table(res, hs, eff, nullptr), speculative_table(res, acceptance));
    return 0;
  }
  if (!lm) fail("nothing to do: give a model (--preset, --config or --model), --measured, --calibrate "
                "or --hardware list");
  HardwareSource hs = hardware_source(a, nullptr);
  if (!hs.profile && !hs.fixed) fail("give --hardware NAME (see --hardware list) or --profile probe.json");
  if (a.ranks_per_host < 1 || a.ranks_per_host > a.tp)
    fail("--ranks-per-host must be between 1 and --tp ({}), got {}", a.tp, a.ranks_per_host);
  if (a.ranks_per_host > 1 && !hs.profile) fail("--ranks-per-host needs a probed host (--profile)");
  // Ranks on one host run -t threads each: the host's roofs on all of them, shared.
  Hardware hw = a.ranks_per_host == 1 ? hs.for_threads(a.threads)
                                      : host_share(hs.for_threads(a.threads * a.ranks_per_host), a.ranks_per_host);

  std::vector<std::string> weights = a.weights;
  if (weights.empty()) weights = {lm->weight_type.empty() ? "f16" : lm->weight_type};
  std::vector<std::string> kvs = a.kv_types.empty() ? std::vector<std::string>{"f16"} : a.kv_types;
  Deployment dep = make_deployment(weights[0], kvs[0], a.gpus > 0 ? a.gpus : a.tp, a.tp);
  if (hs.profile) dep.activation_bytes = 4;  // tps sums f32 activations across its ranks
  if (lm->bits_per_weight > 0 && a.weights.empty()) dep.bits_per_weight = lm->bits_per_weight;
  if (a.ubatch < 1) fail("--ubatch must be at least 1");
  dep.ubatch = a.ubatch;
  Estimator est(lm->model, hw, dep, eff);

  Workload w;
  w.batches = a.batches;
  w.prompt = a.prompt;
  w.output = a.output;
  w.context = a.context;
  for (int64_t b : w.batches)
    if (b < 1) fail("--batch values must be at least 1");
  if (w.prompt < 1 || w.output < 0) fail("--prompt must be at least 1 and --output at least 0");
  std::optional<SpeculativeSetup> spec;
  if (!a.spec_draft.empty() || a.spec_cost > 0) {
    if (a.spec_k < 1) fail("--spec-k must be at least 1");
    if (!(a.spec_accept >= 0 && a.spec_accept <= 1)) fail("--spec-accept must be in [0, 1]");
    if (!(a.spec_verify_cost >= 1)) fail("--spec-verify-cost must be at least 1, got {}", a.spec_verify_cost);
    SpeculativeSetup s;
    s.k = a.spec_k;
    s.alpha = a.spec_mean_accepted >= 0 ? per_token_acceptance(a.spec_mean_accepted, a.spec_k) : a.spec_accept;
    s.verify_cost_ratio = a.spec_verify_cost;
    s.cost_ratio = a.spec_cost;
    s.draft_name = a.spec_draft.empty() ? "a draft of the given cost" : a.spec_draft;
    if (!a.spec_draft.empty()) {
      Deployment d = dep;
      d.bits_per_weight = find_weight_format(d.weight_type).bits_per_weight;
      s.draft.emplace(find_roofline_preset(a.spec_draft), hw, d, eff);
    }
    spec = std::move(s);
  }
  std::vector<std::string> cmp_w = weights.size() > 1 ? weights : std::vector<std::string>{"bf16", "fp8", "q8_0", "q4_0"};
  std::vector<std::string> cmp_kv = kvs.size() > 1 ? kvs : std::vector<std::string>{"f16", "q8_0"};
  nlohmann::json report = roofline_report(est, w, spec, cmp_w, cmp_kv);
  if (!a.plot.empty()) write_file(a.plot, render_roofline_svg(report));
  if (a.json) fmt::print("{}\n", report.dump(2));
  else fmt::print("{}", render_report_table(report));
  return 0;
}

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    std::stringstream ss(item);
    std::string part;
    while (std::getline(ss, part, ','))
      if (!part.empty()) out.push_back(part);
  }
  return out;
}

const CommandRegistration kRoofline{
    "roofline", "predict tokens/s, TTFT and max batch of a model on a device; explain measured runs",
    [](CLI::App& sub) {
      auto a = std::make_shared<RooflineArgs>();
      auto weights = std::make_shared<std::vector<std::string>>();
      auto kvs = std::make_shared<std::vector<std::string>>();
      auto batches = std::make_shared<std::vector<std::string>>();
      sub.add_option("--preset", a->preset, "built-in model shape (e.g. llama-3-8b, mixtral-8x7b, deepseek-v2-lite)");
      sub.add_option("--config", a->config, "Hugging Face config.json");
      sub.add_option("--model", a->model_file, "GGUF file (shape and weight type from its metadata)");
      sub.add_option("--hardware", a->hardware, "device from the database, or 'list'");
      sub.add_option("--profile", a->profile, "hardware profile written by `tps probe -o`");
      sub.add_option("-t,--threads", a->threads, "threads, for a probe profile (default: all it measured)");
      sub.add_option("--gpus", a->gpus, "devices in all, replicas = gpus / tp (default: tp)");
      sub.add_option("--tp", a->tp, "tensor-parallel degree");
      sub.add_option("--ranks-per-host", a->ranks_per_host,
                     "ranks that share one probed host's memory bus, each on its own -t threads (default 1: a host "
                     "each; one host: --tp)")
          ->capture_default_str();
      sub.add_option("--weights", *weights, "weight types, comma separated; the first is reported in full");
      sub.add_option("--kv-type", *kvs, "KV cache types (f32, f16, bf16, q8_0, fp8, q4_0), comma separated");
      sub.add_option("--batch", *batches, "decode batch sizes, comma separated (default 1,8,64)");
      sub.add_option("--prompt", a->prompt, "prompt tokens (default 1024)");
      sub.add_option("--output", a->output, "generated tokens (default 256)");
      sub.add_option("--context", a->context, "context to size the KV cache for (default prompt + output)");
      sub.add_option("--ubatch", a->ubatch, "prompt tokens per prefill pass (default 512)");
      sub.add_option("--spec-draft", a->spec_draft, "draft model preset for speculative decoding");
      sub.add_option("--spec-k", a->spec_k, "draft tokens per step (default 4)");
      sub.add_option("--spec-accept", a->spec_accept, "acceptance rate per token (default 0.7)");
      sub.add_option("--spec-cost", a->spec_cost, "draft/target step time ratio c (default: from the roofline)");
      sub.add_option("--spec-verify-cost", a->spec_verify_cost,
                     "verify cost ratio r: a target step of k+1 tokens over one of 1 (tps bench measures it; default 1)");
      sub.add_option("--spec-mean-accepted", a->spec_mean_accepted,
                     "mean accepted length at k drafts (as tps bench reports it), instead of --spec-accept");
      sub.add_flag("--json", a->json, "print JSON instead of tables");
      sub.add_option("--plot", a->plot, "write an SVG roofline chart");
      sub.add_option("--measured", a->measured, "tps bench / tps load result JSONs (comma list): MBU, MFU, bound per run")
          ->delimiter(',');
      sub.add_option("--spec-accept-from", a->spec_accept_from,
                     "with --measured: predict the speculative rows' speedups with the per-token acceptance of "
                     "this tps bench JSON's speculative row (another workload) instead of their own");
      sub.add_option("--calibrate", a->calibrate, "fit the efficiency fractions to the runs of result JSONs (comma list)")
          ->delimiter(',');
      sub.add_option("--save-efficiency", a->save_efficiency, "write the calibrated fractions here");
      sub.add_option("--efficiency", a->efficiency_file, "read efficiency fractions (as saved by --save-efficiency)");
      sub.add_option("--eff-bandwidth", a->eff_bandwidth, "achievable fraction of peak bandwidth (default 0.8)");
      sub.add_option("--eff-compute", a->eff_compute, "achievable fraction of peak compute (default 0.5)");
      sub.add_option("--layer-latency-us", a->layer_latency_us, "fixed cost per layer per pass (default 10 us)");
      return [a, weights, kvs, batches]() {
        a->weights = split_list(*weights);
        a->kv_types = split_list(*kvs);
        if (!batches->empty()) {
          a->batches.clear();
          for (const auto& b : split_list(*batches)) {
            try {
              size_t used = 0;
              a->batches.push_back(std::stoll(b, &used));
              if (used != b.size()) throw std::invalid_argument(b);
            } catch (const std::exception&) {
              fail("--batch: '{}' is not a whole number", b);
            }
          }
        }
        return run_roofline(*a);
      };
    }};

}  // namespace

}  // namespace tps::cli
