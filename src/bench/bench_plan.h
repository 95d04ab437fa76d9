#pragma once
// What `tps bench` runs: llama-bench's vocabulary (-p, -n, -d, -t as comma lists) plus
// batched decode (-B), expanded into the Cartesian product of test cases.
#include <cstdint>
#include <string>
#include <vector>

namespace tps {

enum class BenchKind {
  kPrefill,  // ppN: N prompt tokens of each of `batch` sequences in one pass
  kDecode,   // tgN: N tokens, one per step, batch 1
  kBatched,  // B sequences: prompt then gen tokens, one step serves all B
};

struct BenchCase {
  BenchKind kind = BenchKind::kPrefill;
  int64_t prompt = 0;  // pp: tokens per sequence; batched: each sequence's prompt
  int64_t gen = 0;     // tg / batched: generated tokens per sequence
  int64_t batch = 1;   // sequences
  int64_t depth = 0;   // tokens already in each sequence's KV cache before the test
  int threads = 1;

  std::string test_name() const;  // "pp512", "tg128", "batched"
  std::string label() const;      // "pp512", "tg128", "B4 pp128+tg64", with "@d512" when deep
  int64_t tokens() const;         // tokens per timed run that count for tokens/s
  int64_t step_rows() const;      // tokens per forward pass of the timed phase (before chunking)
};

struct BenchPlanOptions {
  std::vector<int64_t> prompts = {512};  // -p; 0 disables
  std::vector<int64_t> gens = {128};     // -n; 0 disables
  std::vector<int64_t> batches;          // -B
  std::vector<int64_t> depths = {0};     // -d
  std::vector<int> threads;              // -t
  int64_t batch_prompt = 0;              // --batch-prompt; 0: the first -p value (or 128)
  int64_t batch_gen = 64;                // --batch-gen
};

// threads x depth x (pp for each -p, tg for each -n, batched for each -B), in that
// nesting order. Throws tps::Error for negative sizes or an empty plan.
std::vector<BenchCase> expand_bench_plan(const BenchPlanOptions& options);

// Parses "1,4,16" (also "512" alone); throws tps::Error naming `flag` when malformed.
std::vector<int64_t> parse_int_list(const std::string& text, const std::string& flag);

}  // namespace tps
