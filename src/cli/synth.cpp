// `tps synth`: a random-weight GGUF with the exact shape of a named model.
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/command.h"
#include "cli/synth_options.h"
#include "core/error.h"
#include "core/timer.h"
#include "model/synth.h"

namespace tps::cli {

namespace {

struct SynthArgs {
  bool list = false;
  std::string preset;
  std::string type = "q4_0";
  std::string output;
  uint64_t seed = 1;
  std::string vocab_from;
  int64_t layers = 0;
  float output_skew = 1.0f;
  int threads = 0;
};

std::string human_count(int64_t n) {
  if (n >= 1'000'000'000) return fmt::format("{:.2f}B", n / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.1f}M", n / 1e6);
  return fmt::format("{:.0f}K", n / 1e3);
}

void print_presets() {
  fmt::print("{:<16} {:<6} {:>5} {:>6} {:>9} {:>6} {:>7} {:>6} {:>7}  {}\n", "preset", "arch", "dim", "layers",
             "heads/kv", "ffn", "vocab", "tied", "params", "copies");
  for (const auto& p : model_presets()) {
    const auto& c = p.config;
    fmt::print("{:<16} {:<6} {:>5} {:>6} {:>9} {:>6} {:>7} {:>6} {:>7}  {}\n", p.name, c.arch, c.dim, c.n_layers,
               fmt::format("{}/{}", c.n_heads, c.n_kv_heads), c.ffn_dim, c.vocab_size, c.tied_output ? "yes" : "no",
               human_count(c.parameter_count()), p.description);
  }
  fmt::print("\nweight types: {}\n", fmt::join(weight_scheme_names(), " "));
}

int run_synth(const SynthArgs& a) {
  if (a.list) {
    print_presets();
    return 0;
  }
  if (a.preset.empty()) fail("--preset is required (see `tps synth --list`)");
  if (a.output.empty()) fail("-o/--output is required");
  auto config = find_model_preset(a.preset);
  if (!config) fail("unknown preset '{}' (see `tps synth --list`)", a.preset);
  auto scheme = parse_weight_scheme(a.type);
  if (!scheme) fail("unknown weight type '{}' (one of: {})", a.type, fmt::join(weight_scheme_names(), " "));
  if (a.layers > 0) config->n_layers = a.layers;

  SynthOptions options{*config, *scheme, a.seed, a.vocab_from, a.output_skew};
  ThreadPool pool(a.threads > 0 ? a.threads : ThreadPool::default_threads());
  double t0 = now_seconds();
  SynthResult r = synthesize_model(options, a.output, pool);
  double seconds = now_seconds() - t0;
  for (const auto& note : r.notes) fmt::print(stderr, "note: {}\n", note);
  fmt::print("{}: {} ({} layers, {} parameters), {}, {:.1f} MB in {:.1f} s\n", a.output, r.config.name,
             r.config.n_layers, human_count(r.config.parameter_count()), scheme->name, r.file_bytes / 1e6, seconds);
  return 0;
}

const CommandRegistration kSynth{
    "synth", "write a GGUF with random weights and the shape of a named model (for speed tests)",
    [](CLI::App& sub) {
      auto a = std::make_shared<SynthArgs>();
      sub.add_flag("--list", a->list, "list the presets and weight types");
      sub.add_option("--preset", a->preset, "model shape, e.g. tinyllama-1.1b");
      sub.add_option("--type", a->type, fmt::format("weight type ({})", fmt::join(weight_scheme_names(), " ")))
          ->capture_default_str();
      sub.add_option("-o,--output", a->output, "GGUF file to write");
      sub.add_option("--seed", a->seed, "random seed")->capture_default_str();
      sub.add_option("--vocab-from", a->vocab_from, "copy the tokenizer of this GGUF (vocab size follows it)");
      sub.add_option("--layers", a->layers, "override the number of layers (small test models)")
          ->check(CLI::PositiveNumber);
      add_output_skew_option(sub, a->output_skew);
      sub.add_option("-t,--threads", a->threads, "threads (default: all)")->check(CLI::PositiveNumber);
      return [a]() { return run_synth(*a); };
    }};

}  // namespace

}  // namespace tps::cli
