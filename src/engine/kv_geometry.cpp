#include "engine/kv_geometry.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace tps {

KvGeometry plan_kv_geometry(const ModelConfig& model, const KvRequest& request, std::string* note) {
  if (request.context < 0) fail("the context must be at least 1 token, got {}", request.context);
  if (request.blocks < 0) fail("the KV cache must have at least 2 blocks, got {}", request.blocks);
  if (request.block_tokens < 1) fail("a KV block must hold at least 1 token, got {}", request.block_tokens);
  if (request.max_seqs < 1) fail("at least 1 sequence must run at once, got {}", request.max_seqs);
  KvGeometry g;
  g.block_tokens = request.block_tokens;
  g.context = request.context > 0 ? request.context : std::min<int64_t>(model.context_length, kDefaultContext);
  const int64_t bt = g.block_tokens;
  g.blocks = request.blocks > 0 ? request.blocks
                                : std::max<int64_t>((g.context + bt - 1) / bt + 1, int64_t{request.max_seqs} * 512 / bt);
  if (g.blocks < 2) fail("the KV cache must have at least 2 blocks, got {}", g.blocks);
  std::string said;
  if (g.context > (g.blocks - 1) * bt) {
    g.context = (g.blocks - 1) * bt;
    said = fmt::format("context limited to {} tokens by {} KV blocks", g.context, g.blocks);
  } else if (g.context > model.context_length) {
    // As llama.cpp allows it: positions past training may lose coherence, not crash.
    said = fmt::format("a context of {} tokens is longer than the {} the model was trained on", g.context,
                       model.context_length);
  }
  if (note != nullptr) *note = said;
  return g;
}

}  // namespace tps
