#include "bench/bench_report.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "loadgen/request_metrics.h"

namespace tps {

namespace {

nlohmann::json shape_json(const ModelConfig& c) {
  return {{"arch", c.arch},         {"dim", c.dim},           {"n_layers", c.n_layers},
          {"n_heads", c.n_heads},   {"n_kv_heads", c.n_kv_heads}, {"head_dim", c.head_dim},
          {"ffn_dim", c.ffn_dim},   {"vocab_size", c.vocab_size}, {"tied_output", c.tied_output},
          {"qkv_bias", c.qkv_bias}, {"context_length", c.context_length}};
}

nlohmann::json model_json(const BenchModelInfo& m) {
  nlohmann::json j = {{"file", m.preset.empty() ? nlohmann::json(m.file) : nlohmann::json(nullptr)},
                      {"weight_type", m.weight_type},
                      {"weight_bytes", m.weight_bytes},
                      {"params", m.params},
                      {"step_weight_bytes", m.step_weight_bytes},
                      {"shape", shape_json(m.config)}};
  if (!m.preset.empty()) j["preset"] = m.preset;
  if (m.output_skew != 1.0f) j["output_skew"] = m.output_skew;
  return j;
}

std::string human_bytes(double b) {
  if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.1f} MB", b / 1e6);
  return fmt::format("{:.1f} kB", b / 1e3);
}

std::string human_count(double n) {
  if (n >= 1e9) return fmt::format("{:.2f} B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.1f} M", n / 1e6);
  return fmt::format("{:.1f} K", n / 1e3);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return loadgen::percentile_sorted(v, 50);
}

// " (rounds 0.91-1.04)" for more than one round.
std::string rounds_range(const std::vector<double>& ratios) {
  if (ratios.size() < 2) return "";
  const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  return fmt::format(" (rounds {:.2f}-{:.2f})", *lo, *hi);
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

std::string BenchModelInfo::label() const {
  if (preset.empty()) return std::filesystem::path(file).filename().string();
  return output_skew == 1.0f ? preset : fmt::format("{} skew {}", preset, output_skew);
}

namespace {

Breakdown breakdown_of(const ForwardTrace& trace, const BenchCase& c, const Spread& tokens_per_s) {
  double wall = 0;  // every timed repetition's measured phase
  for (double tps : tokens_per_s.samples) wall += double(c.tokens()) / tps;
  const double tokens = double(c.tokens()) * double(tokens_per_s.samples.size());
  Breakdown b;
  b.seconds_per_token = wall / tokens;
  double traced = 0;
  for (size_t p = 0; p < kForwardPhases; ++p) {
    if (trace.seconds[p] <= 0) continue;
    traced += trace.seconds[p];
    const double gbps = trace.weight_bytes[p] > 0 ? trace.weight_bytes[p] / trace.seconds[p] / 1e9 : 0;
    b.steps.push_back({phase_name(static_cast<ForwardPhase>(p)), trace.seconds[p] / tokens, trace.seconds[p] / wall,
                       trace.wait_seconds[p] / wall, trace.weight_bytes[p] / tokens, gbps});
  }
  const double other = std::max(0.0, wall - traced);
  b.steps.push_back({"other", other / tokens, other / wall, 0, 0, 0});
  return b;
}

}  // namespace

MeasuredRun measured_run(const BenchCase& c, const BenchModelInfo& model, int ranks, const std::string& compute_path,
                         double tokens_per_s) {
  MeasuredRun r;
  r.test = c.test_name();
  r.kind = c.kind == BenchKind::kPrefill ? "pp" : c.kind == BenchKind::kDecode ? "tg" : "batched";
  r.model_label = model.label();
  r.model = roofline_model_from(model.config);
  r.weight_type = model.weight_type;
  r.weight_bytes = model.weight_bytes;
  r.params = model.params;
  r.bits_per_weight = step_bits_per_weight(r.model, double(model.step_weight_bytes));
  r.threads = c.threads * ranks;
  r.compute_path = compute_path;
  r.batch = c.batch;
  r.prompt_tokens = c.prompt;
  r.gen_tokens = c.gen;
  r.depth = c.depth;
  r.tokens_per_s = tokens_per_s;
  return r;
}

BenchRow bench_row(const BenchMeasurement& m, const BenchModelInfo& model, const HardwareSource& hw,
                   const std::string& compute_path) {
  auto phase = [&](const BenchCase& c, const Spread& s) {
    return PhaseResult{s, bound_of_row(measured_run(c, model, m.ranks, compute_path, s.mean), hw), {}, 0};
  };
  const BenchCase& c = m.bench_case;
  BenchRow row;
  row.test = c.test_name();
  row.bench_case = c;
  row.compute_path = compute_path;
  row.result = phase(c, m.tokens_per_s);
  if (m.breakdown) row.breakdown = breakdown_of(*m.breakdown, c, m.tokens_per_s);
  row.result.stream_gbps = m.stream_gbps;
  if (m.stream_gbps.mean > 0) row.result.mbu_stream = row.result.figures.achieved_bytes_per_s / 1e9 / m.stream_gbps.mean;
  if (m.ranks > 1 && m.timed_tokens > 0 && m.timed_seconds > 0)
    row.collective = CollectiveFigures{m.ranks, m.collective_seconds / double(m.timed_tokens),
                                       m.collective_seconds / m.timed_seconds};
  if (c.kind == BenchKind::kBatched)
    row.prefill = phase({BenchKind::kPrefill, c.prompt, 0, c.batch, c.depth, c.threads}, m.prefill_tokens_per_s);
  return row;
}

SpeculativeFigures speculative_figures(const BenchMeasurement& spec, const BenchMeasurement& plain,
                                       const std::string& drafter, const SpeculativeConfig& config) {
  SpeculativeFigures f;
  f.drafter = drafter;
  f.counts = spec.speculative;
  const SpeculativeCounts& c = f.counts;
  f.mean_draft_length = c.verify_steps > 0 ? double(c.drafted_tokens) / double(c.verify_steps) : 0;
  if (spec.decode_seconds > 0) {
    f.draft_share = spec.draft_seconds / spec.decode_seconds;
    f.verify_share = spec.verify_step_seconds / spec.decode_seconds;
  }
  if (spec.verify_steps > 0 && plain.plain_steps > 0 && plain.plain_step_seconds > 0)
    f.verify_cost_ratio = (spec.verify_step_seconds / double(spec.verify_steps)) /
                          (plain.plain_step_seconds / double(plain.plain_steps));
  const std::vector<double>&with = spec.tokens_per_s.samples, &without = plain.tokens_per_s.samples;
  for (size_t r = 0; r < std::min(with.size(), without.size()); ++r)
    if (without[r] > 0) f.speedup_rounds.push_back(with[r] / without[r]);
  if (!f.speedup_rounds.empty()) f.speedup = median(f.speedup_rounds);
  if (config.mode == SpecMode::kNgram && !spec.generated.empty()) {
    // The first token comes from the prompt's pass, before any step drafts: it is context,
    // and the rest are the decode steps' tokens that tg times.
    std::vector<int32_t> context = spec.prompt;
    context.push_back(spec.generated.front());
    f.ngram_ceiling = ngram_ceiling(context, std::span(spec.generated).subspan(1), config);
  }
  return f;
}

std::optional<BenchFormat> parse_bench_format(const std::string& name) {
  if (name == "md") return BenchFormat::kMarkdown;
  if (name == "csv") return BenchFormat::kCsv;
  if (name == "json") return BenchFormat::kJson;
  if (name == "jsonl") return BenchFormat::kJsonl;
  return std::nullopt;
}

namespace {

nlohmann::json phase_json(const PhaseResult& p) {
  const RowAnalysis& f = p.figures;
  nlohmann::json j = {{"tokens_per_s", p.tokens_per_s.mean},
          {"std", p.tokens_per_s.std},
          {"samples", p.tokens_per_s.samples},
          {"bytes_per_token", f.bytes_per_token},
          {"ops_per_token", f.flops_per_token},
          {"achieved_gbps", f.achieved_bytes_per_s / 1e9},
          {"mbu", f.mbu},
          {"achieved_ops_per_s", f.achieved_flops_per_s},
          {"mfu", f.mfu},
          {"bound_tokens_per_s", f.predicted_tokens_per_s},
          {"bound", f.predicted_bound}};
  if (!p.stream_gbps.samples.empty()) {
    j["stream_gbps"] = p.stream_gbps.mean;
    j["stream_gbps_std"] = p.stream_gbps.std;
    j["stream_gbps_samples"] = p.stream_gbps.samples;
    j["mbu_stream"] = p.mbu_stream;
  }
  return j;
}

}  // namespace

nlohmann::json bench_row_json(const BenchRow& r, const BenchReport& report) {
  const BenchCase& c = r.bench_case;
  nlohmann::json j = {{"test", r.test},
                      {"model", model_json(report.model)},
                      {"kv_type", "f16"},
                      {"threads", c.threads},
                      {"kernels", report.kernels},
                      {"batch", c.batch},
                      {"prompt_tokens", c.prompt},
                      {"gen_tokens", c.gen},
                      {"depth", c.depth},
                      {"repetitions", r.result.tokens_per_s.samples.size()},
                      {"read_gbps", r.result.figures.peak_bytes_per_s / 1e9},
                      {"peak_ops_per_s", r.result.figures.peak_flops_per_s},
                      {"compute_path", r.compute_path}};
  j.update(phase_json(r.result));
  if (r.prefill) j["prefill"] = phase_json(*r.prefill);
  if (r.speculative) {
    const SpeculativeFigures& s = *r.speculative;
    j["speculative"] = {{"drafter", s.drafter},
                        {"verify_steps", s.counts.verify_steps},
                        {"drafted_tokens", s.counts.drafted_tokens},
                        {"accepted_tokens", s.counts.accepted_tokens},
                        {"accepted_per_position", s.counts.accepted_at},
                        {"acceptance_rate", s.counts.acceptance_rate()},
                        {"mean_accepted_length", s.counts.mean_accepted_length()},
                        {"tokens_per_step", s.counts.mean_accepted_length() + 1},
                        {"mean_draft_length", s.mean_draft_length},
                        {"draft_share", s.draft_share},
                        {"verify_share", s.verify_share},
                        {"verify_cost_ratio", s.verify_cost_ratio},
                        {"speedup", s.speedup},
                        {"speedup_rounds", s.speedup_rounds}};
    if (s.ngram_ceiling)
      j["speculative"]["ngram_ceiling"] = {{"generated", s.ngram_ceiling->generated},
                                           {"draftable", s.ngram_ceiling->draftable},
                                           {"ngram_min", s.ngram_ceiling->ngram_min},
                                           {"steps", s.ngram_ceiling->steps},
                                           {"speedup", s.ngram_ceiling->speedup()}};
  }
  if (r.collective)
    j["tensor_parallel"] = {{"ranks", r.collective->ranks},
                            {"collective_seconds_per_token", r.collective->seconds_per_token},
                            {"collective_share", r.collective->share}};
  if (r.breakdown) {
    nlohmann::json steps = nlohmann::json::array();
    for (const BreakdownStep& s : r.breakdown->steps)
      steps.push_back({{"step", s.step},
                       {"seconds_per_token", s.seconds},
                       {"share", s.share},
                       {"wait_share", s.wait_share},
                       {"weight_bytes_per_token", s.weight_bytes},
                       {"gbps", s.gbps}});
    j["breakdown"] = {{"seconds_per_token", r.breakdown->seconds_per_token}, {"steps", steps}};
  }
  return j;
}

nlohmann::json bench_report_json(const BenchReport& report) {
  nlohmann::json results = nlohmann::json::array();
  for (const auto& r : report.rows) results.push_back(bench_row_json(r, report));
  nlohmann::json j = {{"schema", "tps.bench/1"},
                      {"tool", "tps bench 0.1.0"},
                      {"created", report.created},
                      {"roofs_source", report.roofs_source},
                      {"repetitions", report.repetitions},
                      {"results", results}};
  j["profile"] = report.profile ? *report.profile : nlohmann::json(nullptr);
  return j;
}

namespace {

std::string breakdown_markdown(const BenchRow& r) {
  const BenchCase& c = r.bench_case;
  const Breakdown& b = *r.breakdown;
  std::string name = r.prefill ? fmt::format("B{} tg{}", c.batch, c.gen) : r.test;
  if (c.depth > 0) name += fmt::format(" @ d{}", c.depth);
  std::string out = fmt::format(
      "\n{}, {} threads: {:.3f} ms per token. waiting: the calling thread idle at the ends of parallel regions; "
      "GB/s: weights streamed / time\n"
      "| step | ms/token | share | waiting | weights/token | GB/s | of DRAM read |\n"
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n",
      name, c.threads, 1e3 * b.seconds_per_token);
  for (const BreakdownStep& s : b.steps) {
    const bool weights = s.weight_bytes > 0;
    out += fmt::format("| {} | {:.3f} | {:.1f}% | {:.1f}% | {} | {} | {} |\n", s.step, 1e3 * s.seconds, 100 * s.share,
                       100 * s.wait_share, weights ? human_bytes(s.weight_bytes) : "-",
                       weights ? fmt::format("{:.1f}", s.gbps) : "-",
                       weights ? fmt::format("{:.0f}%", 100 * s.gbps * 1e9 / r.result.figures.peak_bytes_per_s) : "-");
  }
  return out;
}

}  // namespace

std::string format_bench_report(const BenchReport& report, BenchFormat format) {
  std::string out;
  const BenchModelInfo& m = report.model;
  switch (format) {
    case BenchFormat::kJson:
      return bench_report_json(report).dump(2) + "\n";
    case BenchFormat::kJsonl:
      for (const auto& r : report.rows) {
        nlohmann::json j = bench_row_json(r, report);
        j["schema"] = "tps.bench/1";
        out += j.dump() + "\n";
      }
      return out;
    case BenchFormat::kCsv:
      out = "model,weight_type,weight_bytes,params,threads,test,batch,prompt_tokens,gen_tokens,depth,"
            "tokens_per_s,std,bytes_per_token,achieved_gbps,mbu,ops_per_token,achieved_ops_per_s,mfu,"
            "bound_tokens_per_s,bound,prefill_tokens_per_s,prefill_std,stream_gbps,mbu_stream,kernels,compute_path\n";
      for (const auto& r : report.rows) {
        const BenchCase& c = r.bench_case;
        const PhaseResult& p = r.result;
        out += fmt::format("{},{},{},{},{},{},{},{},{},{},{:.3f},{:.3f},{:.0f},{:.3f},{:.4f},{:.0f},{:.4g},{:.4f},{:.3f},{},",
                           csv_field(m.label()), m.weight_type, m.weight_bytes, m.params, c.threads, r.test, c.batch,
                           c.prompt, c.gen, c.depth, p.tokens_per_s.mean, p.tokens_per_s.std, p.figures.bytes_per_token,
                           p.figures.achieved_bytes_per_s / 1e9, p.figures.mbu, p.figures.flops_per_token,
                           p.figures.achieved_flops_per_s, p.figures.mfu, p.figures.predicted_tokens_per_s,
                           p.figures.predicted_bound);
        out += r.prefill ? fmt::format("{:.3f},{:.3f},", r.prefill->tokens_per_s.mean, r.prefill->tokens_per_s.std)
                         : std::string(",,");
        out += p.stream_gbps.samples.empty() ? std::string(",,")
                                             : fmt::format("{:.3f},{:.4f},", p.stream_gbps.mean, p.mbu_stream);
        out += fmt::format("{},{}\n", report.kernels, r.compute_path);
      }
      return out;
    case BenchFormat::kMarkdown:
      break;
  }
  out = "| model | type | size | params | threads | test | t/s | bytes/tok | GB/s | MBU | MBU run | Gop/s | MFU | path | bound t/s |\n"
        "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |\n";
  auto line = [&](const BenchCase& c, const std::string& test, const PhaseResult& p, const std::string& path) {
    std::string name = c.depth > 0 ? fmt::format("{} @ d{}", test, c.depth) : test;
    std::string mbu_run = p.stream_gbps.samples.empty() ? "-" : fmt::format("{:.0f}%", 100 * p.mbu_stream);
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {:.2f} ± {:.2f} | {} | {:.1f} | {:.0f}% | {} | {:.1f} | {:.1f}% | {} | {:.1f} ({}) |\n",
                       m.label(), m.weight_type, human_bytes(double(m.weight_bytes)), human_count(double(m.params)),
                       c.threads, name, p.tokens_per_s.mean, p.tokens_per_s.std, human_bytes(p.figures.bytes_per_token),
                       p.figures.achieved_bytes_per_s / 1e9, 100 * p.figures.mbu, mbu_run,
                       p.figures.achieved_flops_per_s / 1e9, 100 * p.figures.mfu, path, p.figures.predicted_tokens_per_s,
                       p.figures.predicted_bound);
  };
  for (const auto& r : report.rows) {
    const BenchCase& c = r.bench_case;
    if (r.prefill) {
      line(c, fmt::format("B{} pp{}", c.batch, c.prompt), *r.prefill, r.compute_path);
      line(c, fmt::format("B{} tg{}", c.batch, c.gen), r.result, r.compute_path);
    } else {
      line(c, r.speculative ? r.test + " " + r.speculative->drafter : r.test, r.result, r.compute_path);
    }
  }
  for (const auto& r : report.rows) {
    if (!r.speculative) continue;
    const SpeculativeFigures& s = *r.speculative;
    out += fmt::format(
        "\n{} {}: speedup {:.2f}x{}; acceptance rate {:.3f}, mean accepted length {:.2f} ({} drafted, {} accepted, {} "
        "verify steps, mean draft {:.2f}); time: drafting {:.1f}%, verify steps {:.1f}%; verify cost ratio {:.2f}\n",
        r.test, s.drafter, s.speedup, rounds_range(s.speedup_rounds), s.counts.acceptance_rate(), s.counts.mean_accepted_length(), s.counts.drafted_tokens,
        s.counts.accepted_tokens, s.counts.verify_steps, s.mean_draft_length, 100 * s.draft_share, 100 * s.verify_share,
        s.verify_cost_ratio);
    if (s.ngram_ceiling)
      out += fmt::format(
          "n-gram ceiling {:.2f}x (free drafting and verifying): {} of {} generated tokens repeat what followed the "
          "same {} tokens earlier; no lookup can draft the other {}\n",
          s.ngram_ceiling->speedup(), s.ngram_ceiling->draftable, s.ngram_ceiling->generated, s.ngram_ceiling->ngram_min,
          s.ngram_ceiling->generated - s.ngram_ceiling->draftable);
  }
  for (const auto& r : report.rows)
    if (r.collective)
      out += fmt::format("\n{}: split over {} ranks; collectives {:.3f} ms per token, {:.1f}% of the time\n", r.test,
                         r.collective->ranks, 1e3 * r.collective->seconds_per_token, 100 * r.collective->share);
  out += fmt::format("\nroofs: {}; kernels: {}; {} repetitions after a warm-up, mean ± std\n", report.roofs_source,
                     report.kernels, report.repetitions);
  out += "MBU: against the profile's sustained DRAM read; MBU run: against a plain read of the same weights timed "
         "between the repetitions\n";
  double highest_mbu = 0;
  for (const auto& r : report.rows) {
    highest_mbu = std::max(highest_mbu, r.result.figures.mbu);
    if (r.prefill) highest_mbu = std::max(highest_mbu, r.prefill->figures.mbu);
  }
  if (highest_mbu > 1.0)
    out += "MBU above 100 %: this run read memory faster than the profile's sustained read, so the machine's "
           "bandwidth has moved since it was probed (other tenants, or a quick probe); MBU run holds, and `tps probe` "
           "measures the roofs again\n";
  for (const auto& r : report.rows)
    if (r.breakdown) out += breakdown_markdown(r);
  return out;
}

}  // namespace tps
