#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/bench_plan.h"
#include "bench/bench_report.h"
#include "bench/bench_roofs.h"
#include "core/error.h"
#include "kernels/matmul.h"
#include "model/synth.h"
#include "roofline/bench_results.h"
#include "roofline/probe.h"
#include "support/test_files.h"

namespace tps {
namespace {

namespace fs = std::filesystem;

TEST(BenchPlan, SweepsAreTheCartesianProduct) {
  BenchPlanOptions o;
  o.prompts = {16, 32};
  o.gens = {8};
  o.batches = {1, 4};
  o.depths = {0, 64};
  o.threads = {1, 2};
  o.batch_gen = 5;
  auto cases = expand_bench_plan(o);
  ASSERT_EQ(cases.size(), 2u * 2u * (2 + 1 + 2));
  // threads outermost, then depth, then pp, tg, batched.
  EXPECT_EQ(cases[0].threads, 1);
  EXPECT_EQ(cases[0].depth, 0);
  EXPECT_EQ(cases[0].test_name(), "pp16");
  EXPECT_EQ(cases[1].test_name(), "pp32");
  EXPECT_EQ(cases[2].test_name(), "tg8");
  EXPECT_EQ(cases[3].test_name(), "batched");
  EXPECT_EQ(cases[3].batch, 1);
  EXPECT_EQ(cases[4].batch, 4);
  EXPECT_EQ(cases[4].prompt, 16);  // --batch-prompt defaults to the first -p
  EXPECT_EQ(cases[4].gen, 5);
  EXPECT_EQ(cases[4].tokens(), 20);
  EXPECT_EQ(cases[5].depth, 64);
  EXPECT_EQ(cases[10].threads, 2);
  EXPECT_EQ(cases[9].label(), "B4 pp16+tg5 @ d64");
}

TEST(BenchPlan, ZeroDisablesAndBadValuesAreErrors) {
  BenchPlanOptions o;
  o.prompts = {0};
  o.gens = {128};
  o.threads = {2};
  auto cases = expand_bench_plan(o);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].kind, BenchKind::kDecode);
  o.gens = {0};
  EXPECT_THROW(expand_bench_plan(o), Error);  // nothing to run
  o.gens = {-1};
  EXPECT_THROW(expand_bench_plan(o), Error);
  o.gens = {8};
  o.batches = {0};
  EXPECT_THROW(expand_bench_plan(o), Error);
  o.batches = {};
  o.threads = {0};
  EXPECT_THROW(expand_bench_plan(o), Error);

  EXPECT_EQ(parse_int_list("1,4,16", "-B"), (std::vector<int64_t>{1, 4, 16}));
  EXPECT_EQ(parse_int_list("512", "-p"), (std::vector<int64_t>{512}));
  EXPECT_THROW(parse_int_list("1,,2", "-B"), Error);
  EXPECT_THROW(parse_int_list("abc", "-p"), Error);
  EXPECT_THROW(parse_int_list("", "-p"), Error);
  EXPECT_THROW(parse_int_list("4x", "-p"), Error);
}

// A made-up hardware profile of a 2-CPU machine (no probing).
HardwareProfile test_profile() {
  HardwareProfile p;
  p.cpu.model = "test cpu";
  p.cpu.logical_cpus = 2;
  p.cpu.memory_bytes = int64_t{1} << 34;
  p.threads = 2;
  p.dram_read_gbps = 30;
  p.bandwidth = {{int64_t{1} << 22, 1, 60}, {int64_t{1} << 30, 1, 15}, {int64_t{1} << 22, 2, 120}, {int64_t{1} << 30, 2, 30}};
  p.peaks = {{"f32", "avx512", "measured", {{1, 1e11}, {2, 2e11}}}, {"int8", "vnni", "measured", {{1, 4e11}, {2, 8e11}}}};
  return p;
}

// A bench row's figures are the roofline's, checked against hand arithmetic: tinyllama
// whose matrices take exactly 4.5 bits per weight, decoding at a mean context of 64
// positions.
TEST(BenchFigures, AreTheRooflinesAgainstTheProbedRoofs) {
  BenchModelInfo model;
  model.config = *find_model_preset("tinyllama-1.1b");
  model.weight_type = "q4_0";
  model.params = 1'100'000'000;
  model.weight_bytes = 700'000'000;
  // The matrices a pass reads (below) at 0.5625 B, and 92,160 f32 norm values.
  model.step_weight_bytes = int64_t{1'034'420'224} * 9 / 16 + 92'160 * 4;
  const HardwareSource hw{test_profile(), std::nullopt};
  const BenchCase tg{BenchKind::kDecode, 0, 128, 1, 0, 1};
  const RowAnalysis f = bound_of_row(measured_run(tg, model, 1, "int8", 20.0), hw);
  // Per layer: q and o 2048 x 2048, k and v 2048 x 256, gate, up and down 2048 x 5632:
  // 44,040,192 weights; x 22 layers + the 2048 x 32000 head = 1,034,420,224 weights
  // x 0.5625 B; norms (22 x 2 x 2048 + 2048) x 4 B; K and V of 64 cached positions read
  // and 1 written: 65 x 22 layers x 2 x 256 values x 2 B.
  const double bytes = 1'034'420'224 * 0.5625 + (22 * 2 * 2048 + 2048) * 4.0 + 65 * 22 * 2 * 256 * 2.0;
  EXPECT_DOUBLE_EQ(f.bytes_per_token, bytes);
  // One thread reads a working set over 4 MiB at 15 GB/s: memory-bound.
  EXPECT_NEAR(f.predicted_tokens_per_s, 15e9 / bytes, 1e-9);
  EXPECT_EQ(f.predicted_bound, "memory");
  EXPECT_NEAR(f.mbu, 20.0 * bytes / 15e9, 1e-12);
  EXPECT_EQ(f.peak_flops_per_s, 4e11);  // the int8 path at one thread
  EXPECT_NEAR(f.mfu, 20.0 * f.flops_per_token / 4e11, 1e-12);
  // Kernels on the f32 path are held to the f32 peak.
  EXPECT_EQ(bound_of_row(measured_run(tg, model, 1, "f32", 20.0), hw).peak_flops_per_s, 1e11);
  // Split over two ranks of one thread each: the roofs of two threads.
  EXPECT_NEAR(bound_of_row(measured_run(tg, model, 2, "int8", 20.0), hw).predicted_tokens_per_s, 30e9 / bytes, 1e-9);
}

// A row that read memory faster than the profile's sustained read (MBU over 1) gets a
// note that the roofs are stale, in the markdown report; one at 0.9 does not.
TEST(BenchReport, SaysWhenARunOutreadsTheProfile) {
  BenchReport report;
  report.model.config = *find_model_preset("tinyllama-1.1b");
  BenchRow row;
  row.test = "tg128";
  row.bench_case = {BenchKind::kDecode, 0, 128, 1, 0, 1};
  row.result.figures.mbu = 0.9;
  report.rows.push_back(row);
  const std::string note = "MBU above 100 %";
  EXPECT_EQ(format_bench_report(report, BenchFormat::kMarkdown).find(note), std::string::npos);
  report.rows[0].result.figures.mbu = 1.04;
  EXPECT_NE(format_bench_report(report, BenchFormat::kMarkdown).find(note), std::string::npos);
}

// A profile the bench cached from an older probe (one whose int8 peak read low) is not
// used: the next one in the cache is, or none.
TEST(BenchProfile, CachedProfilesFromAnOlderProbeAreSkipped) {
  const fs::path dir = fs::temp_directory_path() / ("tps_profile_cache_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const HardwareProfile p = test_profile();
  nlohmann::json old = profile_to_json(p);
  old.erase("probe_version");  // as the probe wrote them before it had a version
  std::ofstream(dir / "profile.json") << old.dump();
  std::vector<std::string> lines;
  auto status = [&](const std::string& s) { lines.push_back(s); };
  EXPECT_FALSE(cached_profile(dir.string(), p.cpu, 0.0, 2, status).has_value());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("older probe (version 1, now " + std::to_string(kProbeVersion)), std::string::npos)
      << lines[0];

  std::ofstream(dir / "profile-quick.json") << profile_to_json(p).dump();
  const std::optional<LoadedProfile> cached = cached_profile(dir.string(), p.cpu, 0.0, 2, status);
  ASSERT_TRUE(cached.has_value());
  EXPECT_EQ(cached->profile.probe_version, kProbeVersion);
  EXPECT_NE(cached->source.find("profile-quick.json"), std::string::npos) << cached->source;
  fs::remove_all(dir);
}

// The machines change under a cache directory: a profile of another CPU is not used,
// nor a quick one probed while others' work shared the CPUs, once the load is lower,
// nor a quick one measured on fewer threads than the bench runs.
TEST(BenchProfile, CachedProfilesOfAnotherCpuOrABusyOrNarrowerQuickProbeAreSkipped) {
  const fs::path dir = fs::temp_directory_path() / ("tps_profile_cpu_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  HardwareProfile p = test_profile();
  p.quick = true;
  std::ofstream(dir / "profile-quick.json") << profile_to_json(p).dump();
  std::vector<std::string> lines;
  auto status = [&](const std::string& s) { lines.push_back(s); };
  ASSERT_TRUE(cached_profile(dir.string(), p.cpu, 0.0, 2, status).has_value());
  for (auto other : {&CpuInfo::model, &CpuInfo::vendor}) {
    CpuInfo here = p.cpu;
    here.*other = "another";
    EXPECT_FALSE(cached_profile(dir.string(), here, 0.0, 2, status).has_value());
  }
  CpuInfo more_cpus = p.cpu, other_isa = p.cpu;
  more_cpus.logical_cpus = 4;
  other_isa.isa.push_back("avx512_vnni");
  EXPECT_FALSE(cached_profile(dir.string(), more_cpus, 0.0, 2, status).has_value());
  EXPECT_FALSE(cached_profile(dir.string(), other_isa, 0.0, 2, status).has_value());
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[2].find("another CPU (test cpu, 2 CPUs; this one: test cpu, 4 CPUs)"), std::string::npos) << lines[2];

  p.load_average = 2.6;  // probed while the CPUs were busy
  std::ofstream(dir / "profile-quick.json") << profile_to_json(p).dump();
  EXPECT_FALSE(cached_profile(dir.string(), p.cpu, 0.3, 2, status).has_value());
  EXPECT_NE(lines.back().find("quick probe under a load average of 2.6 (now 0.3)"), std::string::npos) << lines.back();
  EXPECT_TRUE(cached_profile(dir.string(), p.cpu, 3.0, 2, status).has_value()) << "no calmer now: a new probe reads no better";
  p.load_average = 0;
  p.threads = 1;  // a quick probe made by a 1-thread bench
  std::ofstream(dir / "profile-quick.json") << profile_to_json(p).dump();
  EXPECT_TRUE(cached_profile(dir.string(), p.cpu, 0.0, 1, status).has_value());
  EXPECT_FALSE(cached_profile(dir.string(), p.cpu, 0.0, 2, status).has_value());
  EXPECT_NE(lines.back().find("quick probe on 1 thread (this bench runs 2)"), std::string::npos) << lines.back();
  EXPECT_TRUE(cached_profile(dir.string(), p.cpu, 0.0, 1, status).has_value());
  p.threads = 2;
  std::ofstream(dir / "profile-quick.json") << profile_to_json(p).dump();
  EXPECT_TRUE(cached_profile(dir.string(), p.cpu, 0.0, 8, status).has_value()) << "8 threads on 2 CPUs run as 2";
  p.quick = false;  // the user's own full profile stays, however busy or narrow
  p.load_average = 2.6;
  p.threads = 1;
  std::ofstream(dir / "profile-quick.json") << profile_to_json(p).dump();
  EXPECT_TRUE(cached_profile(dir.string(), p.cpu, 0.3, 2, status).has_value());
  fs::remove_all(dir);
}

// The command on a tiny synthesized model with a made-up hardware profile (no probing).
class BenchCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("tps_bench_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    ThreadPool pool(2);
    SynthOptions o{*find_model_preset("stories260k"), *parse_weight_scheme("q8_0"), 1, ""};
    synthesize_model(o, model_path(), pool);
    synthesize_model({*find_model_preset("stories260k"), *parse_weight_scheme("f16"), 1, ""}, f16_model_path(), pool);
    std::ofstream(profile_path()) << profile_to_json(test_profile()).dump();
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string model_path() { return (dir_ / "tiny.gguf").string(); }
  static std::string f16_model_path() { return (dir_ / "tiny-f16.gguf").string(); }
  static std::string profile_path() { return (dir_ / "profile.json").string(); }

  // Runs `tps bench` on the tiny model (with environment assignments `env`); returns the
  // exit code, stdout in `out`.
  static int bench(const std::string& args, std::string* out = nullptr, const std::string& env = "") {
    std::string out_file = (dir_ / "out.txt").string();
    std::string cmd = env + " " + std::string(TPS_BINARY) + " bench -m " + model_path() + " --profile " + profile_path() + " " +
                      args + " >" + out_file + " 2>/dev/null";
    int status = std::system(cmd.c_str());
    if (out) {
      std::ifstream in(out_file);
      std::stringstream ss;
      ss << in.rdbuf();
      *out = ss.str();
    }
    return WEXITSTATUS(status);
  }

  static fs::path dir_;
};

fs::path BenchCommand::dir_;

const std::string kSmall = "-p 16 -n 4 -r 2 -t 1";  // one thread: quick even on a busy machine

// A row says which matmul kernels produced it: the best the CPU has, or what TPS_ISA forced.
TEST_F(BenchCommand, RowsNameTheKernelsThatRan) {
  std::string out;
  ASSERT_EQ(bench(kSmall + " -o json", &out, "TPS_ISA=scalar"), 0);
  for (const auto& r : nlohmann::json::parse(out)["results"]) EXPECT_EQ(r["kernels"], "scalar") << r.dump();
  ASSERT_EQ(bench(kSmall + " -o json", &out), 0);
  for (const auto& r : nlohmann::json::parse(out)["results"]) EXPECT_EQ(r["kernels"], isa_name(active_isa()));
  ASSERT_EQ(bench(kSmall, &out), 0);
  EXPECT_NE(out.find(std::string("kernels: ") + isa_name(active_isa())), std::string::npos) << out;
}

// The opt-in bf16 float math (TPS_FLOAT_MATH=bf16) names its path on a float model's
// rows, where the CPU runs it; elsewhere it is a one-line error. An unknown choice is one.
TEST_F(BenchCommand, RowsNameTheBf16FloatMathWhereItRuns) {
  using test::read_text;
  const std::string out = (dir_ / "out.txt").string(), err = (dir_ / "err.txt").string();
  const std::string run = std::string(TPS_BINARY) + " bench -m " + f16_model_path() + " --profile " + profile_path() +
                          " " + kSmall + " -o json >" + out + " 2>" + err;
  const int status = WEXITSTATUS(std::system(("TPS_FLOAT_MATH=bf16 " + run).c_str()));
  if (cpu_has_avx512_bf16()) {
    ASSERT_EQ(status, 0) << read_text(err);
    for (const auto& r : nlohmann::json::parse(read_text(out))["results"])
      EXPECT_EQ(r["compute_path"], "bf16") << r.dump();
  } else {
    EXPECT_EQ(status, 2);
    EXPECT_NE(read_text(err).find("TPS_FLOAT_MATH=bf16 needs a CPU with AVX512-BF16"), std::string::npos)
        << read_text(err);
  }
  ASSERT_EQ(WEXITSTATUS(std::system(run.c_str())), 0) << read_text(err);
  for (const auto& r : nlohmann::json::parse(read_text(out))["results"]) EXPECT_EQ(r["compute_path"], "f32") << r.dump();
  EXPECT_EQ(WEXITSTATUS(std::system(("TPS_FLOAT_MATH=f64 " + run).c_str())), 2);
  EXPECT_NE(read_text(err).find("TPS_FLOAT_MATH=f64 is not one of f32, bf16"), std::string::npos) << read_text(err);
}

TEST_F(BenchCommand, JsonFollowsTheBenchFormatAndSweeps) {
  std::string out;
  ASSERT_EQ(bench("-p 4,8 -n 2 -B 1,3 --batch-prompt 4 --batch-gen 2 -d 0,8 -t 1,2 -r 2 -o json", &out), 0);
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["schema"], "tps.bench/1");
  // 2 threads x 2 depths x (2 pp + 1 tg + 2 batched).
  ASSERT_EQ(j["results"].size(), 20u);
  for (const auto& r : j["results"]) {
    EXPECT_GT(r["tokens_per_s"].get<double>(), 0) << r.dump();
    EXPECT_GT(r["bytes_per_token"].get<double>(), 0);
    EXPECT_GT(r["bound_tokens_per_s"].get<double>(), 0);
    EXPECT_EQ(r["samples"].size(), 2u);
    EXPECT_EQ(r["model"]["weight_type"], "q8_0");
    EXPECT_EQ(r["model"]["shape"]["dim"], 64);
    if (r["test"] != "pp4" && r["test"] != "pp8") {
      // Decode phases carry the in-run read baseline: one sample per repetition + 1.
      EXPECT_EQ(r["stream_gbps_samples"].size(), 3u) << r.dump();
      EXPECT_GT(r["stream_gbps"].get<double>(), 0);
      EXPECT_NEAR(r["mbu_stream"].get<double>(),
                  r["achieved_gbps"].get<double>() / r["stream_gbps"].get<double>(), 1e-9);
    } else {
      EXPECT_FALSE(r.contains("stream_gbps")) << "prefill is not bandwidth-bound: no baseline";
    }
    if (r["test"] == "batched") {
      EXPECT_GT(r["prefill"]["tokens_per_s"].get<double>(), 0);
      EXPECT_EQ(r["gen_tokens"], 2);
      EXPECT_EQ(r["prompt_tokens"], 4);
    }
  }
  const auto& last = j["results"][19];
  EXPECT_EQ(last["threads"], 2);
  EXPECT_EQ(last["depth"], 8);
  EXPECT_EQ(last["batch"], 3);
  // What `tps roofline --measured` reads.
  BenchResults parsed = parse_bench_results(j, "bench output");
  EXPECT_EQ(parsed.rows.size(), 20u);
  ASSERT_TRUE(parsed.profile.has_value());
  EXPECT_EQ(parsed.profile->dram_read_gbps, 30);
  // One cost model: the roofline's analysis of each row read back is the bench's.
  const HardwareSource hw{parsed.profile, std::nullopt};
  for (size_t i = 0; i < parsed.rows.size(); ++i) {
    const auto& r = j["results"][i];
    const RowAnalysis a = bound_of_row(parsed.rows[i], hw);
    EXPECT_NEAR(a.mbu, r["mbu"].get<double>(), 1e-9 * a.mbu) << r.dump();
    EXPECT_NEAR(a.mfu, r["mfu"].get<double>(), 1e-9 * a.mfu) << r.dump();
    EXPECT_NEAR(a.predicted_tokens_per_s, r["bound_tokens_per_s"].get<double>(), 1e-9 * a.predicted_tokens_per_s);
    EXPECT_EQ(a.predicted_bound, r["bound"]) << r.dump();
  }
}

// A drafting row and its plain row are timed in turns, one of each per round, and the
// speedup is the median of the rounds' ratios.
TEST_F(BenchCommand, SpeculativeRowsTakeTurnsWithThePlainRow) {
  std::string out;
  ASSERT_EQ(bench("-p 0 -n 16 -r 3 -t 1 --spec ngram --ngram-min 1 --prompt 'one two one two one two' -o json", &out), 0);
  const auto rows = nlohmann::json::parse(out)["results"];
  ASSERT_EQ(rows.size(), 2u);
  const auto &plain = rows[0]["samples"], &drafting = rows[1]["samples"];
  const auto& rounds = rows[1]["speculative"]["speedup_rounds"];
  ASSERT_EQ(plain.size(), 3u);
  ASSERT_EQ(drafting.size(), 3u);
  ASSERT_EQ(rounds.size(), 3u) << rows[1].dump();
  std::vector<double> ratios;
  for (size_t r = 0; r < 3; ++r) {
    ratios.push_back(drafting[r].get<double>() / plain[r].get<double>());
    EXPECT_DOUBLE_EQ(rounds[r].get<double>(), ratios.back());
  }
  std::sort(ratios.begin(), ratios.end());
  EXPECT_DOUBLE_EQ(rows[1]["speculative"]["speedup"].get<double>(), ratios[1]);
  // The plain row's requests drafted nothing; the drafting row's did.
  EXPECT_FALSE(rows[0].contains("speculative"));
  EXPECT_GT(rows[1]["speculative"]["drafted_tokens"].get<int64_t>(), 0) << rows[1].dump();
}

// An n-gram row says how far lookup could go on the text it generated, and no run
// accepts more drafts than there are tokens a lookup could draft.
TEST_F(BenchCommand, NgramRowsGiveTheTextsCeiling) {
  std::string out;
  const std::string args = "-p 0 -n 64 -r 1 -t 1 --spec ngram --ngram-min 1 --draft-min 2 --draft-max 2 --prompt "
                           "'Once upon a time, there was a little girl named Lily'";
  ASSERT_EQ(bench(args + " -o json", &out), 0);
  const auto rows = nlohmann::json::parse(out)["results"];
  ASSERT_EQ(rows.size(), 2u);
  const auto& spec = rows[1]["speculative"];
  ASSERT_TRUE(spec.contains("ngram_ceiling")) << spec.dump();
  const auto& ceiling = spec["ngram_ceiling"];
  EXPECT_EQ(ceiling["ngram_min"], 1);
  const int64_t generated = ceiling["generated"], draftable = ceiling["draftable"], steps = ceiling["steps"];
  EXPECT_EQ(generated, 64);  // the decode steps' tokens; the first came with the prompt
  EXPECT_LE(spec["accepted_tokens"].get<int64_t>(), draftable) << spec.dump();
  // Each step adds one token of its own and at most draft_max (2) drafted ones.
  EXPECT_GE(steps, std::max(generated - draftable, (generated + 2) / 3));
  EXPECT_LE(steps, generated - (draftable + 1) / 2);
  EXPECT_DOUBLE_EQ(ceiling["speedup"].get<double>(), double(generated) / double(steps));
  ASSERT_EQ(bench(args, &out), 0);
  EXPECT_NE(out.find("n-gram ceiling"), std::string::npos) << out;
}

TEST_F(BenchCommand, EveryOutputFormatParses) {
  std::string out;
  ASSERT_EQ(bench(kSmall + " -B 2 --batch-gen 2 -o jsonl", &out), 0);
  std::istringstream lines(out);
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j["schema"], "tps.bench/1");
    EXPECT_TRUE(j.contains("tokens_per_s"));
  }
  EXPECT_EQ(n, 3);

  ASSERT_EQ(bench(kSmall + " -B 2 --batch-gen 2 -o csv", &out), 0);
  std::istringstream csv(out);
  std::string header, row;
  std::getline(csv, header);
  size_t columns = std::count(header.begin(), header.end(), ',');
  int rows = 0;
  while (std::getline(csv, row)) {
    EXPECT_EQ(static_cast<size_t>(std::count(row.begin(), row.end(), ',')), columns) << row;
    ++rows;
  }
  EXPECT_EQ(rows, 3);

  ASSERT_EQ(bench(kSmall + " -B 2 --batch-gen 2", &out), 0);  // md by default
  EXPECT_NE(out.find("| model | type |"), std::string::npos);
  EXPECT_NE(out.find("| pp16 |"), std::string::npos);
  EXPECT_NE(out.find("| tg4 |"), std::string::npos);
  EXPECT_NE(out.find("| B2 pp16 |"), std::string::npos);
  EXPECT_NE(out.find("| B2 tg2 |"), std::string::npos);
}

TEST_F(BenchCommand, BreakdownAccountsForTheTimeAndTheWeights) {
  std::string out;
  ASSERT_EQ(bench(kSmall + " --breakdown -o json", &out), 0);
  auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["results"].size(), 2u);
  std::map<std::string, double> weights_per_step;  // by test
  for (const auto& r : j["results"]) {
    ASSERT_TRUE(r.contains("breakdown")) << r.dump();
    const auto& b = r["breakdown"];
    // Per token, the steps add up to the measured wall time of the repetitions.
    double wall_per_token = 0;
    for (const auto& tps : r["samples"]) wall_per_token += 1 / tps.get<double>() / double(r["samples"].size());
    EXPECT_NEAR(b["seconds_per_token"].get<double>(), wall_per_token, 1e-9 * wall_per_token);
    double share = 0, weights = 0;
    std::set<std::string> steps;
    for (const auto& s : b["steps"]) {
      steps.insert(s["step"].get<std::string>());
      EXPECT_GE(s["share"].get<double>(), 0) << s.dump();
      EXPECT_LE(s["wait_share"].get<double>(), s["share"].get<double>() + 1e-9) << s.dump();
      share += s["share"].get<double>();
      weights += s["weight_bytes_per_token"].get<double>();
    }
    EXPECT_NEAR(share, 1.0, 1e-6) << b.dump();
    for (const char* step : {"rmsnorm", "qkv", "rope+kv", "attention", "attn_out", "ffn_gate_up", "ffn_silu", "ffn_down",
                             "output", "other"})
      EXPECT_EQ(steps.count(step), 1u) << step << " missing in " << b.dump();
    const double tokens_per_step = r["test"] == "pp16" ? 16 : 1;
    weights_per_step[r["test"]] = weights * tokens_per_step;
    // A decode token reads every matrix once, and little else at this context.
    if (r["test"] == "tg4") {
      EXPECT_LE(weights, r["bytes_per_token"].get<double>());
      EXPECT_GE(weights, 0.9 * r["bytes_per_token"].get<double>());
    }
  }
  // A prompt of 16 reads every matrix once too (its last row alone goes through the output head).
  EXPECT_NEAR(weights_per_step["pp16"], weights_per_step["tg4"], 1e-6 * weights_per_step["tg4"]);

  ASSERT_EQ(bench(kSmall + " --breakdown", &out), 0);
  EXPECT_NE(out.find("pp16, 1 threads:"), std::string::npos) << out;
  EXPECT_NE(out.find("tg4, 1 threads:"), std::string::npos) << out;
  EXPECT_NE(out.find("| ffn_down |"), std::string::npos) << out;
}

// Without -m, bench synthesizes the --preset/--type/--seed/--output-skew model once into
// the cache, under a name for each setting, as `tps synth` writes it, and its rows name
// the skew.
TEST_F(BenchCommand, SynthesizesEachSettingsModelIntoTheCache) {
  const fs::path cache = dir_ / "cache";
  const std::string out = (dir_ / "skewed.json").string();
  const std::string cmd = "XDG_CACHE_HOME=" + cache.string() + " " + std::string(TPS_BINARY) +
                          " bench --preset stories260k --type q8_0 --output-skew 10 --profile " + profile_path() + " " +
                          kSmall + " -o json >" + out + " 2>/dev/null";
  ASSERT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 0);
  for (const auto& r : nlohmann::json::parse(test::read_text(out))["results"])
    EXPECT_EQ(r["model"]["output_skew"], 10) << r.dump();  // the rows say which model
  const fs::path cached = cache / "tps" / "synth-v1-stories260k-q8_0-s1-skew10.gguf";
  ASSERT_TRUE(fs::exists(cached));
  SynthOptions o{*find_model_preset("stories260k"), *parse_weight_scheme("q8_0"), 1, "", 10};
  const std::string direct = (dir_ / "skewed.gguf").string();
  ThreadPool pool(1);
  synthesize_model(o, direct, pool);
  EXPECT_EQ(test::read_text(cached.string()), test::read_text(direct));
}

TEST_F(BenchCommand, BadFlagsExitWith2) {
  EXPECT_EQ(bench(kSmall + " -o xml"), 2);
  EXPECT_EQ(bench("-p abc"), 2);
  EXPECT_EQ(bench("-p 16 -n 4 -B 0"), 2);
  EXPECT_EQ(bench("-p 16 -n 4 -t 0"), 2);
  EXPECT_EQ(bench("-p 16 -n 4 -r 0"), 2);
  EXPECT_EQ(bench("-p 0 -n 0"), 2);
  EXPECT_EQ(bench("-p 16 -n 4 -d 600"), 2);  // beyond stories260k's 512 positions
  // The positions a pp row takes: depth + its prompt + the token its last pass samples.
  EXPECT_EQ(bench("-p 16 -n 0 -d 496 -r 1"), 2);
  EXPECT_EQ(bench("-p 16 -n 0 -d 495 -r 1"), 0);
  EXPECT_EQ(bench("-p 16 -n 4 --no-such-flag"), 2);
  EXPECT_EQ(bench("-p 16 -n 4 --output-skew 0"), 2);
  std::string cmd = std::string(TPS_BINARY) + " bench -m /no/such/model.gguf --profile " + profile_path() +
                    " -p 16 -n 4 >/dev/null 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2);
  cmd = std::string(TPS_BINARY) + " bench -m " + model_path() + " --profile /no/such/profile.json -p 16 -n 4 >/dev/null 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2);
  // An unknown instruction set named in TPS_ISA is an error that names it; a known one
  // caps the choice (to what the CPU has).
  const std::string err = (dir_ / "err.txt").string();
  cmd = "TPS_ISA=avx9 " + std::string(TPS_BINARY) + " bench -m " + model_path() + " --profile " + profile_path() + " " +
        kSmall + " >/dev/null 2>" + err;
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 2);
  std::stringstream message;
  message << std::ifstream(err).rdbuf();
  EXPECT_NE(message.str().find("TPS_ISA=avx9 is not one of scalar, avx2, avx_vnni, avx512, amx"), std::string::npos)
      << message.str();
  cmd = "TPS_ISA=avx_vnni " + std::string(TPS_BINARY) + " bench -m " + model_path() + " --profile " + profile_path() +
        " " + kSmall + " >/dev/null 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 0);
}

}  // namespace
}  // namespace tps
