// `tps load`: measures any OpenAI-compatible server under load (docs/metrics.md).
#include <csignal>
#include <cmath>
#include <iostream>

#include <fmt/format.h>

#include "cli/command.h"
#include "core/error.h"
#include "loadgen/html_report.h"
#include "loadgen/load_runner.h"
#include "loadgen/results_file.h"
#include "loadgen/text_report.h"
#include "loadgen/workload.h"

namespace tps::cli {
namespace {

using namespace tps::loadgen;

struct LoadFlags {
  std::string url, endpoint = "completions", model, api_key;
  std::string concurrency, rate;
  double burstiness = 1.0;
  int64_t requests = 0;
  double duration = 0;
  std::string input_tokens = "512", output_tokens = "128", dataset, tokenizer_from;
  int64_t shared_prefix = 0, warmup = 0;
  std::string slo, extra_body;
  double timeout = 600;
  bool no_ignore_eos = false, quiet = false;
  uint64_t seed = 1;
  int64_t prompt_pool = 256;
  std::string out_json, out_html, out_csv;
};

std::vector<double> parse_values(const std::string& flag, const std::string& list, bool integers) {
  std::vector<double> values;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = std::min(list.find(',', start), list.size());
    std::string item = list.substr(start, end - start);
    start = end + 1;
    double v = 0;
    size_t used = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || !(v > 0) || (integers && (v != std::floor(v) || v > 100000)))
      fail("{} '{}': expected a comma-separated list of {} numbers, e.g. 1,4,16", flag, list,
           integers ? "positive whole" : "positive");
    values.push_back(v);
  }
  return values;
}

// The first Ctrl-C stops sending and lets the run save what it measured; the second
// (with the default action restored) ends the process.
std::atomic<bool> g_interrupted{false};

void on_interrupt(int) {
  g_interrupted = true;
  std::signal(SIGINT, SIG_DFL);
}

int run_load_command(const LoadFlags& f) {
  if (!f.concurrency.empty() && !f.rate.empty()) fail("give --concurrency or --rate, not both");
  if (f.requests > 0 && f.duration > 0) fail("give --requests or --duration, not both");
  if (f.endpoint != "completions" && f.endpoint != "chat")
    fail("--endpoint '{}': expected completions or chat", f.endpoint);
  if (f.burstiness <= 0) fail("--burstiness must be > 0");

  RunSettings settings;
  settings.endpoint = parse_endpoint_url(f.url);
  settings.endpoint.kind = f.endpoint;
  settings.endpoint.api_key = f.api_key;
  settings.endpoint.timeout_s = f.timeout;
  settings.endpoint.ignore_eos = !f.no_ignore_eos;
  if (!f.extra_body.empty()) {
    settings.endpoint.extra_body = nlohmann::json::parse(f.extra_body, nullptr, false);
    if (settings.endpoint.extra_body.is_discarded() || !settings.endpoint.extra_body.is_object())
      fail("--extra-body: expected a JSON object, e.g. '{{\"temperature\":0}}'");
  }
  settings.mode = f.rate.empty() ? "concurrency" : "rate";
  settings.values = f.rate.empty() ? parse_values("--concurrency", f.concurrency.empty() ? "1" : f.concurrency, true)
                                   : parse_values("--rate", f.rate, false);
  settings.burstiness = f.burstiness;
  settings.duration_s = f.duration;
  settings.requests = f.duration > 0 ? 0 : (f.requests > 0 ? f.requests : 100);
  settings.warmup = f.warmup;
  settings.slo = f.slo.empty() ? Slo{} : parse_slo(f.slo);
  settings.seed = f.seed;
  settings.progress = !f.quiet;

  OpenAiClient probe(settings.endpoint);
  settings.endpoint.model = !f.model.empty() ? f.model : first_listed_model(probe).value_or("");

  WorkloadSpec spec;
  spec.input = parse_length_spec("--input-tokens", f.input_tokens);
  spec.output = parse_length_spec("--output-tokens", f.output_tokens);
  spec.dataset = f.dataset;
  spec.shared_prefix = f.shared_prefix;
  spec.seed = f.seed;
  std::unique_ptr<TokenCounter> counter = !f.tokenizer_from.empty() ? make_gguf_token_counter(f.tokenizer_from)
                                                                    : make_server_token_counter(settings.endpoint);
  if (!counter) counter = make_estimating_token_counter();
  if (!counter->exact())
    std::cerr << "note: the server has no /tokenize and no --tokenizer-from was given: token counts are "
              << counter->name() << "\n";
  Workload workload = build_workload(spec, prompts_needed(settings, size_t(std::max<int64_t>(f.prompt_pool, 1))),
                                     settings.endpoint.kind, *counter);

  nlohmann::json environment = environment_json();
  settings.cancel = &g_interrupted;
  std::signal(SIGINT, on_interrupt);
  RunResult result = run_load(settings, workload.prompts, counter.get(), std::cerr);
  std::signal(SIGINT, SIG_DFL);

  std::vector<SweepSummary> summaries;
  for (const auto& p : result.points) {
    std::cout << format_summary(p.summary, settings.slo);
    summaries.push_back(p.summary);
  }
  if (summaries.size() > 1) std::cout << "\n" << format_overview(summaries);
  std::cout << fmt::format("input tokens counted by: {}\n", workload.input_tokens_source);

  nlohmann::json results = results_to_json(settings, workload, result, environment);
  if (!f.out_json.empty()) write_text_file(f.out_json, results.dump(1));
  if (!f.out_csv.empty()) write_text_file(f.out_csv, per_request_csv(result.points));
  if (!f.out_html.empty()) write_text_file(f.out_html, render_html_report(results));
  std::cout << std::flush;
  if (!result.stopped.empty()) {
    std::cerr << "tps: the run stopped early: " << result.stopped << "\n";
    return 1;
  }
  return 0;
}

const CommandRegistration kRegistration{
    "load", "load-test any OpenAI-compatible server: TTFT, TPOT, ITL, E2E, throughput, goodput",
    [](CLI::App& app) -> std::function<int()> {
      auto f = std::make_shared<LoadFlags>();
      app.add_option("--url", f->url, "server, e.g. http://127.0.0.1:8080 (a path ending in /v1 is the API base)")
          ->required();
      app.add_option("--endpoint", f->endpoint, "completions or chat")->capture_default_str();
      app.add_option("--model", f->model, "model name to send (default: the first the server lists)");
      app.add_option("--concurrency", f->concurrency, "closed loop: clients, a list sweeps, e.g. 1,4,16");
      app.add_option("--rate", f->rate, "open loop: requests/s, a list sweeps, e.g. 2,4,8 (inf: all at once)");
      app.add_option("--burstiness", f->burstiness, "gamma shape of arrival gaps (1 = Poisson, <1 burstier)")
          ->capture_default_str();
      app.add_option("--requests", f->requests, "measured requests per sweep value (default 100)");
      app.add_option("--duration", f->duration, "seconds per sweep value instead of a request count");
      app.add_option("--input-tokens", f->input_tokens, "prompt length TOKENS[:STDDEV]")->capture_default_str();
      app.add_option("--output-tokens", f->output_tokens, "output length TOKENS[:STDDEV]")->capture_default_str();
      app.add_option("--dataset", f->dataset, "JSONL: {\"prompt\"|\"messages\", optional \"output_tokens\"}");
      app.add_option("--tokenizer-from", f->tokenizer_from,
                     "count tokens with this GGUF model's tokenizer instead of the server's /tokenize");
      app.add_option("--shared-prefix", f->shared_prefix, "tokens every synthetic prompt shares at its start");
      app.add_option("--warmup", f->warmup, "requests sent and left out before each sweep value");
      app.add_option("--slo", f->slo, "goodput objectives, e.g. ttft=500ms,tpot=50ms,e2e=10s");
      app.add_option("--api-key", f->api_key, "sent as a bearer token");
      app.add_option("--timeout", f->timeout, "seconds before a request counts as timed out")->capture_default_str();
      app.add_flag("--no-ignore-eos", f->no_ignore_eos, "do not ask the server to ignore end-of-sequence");
      app.add_option("--extra-body", f->extra_body, "JSON merged into every request body");
      app.add_option("--seed", f->seed, "seed of prompts and arrival times")->capture_default_str();
      app.add_option("--prompt-pool", f->prompt_pool, "distinct prompts per sweep value with --duration")
          ->capture_default_str();
      app.add_flag("-q,--quiet", f->quiet, "no live progress line");
      app.add_option("-o,--output", f->out_json, "write every setting, summary and raw timing as JSON");
      app.add_option("--html", f->out_html, "write a self-contained HTML report with charts");
      app.add_option("--csv", f->out_csv, "write one CSV row per request");
      return [f] { return run_load_command(*f); };
    }};

}  // namespace
}  // namespace tps::cli
