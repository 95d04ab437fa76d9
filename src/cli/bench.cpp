// `tps bench`: in-process speed test of prefill (ppN), decode (tgN) and batched decode,
// with bytes and ops per token, bandwidth and compute efficiency, and the roofline bound.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "core/timer.h"
#include "bench/bench_model.h"
#include "bench/bench_plan.h"
#include "bench/bench_report.h"
#include "bench/bench_roofs.h"
#include "bench/bench_runner.h"
#include "cli/command.h"
#include "cli/synth_options.h"
#include "cli/model_session.h"
#include "cli/text_file.h"
#include "cli/speculative_options.h"
#include "core/error.h"
#include "kernels/matmul.h"
#include "model/model.h"

namespace tps::cli {

namespace {

struct BenchArgs {
  std::string model;
  std::string preset = "tinyllama-1.1b";
  std::string type = "q4_0";
  uint64_t seed = 1;
  float output_skew = 1.0f;
  std::string prompts = "512";
  std::string gens = "128";
  std::string batches;
  std::string depths = "0";
  std::string threads;
  int64_t batch_prompt = 0;
  int64_t batch_gen = 64;
  int repetitions = 3;
  std::string output = "md";
  std::string profile;
  bool progress = true;
  bool breakdown = false;
  std::string prompt;
  std::string prompt_file;
  SpeculativeArgs speculative;
  int tp = 1;
};

// One status line on stderr, rewritten in place on a terminal; silent otherwise.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO)) {}
  ~ProgressLine() { clear(); }
  void show(const std::string& text) {
    if (!enabled_) return;
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (shown_) std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  bool enabled_;
  bool shown_ = false;
};

int run_bench(const BenchArgs& a) {
  auto format = parse_bench_format(a.output);
  if (!format) fail("-o: unknown format '{}' (md, csv, json or jsonl)", a.output);
  if (a.repetitions < 1) fail("-r must be at least 1, got {}", a.repetitions);
  BenchPlanOptions plan_options;
  plan_options.prompts = parse_int_list(a.prompts, "-p");
  plan_options.gens = parse_int_list(a.gens, "-n");
  if (!a.batches.empty()) plan_options.batches = parse_int_list(a.batches, "-B");
  plan_options.depths = parse_int_list(a.depths, "-d");
  if (a.threads.empty()) {
    plan_options.threads = {ThreadPool::default_threads()};
  } else {
    for (int64_t t : parse_int_list(a.threads, "-t"))
      plan_options.threads.push_back(static_cast<int>(std::clamp<int64_t>(t, -1, 4096)));
  }
  plan_options.batch_prompt = a.batch_prompt;
  plan_options.batch_gen = a.batch_gen;
  std::vector<BenchCase> cases = expand_bench_plan(plan_options);
  const int max_threads = *std::max_element(plan_options.threads.begin(), plan_options.threads.end());

  ProgressLine progress(a.progress);
  auto status = [&](const std::string& s) { progress.show(s); };
  std::string path = a.model;
  std::string preset;
  // Every rank would write the same synthesized file at once.
  if (a.tp > 1 && path.empty()) fail("--tp needs -m FILE (make one with tps synth)");
  if (path.empty()) {
    ThreadPool pool(max_threads);
    path = cached_synth_model(a.preset, a.type, a.seed, a.output_skew, pool, status);
    preset = a.preset;
  }
  status("loading " + path);
  ModelSession session(path, a.tp);
  if (session.follower()) return session.follow();
  Model* model = &session.model();
  BenchReport report;
  report.model = describe_model(model->gguf(), model->config());
  report.model.preset = preset;
  if (!preset.empty()) report.model.output_skew = a.output_skew;
  report.repetitions = a.repetitions;
  report.created = utc_now_iso8601();
  LoadedProfile profile = find_or_probe_profile(a.profile, max_threads * a.tp, status);
  report.profile = profile_to_json(profile.profile);
  const HardwareSource roofs{profile.profile, std::nullopt};
  report.roofs_source = profile.source;
  report.kernels = isa_name(active_isa());

  const std::string& wt = report.model.weight_type;
  const bool quantized = wt != "f32" && wt != "f16" && wt != "bf16";
  const SpeculativeConfig spec = speculative_config(a.speculative);
  const std::unique_ptr<Model> draft = load_draft_model(a.speculative, *model);
  const std::string drafter = spec.mode == SpecMode::kNgram ? "ngram"
                              : draft                      ? std::filesystem::path(a.speculative.draft_model).filename().string()
                                                           : "";
  BenchRunner runner(*model, a.seed);
  const std::string text = a.prompt_file.empty() ? a.prompt : read_text_file(a.prompt_file);
  if (!text.empty()) {
    std::vector<int32_t> tokens = model->tokenizer().encode(text, true, true);
    if (tokens.empty()) fail("--prompt gives no tokens");
    runner.set_text_prompt(std::move(tokens));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const BenchCase& c = cases[i];
    auto case_status = [&](const std::string& s) {
      status(fmt::format("[{}/{}] {} {} threads: {}", i + 1, cases.size(), c.label(), c.threads, s));
    };
    // Split over ranks on this host, the row's threads are each rank's.
    const std::string path = compute_path(active_isa(), quantized, c.step_rows());
    if (spec.mode == SpecMode::kOff || c.kind == BenchKind::kPrefill) {
      report.rows.push_back(bench_row(runner.run(c, a.repetitions, c.threads, case_status, a.breakdown),
                                      report.model, roofs, path));
      continue;
    }
    // The plain row and the drafting row, measured in turns.
    const SpeculativePair pair = runner.run_speculative(c, a.repetitions, c.threads, case_status, a.breakdown,
                                                            {spec, draft.get()});
    report.rows.push_back(bench_row(pair.plain, report.model, roofs, path));
    BenchRow row = bench_row(pair.drafting, report.model, roofs, path);
    row.speculative = speculative_figures(pair.drafting, pair.plain, drafter, spec);
    report.rows.push_back(std::move(row));
  }
  progress.clear();
  fmt::print("{}", format_bench_report(report, *format));
  return 0;
}

const CommandRegistration kBench{
    "bench", "measure prefill, decode and batched-decode tokens/s against this machine's roofline",
    [](CLI::App& sub) {
      auto a = std::make_shared<BenchArgs>();
      sub.add_option("-m,--model", a->model, "GGUF to measure (default: a synthesized --preset/--type model)");
      sub.add_option("--preset", a->preset, "shape of the synthesized model (see `tps synth --list`)")
          ->capture_default_str();
      sub.add_option("--type", a->type, "weight type of the synthesized model")->capture_default_str();
      sub.add_option("--seed", a->seed, "seed for synthesized weights and token ids")->capture_default_str();
      add_output_skew_option(sub, a->output_skew);
      sub.add_option("-p,--n-prompt", a->prompts, "prompt sizes (ppN tests), comma list; 0: none")
          ->capture_default_str();
      sub.add_option("-n,--n-gen", a->gens, "generated tokens (tgN tests at batch 1), comma list; 0: none")
          ->capture_default_str();
      sub.add_option("-B,--batch", a->batches, "batched decode: numbers of parallel sequences, comma list");
      sub.add_option("--batch-prompt", a->batch_prompt, "prompt tokens per sequence for -B (default: first -p)");
      sub.add_option("--batch-gen", a->batch_gen, "generated tokens per sequence for -B")->capture_default_str();
      sub.add_option("-d,--n-depth", a->depths, "context already in the KV cache before each test, comma list")
          ->capture_default_str();
      sub.add_option("-t,--threads", a->threads, "thread counts, comma list (default: all CPUs)");
      sub.add_option("-r,--repetitions", a->repetitions, "timed repetitions after a warm-up")->capture_default_str();
      sub.add_option("-o,--output", a->output, "md, csv, json or jsonl")->capture_default_str();
      sub.add_option("--profile", a->profile, "hardware profile from `tps probe -o` (default: the cache's)");
      sub.add_flag("!--no-progress", a->progress, "no progress line on stderr");
      auto* prompt = sub.add_option("--prompt", a->prompt, "tg tests continue this text greedily (default: one random token)");
      sub.add_option("--prompt-file", a->prompt_file, "tg tests continue this file's text")->excludes(prompt);
      add_speculative_options(sub, a->speculative);
      add_tensor_parallel_option(sub, a->tp);
      sub.add_flag("--breakdown", a->breakdown,
                   "also time each test's measured phase step by step (rmsnorm, qkv, attention, ...): "
                   "where the time goes, and the GB/s of each weight step (not in csv)");
      return [a]() { return run_bench(*a); };
    }};

}  // namespace

}  // namespace tps::cli
