// The `tps roofline` command end to end: exit codes, JSON and SVG outputs.
#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/test_files.h"

namespace {

struct CliRun {
  int code;
  std::string out, err;
};

CliRun run(const std::string& args) {
  std::string out = tps::test::temp_path("roofline_out.txt"), err = tps::test::temp_path("roofline_err.txt");
  int status = std::system((std::string(TPS_BINARY) + " " + args + " >" + out + " 2>" + err).c_str());
  return {WEXITSTATUS(status), tps::test::read_text(out), tps::test::read_text(err)};
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = tps::test::temp_path(name);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST(RooflineCli, UnknownHardwareIsAClearError) {
  CliRun r = run("roofline --preset llama-3-8b --hardware h999");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("tps: error: unknown hardware 'h999'"), std::string::npos) << r.err;
}

TEST(RooflineCli, BadInputsExitWith2) {
  EXPECT_EQ(run("roofline --config " + write_temp("bad.json", "{not json")).code, 2);
  EXPECT_EQ(run("roofline --preset nope-7b --hardware h100-sxm").code, 2);
  EXPECT_EQ(run("roofline --preset llama-3-8b --hardware h100-sxm --weights q9").code, 2);
  EXPECT_EQ(run("roofline --preset llama-3-8b").code, 2);  // no hardware
  EXPECT_EQ(run("roofline --measured " + write_temp("bad_bench.json", R"({"schema": "tps.bench/1"})")).code, 2);
  EXPECT_EQ(run("roofline --preset llama-3-8b --hardware h100-sxm --batch 1,x").code, 2);
  EXPECT_EQ(run("roofline --preset llama-3-8b --hardware h100-sxm --tp 2 --ranks-per-host 3").code, 2);
  EXPECT_EQ(run("roofline --preset llama-3-8b --hardware h100-sxm --gpus 2 --tp 2 --ranks-per-host 2").code, 2);
}

TEST(RooflineCli, HardwareListNamesSources) {
  CliRun r = run("roofline --hardware list");
  EXPECT_EQ(r.code, 0);
  for (const char* id : {"h100-sxm", "h100-pcie", "h200", "a100-40gb", "a100-80gb", "l40s", "l4", "rtx-4090", "b200",
                         "mi300x", "m2-max", "m3-max", "cpu-server"})
    EXPECT_NE(r.out.find(id), std::string::npos) << id;
  EXPECT_NE(r.out.find("datasheet"), std::string::npos);
}

TEST(RooflineCli, JsonAndSvgFromAConfigFile) {
  std::string cfg = write_temp("config.json", R"({"model_type": "llama", "hidden_size": 2048,
      "num_hidden_layers": 22, "num_attention_heads": 32, "num_key_value_heads": 4, "intermediate_size": 5632,
      "vocab_size": 32000})");
  std::string svg = tps::test::temp_path("roofline.svg");
  CliRun r = run("roofline --config " + cfg + " --hardware l4 --weights q4_0 --batch 1,16 --json --plot " + svg +
              " --spec-draft stories260k --spec-k 3 --spec-accept 0.6");
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["deployment"]["weight_type"], "q4_0");
  EXPECT_EQ(j["memory"]["kv_bytes_per_token"].get<double>(), 2.0 * 22 * 4 * 64 * 2);
  EXPECT_EQ(j["throughput"].size(), 2u);
  EXPECT_GT(j["latency"]["single_user_tokens_per_s"].get<double>(), 0);
  EXPECT_GT(j["speculative"]["speedup"].get<double>(), 1.0);
  std::ifstream f(svg);
  std::string head(4, '\0');
  f.read(head.data(), 4);
  EXPECT_EQ(head, "<svg");
}

TEST(RooflineCli, CalibrateAndMeasuredOnAHandWrittenBench) {
  std::string bench = TPS_SOURCE_DIR "/tests/roofline/data/llamacpp_tinyllama_bench.json";
  std::string eff = tps::test::temp_path("eff.json");
  CliRun c = run("roofline --calibrate " + bench + " --save-efficiency " + eff);
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("bandwidth_fraction"), std::string::npos);
  CliRun m = run("roofline --measured " + bench + " --efficiency " + eff + " --json");
  ASSERT_EQ(m.code, 0) << m.err;
  auto j = nlohmann::json::parse(m.out);
  ASSERT_EQ(j["rows"].size(), 7u);
  EXPECT_EQ(j["rows"][3]["bound"], "memory");
  EXPECT_GT(j["rows"][3]["mbu"].get<double>(), 0.5);
  // Several result files (a comma list) pool their rows.
  CliRun both = run("roofline --measured " + bench + "," + bench + " --efficiency " + eff + " --json");
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_EQ(nlohmann::json::parse(both.out)["rows"].size(), 14u);
  EXPECT_EQ(run("roofline --calibrate " + bench + ",/nonexistent.json").code, 2);
}
