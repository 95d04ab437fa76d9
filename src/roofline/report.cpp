#include "roofline/report.h"

#include <algorithm>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

#include "core/error.h"

namespace tps {

namespace {

using nlohmann::json;

json part_json(const PartCost& p, double per) {
  return {{"flops", (p.flops + p.attn_flops) / per}, {"bytes", p.bytes / per}};
}

// Per-token (or per-step) split of a pass, its intensity and its bound.
json phase_json(const Estimator& est, const PassCost& cost, const PassTime& t, double per) {
  double flops = cost.flops(), bytes = cost.bytes();
  return {{"attention", part_json(cost.attention, per)},
          {"mlp", part_json(cost.mlp, per)},
          {"head", part_json(cost.head, per)},
          {"flops", flops / per},
          {"bytes", bytes / per},
          {"intensity", flops / bytes},
          {"bound", t.bound},
          {"part_bound", t.part_bound},
          {"memory_s", t.memory_s},
          {"compute_s", t.compute_s},
          {"overhead_s", t.overhead_s},
          {"comm_s", t.comm_s}};
}

}  // namespace

json hardware_to_json(const Hardware& h) {
  json sources = json::object();
  for (const auto& [k, v] : h.sources) sources[k] = v;
  return {{"id", h.id},
          {"name", h.name},
          {"kind", h.kind},
          {"memory_bytes", h.memory_bytes},
          {"bandwidth_bytes_per_s", h.bandwidth},
          {"peaks_ops_per_s", h.peaks},
          {"link", h.link},
          {"link_bandwidth_bytes_per_s", h.link_bandwidth},
          {"link_latency_s", h.link_latency},
          {"sources", sources}};
}

json roofline_report(const Estimator& est, const Workload& w, const std::optional<SpeculativeSetup>& spec,
                     const std::vector<std::string>& weight_types, const std::vector<std::string>& kv_types) {
  const RooflineModel& m = est.model();
  const Hardware& hw = est.hardware();
  const Deployment& dep = est.deployment();
  int64_t context = w.context > 0 ? w.context : w.prompt + w.output;
  double decode_ctx = w.prompt + w.output / 2.0;  // mean context over the generated tokens
  json r;
  r["model"] = {{"name", m.base.name},
                {"arch", m.base.arch},
                {"params_total", m.total_params()},
                {"params_active", m.active_params()},
                {"moe", m.is_moe()},
                {"mla", m.is_mla()},
                {"shape", roofline_model_to_json(m)}};
  r["hardware"] = hardware_to_json(hw);
  r["deployment"] = {{"weight_type", dep.weight_type}, {"bits_per_weight", dep.bits_per_weight},
                     {"kv_type", dep.kv_type}, {"gpus", dep.gpus}, {"tp", dep.tp}, {"replicas", est.replicas()},
                     {"compute_path", est.weight_path()}, {"attention_path", est.attention_path()}};
  r["efficiency"] = efficiency_to_json(est.efficiency());
  r["workload"] = {{"prompt", w.prompt}, {"output", w.output}, {"context", context}, {"batches", w.batches}};

  // Memory.
  double kv_seq = context * est.kv_bytes_per_token_per_device();
  json at_batch = json::array();
  for (int64_t b : w.batches) {
    double per_device = est.weight_bytes_per_device() + b * kv_seq / est.replicas();
    at_batch.push_back({{"batch", b}, {"bytes_per_device", per_device},
                        {"fits", per_device <= hw.memory_bytes * est.efficiency().memory_usable}});
  }
  r["memory"] = {{"weight_bytes", est.weight_bytes()},
                 {"weight_bytes_per_device", est.weight_bytes_per_device()},
                 {"kv_bytes_per_token", est.kv_bytes_per_token()},
                 {"kv_bytes_per_token_per_device", est.kv_bytes_per_token_per_device()},
                 {"kv_bytes_per_sequence", context * est.kv_bytes_per_token()},
                 {"device_memory_bytes", hw.memory_bytes},
                 {"at_batch", at_batch},
                 {"max_batch", est.max_batch(context)}};

  // Phases: prefill per prompt token, decode per step for each batch.
  PassCost pre = est.prefill_total_cost(w.prompt, 0);
  double ttft = est.prefill_seconds(w.prompt, 0);
  PassTime pre_t = est.time(est.prefill_cost(std::min(w.prompt, dep.ubatch), 0, 1));
  json phases = json::array();
  json pj = phase_json(est, pre, pre_t, static_cast<double>(w.prompt));
  pj["phase"] = "prefill";
  pj["tokens"] = w.prompt;
  pj["seconds"] = ttft;
  pj["achieved_ops_per_s"] = pre.flops() / ttft;
  phases.push_back(pj);
  json throughput = json::array();
  double tpot1 = est.decode_step_seconds(1, decode_ctx);
  for (int64_t b : w.batches) {
    PassCost c = est.decode_cost(b, decode_ctx);
    PassTime t = est.time(c);
    json dj = phase_json(est, c, t, 1.0);
    dj["phase"] = "decode";
    dj["batch"] = b;
    dj["context"] = decode_ctx;
    dj["seconds"] = t.seconds;
    dj["achieved_ops_per_s"] = c.flops() / t.seconds;
    phases.push_back(dj);
    throughput.push_back({{"batch", b},
                          {"step_s", t.seconds},
                          {"tokens_per_s_per_user", 1 / t.seconds},
                          {"aggregate_tokens_per_s", est.replicas() * b / t.seconds},
                          {"bound", t.bound},
                          {"fits_memory", b <= est.max_batch(context)}});
  }
  r["phases"] = phases;
  r["throughput"] = throughput;

  auto cross = est.crossover_batch(decode_ctx);
  r["crossover_batch"] = cross ? json(*cross) : json(nullptr);
  double bw_eff = hw.bandwidth * est.efficiency().bandwidth;
  double peak_eff = hw.peaks.at(est.weight_path()) * est.efficiency().compute_for(est.weight_path());
  r["crossover_batch_weights_only"] = peak_eff * dep.bits_per_weight / 8 / (2 * bw_eff);
  r["latency"] = {{"ttft_s", ttft},
                  {"tpot_s", tpot1},
                  {"single_user_tokens_per_s", 1 / tpot1},
                  {"e2e_s", ttft + w.output * tpot1}};
  if (dep.tp > 1) {
    PassTime t = est.time(est.decode_cost(1, decode_ctx));
    r["tensor_parallel"] = {{"tp", dep.tp}, {"link", hw.link},
                            {"allreduce_s_per_token", t.comm_s},
                            {"share_of_step", t.comm_s / t.seconds},
                            {"allreduce_s_prefill", est.allreduce_seconds(std::min(w.prompt, dep.ubatch))}};
  }
  if (spec) {
    double c = spec->cost_ratio > 0 ? spec->cost_ratio
                                    : spec->draft->decode_step_seconds(1, decode_ctx) / tpot1;
    double speedup = speculative_speedup(spec->alpha, spec->k, c, spec->verify_cost_ratio);
    r["speculative"] = {{"draft", spec->draft_name}, {"k", spec->k}, {"alpha", spec->alpha}, {"c", c},
                        {"verify_cost_ratio", spec->verify_cost_ratio},
                        {"mean_accepted_length", speculative_tokens_per_step(spec->alpha, spec->k) - 1},
                        {"tokens_per_step", speculative_tokens_per_step(spec->alpha, spec->k)},
                        {"speedup", speedup}, {"tokens_per_s", speedup / tpot1}};
  }
  json formats = json::array();
  for (const auto& wt : weight_types)
    for (const auto& kv : kv_types) {
      Estimator e(m, hw, make_deployment(wt, kv, dep.gpus, dep.tp), est.efficiency());
      formats.push_back({{"weight_type", wt}, {"kv_type", kv}, {"weight_bytes", e.weight_bytes()},
                         {"kv_bytes_per_token", e.kv_bytes_per_token()},
                         {"single_user_tokens_per_s", 1 / e.decode_step_seconds(1, decode_ctx)},
                         {"ttft_s", e.prefill_seconds(w.prompt, 0)},
                         {"max_batch", e.max_batch(context)}});
    }
  r["formats"] = formats;
  r["roofs"] = {{"bandwidth_bytes_per_s", hw.bandwidth},
                {"compute_path", est.weight_path()},
                {"peak_ops_per_s", hw.peaks.at(est.weight_path())},
                {"bandwidth_fraction", est.efficiency().bandwidth},
                {"compute_fraction", est.efficiency().compute_for(est.weight_path())}};
  return r;
}

namespace {

std::string si(double v, const char* unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (std::abs(v) >= 1000 && i < 6) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}{}", v, prefixes[i], unit);
}

std::string secs(double s) {
  if (s < 1e-3) return fmt::format("{:.1f} us", s * 1e6);
  if (s < 1) return fmt::format("{:.2f} ms", s * 1e3);
  return fmt::format("{:.2f} s", s);
}

}  // namespace

std::string render_report_table(const json& r) {
  std::string o;
  auto out = std::back_inserter(o);
  const auto& dep = r["deployment"];
  fmt::format_to(out, "model     {} ({}): {} params, {} active{}{}\n", r["model"]["name"].get<std::string>(),
       r["model"]["arch"].get<std::string>(), si(r["model"]["params_total"].get<double>(), ""),
       si(r["model"]["params_active"].get<double>(), ""), r["model"]["moe"].get<bool>() ? ", MoE" : "",
       r["model"]["mla"].get<bool>() ? ", MLA" : "");
  fmt::format_to(out, "hardware  {} x{} (tp {}, {} replica(s)): {} memory, {} peak bandwidth, {} on {}\n",
       r["hardware"]["name"].get<std::string>(), dep["gpus"].get<int>(), dep["tp"].get<int>(),
       dep["replicas"].get<int>(), si(r["hardware"]["memory_bytes"].get<double>(), "B"),
       si(r["hardware"]["bandwidth_bytes_per_s"].get<double>(), "B/s"),
       si(r["roofs"]["peak_ops_per_s"].get<double>(), "op/s"), dep["compute_path"].get<std::string>());
  const auto& eff = r["efficiency"];
  fmt::format_to(out, "formats   weights {} ({:.4g} bits), KV {}; efficiency: bandwidth {:.2f}, compute {:.2f}, "
       "layer latency {:.1f} us\n\n",
       dep["weight_type"].get<std::string>(), dep["bits_per_weight"].get<double>(),
       dep["kv_type"].get<std::string>(), eff["bandwidth_fraction"].get<double>(),
       r["roofs"]["compute_fraction"].get<double>(), eff["layer_latency_us"].get<double>());
  const auto& mem = r["memory"];
  fmt::format_to(out, "memory    weights {} ({} per device), KV {} per token, {} per sequence of {} tokens\n",
       si(mem["weight_bytes"].get<double>(), "B"), si(mem["weight_bytes_per_device"].get<double>(), "B"),
       si(mem["kv_bytes_per_token"].get<double>(), "B"), si(mem["kv_bytes_per_sequence"].get<double>(), "B"),
       r["workload"]["context"].get<int64_t>());
  fmt::format_to(out, "          largest batch that fits at that context: {}\n", mem["max_batch"].get<int64_t>());
  for (const auto& b : mem["at_batch"])
    fmt::format_to(out, "          batch {:>5}: {} per device{}\n", b["batch"].get<int64_t>(),
         si(b["bytes_per_device"].get<double>(), "B"), b["fits"].get<bool>() ? "" : "  (does not fit)");
  fmt::format_to(out, "\n{:<22} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>9} {:>10}\n", "phase", "attn FLOP", "MLP FLOP",
       "head FLOP", "bytes", "FLOP/byte", "bound", "parts", "time");
  for (const auto& p : r["phases"]) {
    std::string name = p["phase"] == "prefill"
                           ? fmt::format("prefill /token (P={})", p["tokens"].get<int64_t>())
                           : fmt::format("decode step B={}", p["batch"].get<int64_t>());
    std::string parts;
    for (const char* k : {"attention", "mlp", "head"}) parts += p["part_bound"][k] == "memory" ? "m" : "c";
    fmt::format_to(out, "{:<22} {:>10} {:>10} {:>10} {:>10} {:>10.3g} {:>8} {:>9} {:>10}\n", name,
         si(p["attention"]["flops"].get<double>(), ""), si(p["mlp"]["flops"].get<double>(), ""),
         si(p["head"]["flops"].get<double>(), ""), si(p["bytes"].get<double>(), "B"),
         p["intensity"].get<double>(), p["bound"].get<std::string>(), parts, secs(p["seconds"].get<double>()));
  }
  fmt::format_to(out, "(parts: attention/MLP/head each memory- (m) or compute-bound (c); decode at mean context {:.0f})\n",
       r["workload"]["prompt"].get<double>() + r["workload"]["output"].get<double>() / 2);
  if (r["crossover_batch"].is_null())
    fmt::format_to(out, "decode turns compute-bound: never up to 2^20 at this context (KV traffic grows with the batch)");
  else
    fmt::format_to(out, "decode turns compute-bound at batch {}", r["crossover_batch"].get<int64_t>());
  fmt::format_to(out, " (weights only: {:.0f})\n\n", r["crossover_batch_weights_only"].get<double>());
  const auto& lat = r["latency"];
  fmt::format_to(out, "TTFT {} for {} prompt tokens; per-token latency {}; single user {:.1f} tok/s; "
       "request of {} tokens {}\n",
       secs(lat["ttft_s"].get<double>()), r["workload"]["prompt"].get<int64_t>(), secs(lat["tpot_s"].get<double>()),
       lat["single_user_tokens_per_s"].get<double>(), r["workload"]["output"].get<int64_t>(),
       secs(lat["e2e_s"].get<double>()));
  fmt::format_to(out, "\n{:>7} {:>12} {:>14} {:>16} {:>8} {:>6}\n", "batch", "step", "tok/s/user", "aggregate tok/s", "bound",
       "fits");
  for (const auto& t : r["throughput"])
    fmt::format_to(out, "{:>7} {:>12} {:>14.1f} {:>16.1f} {:>8} {:>6}\n", t["batch"].get<int64_t>(), secs(t["step_s"].get<double>()),
         t["tokens_per_s_per_user"].get<double>(), t["aggregate_tokens_per_s"].get<double>(),
         t["bound"].get<std::string>(), t["fits_memory"].get<bool>() ? "yes" : "no");
  if (r.contains("tensor_parallel")) {
    const auto& tp = r["tensor_parallel"];
    fmt::format_to(out, "\ntensor parallel {} over {}: allreduces {} per decode token ({:.0f} % of the step), {} per prefill pass\n",
         tp["tp"].get<int>(), tp["link"].get<std::string>(), secs(tp["allreduce_s_per_token"].get<double>()),
         100 * tp["share_of_step"].get<double>(), secs(tp["allreduce_s_prefill"].get<double>()));
  }
  if (r.contains("speculative")) {
    const auto& s = r["speculative"];
    fmt::format_to(out, "\nspeculative decoding with {} (k={}, acceptance {:.2f}, cost ratio c={:.3f}): {:.2f} tokens per "
         "target step, speedup {:.2f}x -> {:.1f} tok/s\n",
         s["draft"].get<std::string>(), s["k"].get<int>(), s["alpha"].get<double>(), s["c"].get<double>(),
         s["tokens_per_step"].get<double>(), s["speedup"].get<double>(), s["tokens_per_s"].get<double>());
  }
  fmt::format_to(out, "\n{:>8} {:>6} {:>10} {:>10} {:>12} {:>10} {:>10}\n", "weights", "KV", "weights", "KV/token", "tok/s (B=1)",
       "TTFT", "max batch");
  for (const auto& f : r["formats"])
    fmt::format_to(out, "{:>8} {:>6} {:>10} {:>10} {:>12.1f} {:>10} {:>10}\n", f["weight_type"].get<std::string>(),
         f["kv_type"].get<std::string>(), si(f["weight_bytes"].get<double>(), "B"),
         si(f["kv_bytes_per_token"].get<double>(), "B"), f["single_user_tokens_per_s"].get<double>(),
         secs(f["ttft_s"].get<double>()), f["max_batch"].get<int64_t>());
  return o;
}

std::string render_roofline_svg(const json& r) {
  // Log-log axes: arithmetic intensity (FLOP/byte) across, FLOP/s up.
  const double w = 760, h = 520, left = 80, right = 30, top = 40, bottom = 60;
  double bw = r["roofs"]["bandwidth_bytes_per_s"].get<double>();
  double peak = r["roofs"]["peak_ops_per_s"].get<double>();
  double ridge = peak / bw;
  double x_lo = 0.1, x_hi = std::max(1e4, ridge * 10);
  for (const auto& p : r["phases"]) x_hi = std::max(x_hi, p["intensity"].get<double>() * 3);
  double y_hi = peak * 3, y_lo = std::min(bw * x_lo, peak * 1e-4);
  for (const auto& p : r["phases"]) y_lo = std::min(y_lo, p["achieved_ops_per_s"].get<double>() / 3);
  auto X = [&](double v) { return left + (std::log10(v) - std::log10(x_lo)) / std::log10(x_hi / x_lo) * (w - left - right); };
  auto Y = [&](double v) { return h - bottom - (std::log10(v) - std::log10(y_lo)) / std::log10(y_hi / y_lo) * (h - top - bottom); };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      w, h);
  std::string device = r["hardware"]["name"].get<std::string>();
  if (device.size() > 44) device = device.substr(0, 41) + "...";
  s += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"14\">Roofline: {} on {} ({}, {})</text>\n", left,
                   r["model"]["name"].get<std::string>(), device,
                   r["deployment"]["weight_type"].get<std::string>(), r["roofs"]["compute_path"].get<std::string>());
  // Decade grid and labels.
  for (double v = std::pow(10, std::ceil(std::log10(x_lo))); v <= x_hi; v *= 10)
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/>"
                     "<text x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n",
                     X(v), top, h - bottom, h - bottom + 16, v);
  for (double v = std::pow(10, std::ceil(std::log10(y_lo))); v <= y_hi; v *= 10)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/>"
                     "<text x=\"{3}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
                     left, Y(v), w - right, left - 6, Y(v) + 4, si(v, ""));
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arithmetic intensity (FLOP/byte)</text>\n",
                   (left + w - right) / 2, h - 18);
  s += fmt::format("<text x=\"18\" y=\"{0}\" transform=\"rotate(-90 18 {0})\" text-anchor=\"middle\">"
                   "FLOP/s</text>\n", (top + h - bottom) / 2);
  // The roof at peak, and the one the efficiency fractions allow (dashed).
  auto roof = [&](double b, double p, const char* style) {
    double xr = p / b;
    s += fmt::format("<polyline fill=\"none\" {} points=\"{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}\"/>\n", style,
                     X(x_lo), Y(b * x_lo), X(xr), Y(p), X(x_hi), Y(p));
  };
  roof(bw, peak, "stroke=\"#1f4e9c\" stroke-width=\"2\"");
  roof(bw * r["roofs"]["bandwidth_fraction"].get<double>(), peak * r["roofs"]["compute_fraction"].get<double>(),
       "stroke=\"#1f4e9c\" stroke-dasharray=\"6 4\"");
  s += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">peak {} (ridge {:.3g} FLOP/byte); "
                   "dashed: with efficiency fractions</text>\n",
                   w - right, Y(peak) - 6, si(peak, "FLOP/s"), ridge);
  int index = 0;
  for (const auto& p : r["phases"]) {
    double x = p["intensity"].get<double>(), y = p["achieved_ops_per_s"].get<double>();
    double dy = index++ % 2 ? -8 : 16;  // alternate above and below: neighbours often overlap
    bool pre = p["phase"] == "prefill";
    std::string label = pre ? "prefill" : fmt::format("decode B={}", p["batch"].get<int64_t>());
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/>"
                     "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                     X(x), Y(y), pre ? "#c0392b" : "#27ae60", X(x) + 6, Y(y) + dy, label);
  }
  s += "</svg>\n";
  return s;
}

std::string render_hardware_list() {
  std::string o = fmt::format("{:<15} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9}  {}\n", "id", "memory", "GB/s",
                              "f16 TF", "bf16 TF", "fp8 TF", "int8 TOP", "link (GB/s per direction)");
  auto peak = [](const Hardware& h, const char* k) {
    return h.peaks.count(k) ? fmt::format("{:.4g}", h.peaks.at(k) / 1e12) : std::string("-");
  };
  for (const auto& h : hardware_database()) {
    o += fmt::format("{:<15} {:>6.0f}GB {:>9.0f} {:>9} {:>9} {:>9} {:>9}  {}\n", h.id, h.memory_bytes / 1e9,
                     h.bandwidth / 1e9, peak(h, "f16"), peak(h, "bf16"), peak(h, "fp8"), peak(h, "int8"),
                     h.link.empty() ? "-" : fmt::format("{} {:.0f}", h.link, h.link_bandwidth / 1e9));
    o += fmt::format("    {}; f32 {} TF\n", h.name, peak(h, "f32"));
    for (const auto& [what, src] : h.sources) o += fmt::format("    {}: {}\n", what, src);
  }
  o += "Peaks are dense (no 2:4 sparsity). Or pass --profile probe.json for this machine's measured roofs.\n";
  return o;
}

}  // namespace tps
