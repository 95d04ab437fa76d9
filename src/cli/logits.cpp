// tps logits: teacher-forced comparison of a model's logits with a reference dump.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/model_session.h"
#include "engine/logit_check.h"
#include "kernels/matmul.h"

namespace tps::cli {

namespace {

struct LogitsArgs {
  std::string model;
  std::string golden;
  double max_rms_rel = -1;  // < 0: the default for the model's weight types
  double min_top1 = -1;
  int threads = 0;
  bool json = false;
  int tp = 1;
  std::string write;
};

int run(const LogitsArgs& a) {
  ModelSession session(a.model, a.tp);
  if (session.follower()) return session.follow();
  Model* model = &session.model();
  GoldenLogits golden = read_golden_logits(a.golden);
  LogitsComparison c = compare_with_golden(*model, golden, a.threads > 0 ? a.threads : ThreadPool::default_threads());
  LogitsTolerance tol = default_tolerance(*model);
  if (a.max_rms_rel >= 0) tol.max_rms_rel = a.max_rms_rel;
  if (a.min_top1 >= 0) tol.min_top1 = a.min_top1;
  const bool pass = c.mean_rms_rel <= tol.max_rms_rel && c.top1_agreement >= tol.min_top1;
  if (!a.write.empty()) write_golden_logits(a.write, {golden.prompt_ids, golden.step_ids, c.logits});

  if (a.json) {
    nlohmann::json steps = nlohmann::json::array();
    for (const StepComparison& s : c.steps)
      steps.push_back({{"rms_rel", s.rms_rel}, {"max_abs", s.max_abs}, {"top1", s.top1}, {"reference_top1", s.reference_top1}});
    nlohmann::json out = {{"model", a.model},
                          {"golden", a.golden},
                          {"isa", isa_name(active_isa())},
                          {"steps", steps},
                          {"mean_rms_rel", c.mean_rms_rel},
                          {"max_abs", c.max_abs},
                          {"top1_agreement", c.top1_agreement},
                          {"max_rms_rel", tol.max_rms_rel},
                          {"min_top1", tol.min_top1},
                          {"pass", pass}};
    std::printf("%s\n", out.dump(2).c_str());
  } else {
    std::printf("step  rms_rel   max_abs   top1  ref\n");
    for (size_t i = 0; i < c.steps.size(); ++i) {
      const StepComparison& s = c.steps[i];
      std::printf("%4zu  %.6f  %.6f  %5d  %5d%s\n", i, s.rms_rel, s.max_abs, s.top1, s.reference_top1,
                  s.top1 == s.reference_top1 ? "" : "  *");
    }
    std::printf("mean rms_rel %.6f (max %.4g), max abs %.6f, top-1 %.1f%% (min %.1f%%), isa %s: %s\n", c.mean_rms_rel,
                tol.max_rms_rel, c.max_abs, c.top1_agreement * 100, tol.min_top1 * 100, isa_name(active_isa()),
                pass ? "PASS" : "FAIL");
  }
  return pass ? 0 : 1;
}

CommandRegistration registration{
    "logits", "compare a model's logits with a reference dump, teacher-forced", [](CLI::App& sub) {
      auto a = std::make_shared<LogitsArgs>();
      sub.add_option("-m,--model", a->model, "GGUF model file")->required();
      sub.add_option("--golden", a->golden, "reference JSON (prompt_ids, steps[].id, steps[].logits)")->required();
      sub.add_option("--max-rms-rel", a->max_rms_rel, "largest mean rms_rel that passes (default: by weight type)");
      sub.add_option("--min-top1", a->min_top1, "smallest top-1 agreement (0..1) that passes (default: by weight type)");
      sub.add_option("-t,--threads", a->threads, "threads (default: the cores available)");
      sub.add_flag("--json", a->json, "print the comparison as JSON");
      sub.add_option("--write", a->write,
                     "also write this run's logits as a reference in the same format (to compare runs: --tp N "
                     "against one process, one build against another)");
      add_tensor_parallel_option(sub, a->tp);
      return [a] { return run(*a); };
    }};

}  // namespace

}  // namespace tps::cli
