#pragma once
// The paged KV cache's shape, decided once from the model and the user's limits, and
// reported by the model runner: the engine's block pool, scheduler and context limit
// all derive from it, so they cannot disagree.
#include <cstdint>
#include <string>

#include "model/model_config.h"

namespace tps {

struct KvGeometry {
  int64_t block_tokens = 16;  // positions per block
  int64_t blocks = 0;         // blocks in the cache
  int64_t context = 0;        // longest sequence, prompt and generated tokens together
};

// What the user asked for; 0 means "choose".
struct KvRequest {
  int64_t context = 0;       // default: the model's, at most kDefaultContext
  int64_t blocks = 0;        // default: every sequence at up to 512 tokens, or one at the whole context
  int64_t block_tokens = 16;
  int32_t max_seqs = 1;      // sequences that run at once
};

constexpr int64_t kDefaultContext = 4096;

// Throws tps::Error for a size below 1. One sequence must always fit alone with a block
// to spare for copy-on-write, so the context is cut to what the blocks hold. `note`
// says so, or that the context is longer than the model's training; else it is empty.
KvGeometry plan_kv_geometry(const ModelConfig& model, const KvRequest& request, std::string* note);

}  // namespace tps
