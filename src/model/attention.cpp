#include "model/attention.h"

#include <algorithm>
#include <cmath>

#include "kernels/ops.h"

namespace tps {

namespace {

// The blocks of KV head `kv_head` that a row at `position` attends to, in order.
int64_t key_blocks(const SequenceBlocks& seq, int64_t position, const KvCache& kv, int64_t layer, int64_t kv_head,
                   int64_t head_dim, AttentionBlock* blocks) {
  const int64_t bt = kv.block_tokens();
  int64_t count = 0;
  for (int64_t start = 0; start <= position; start += bt) {
    const int32_t block = seq.block_table[start / bt];
    blocks[count++] = {kv.head_keys(layer, block, kv_head), kv.head_values(layer, block, kv_head),
                       std::min(bt, position + 1 - start)};
  }
  return count;
}

// Consecutive batch rows of one sequence at consecutive positions (a prompt's chunk, a
// verify step's drafts) are attended together, up to kRunRows at a time: the keys and
// values all of them see are read once for all. `starts`: run i is rows [starts[i],
// starts[i + 1]).
constexpr int64_t kRunRows = 16;

void row_runs(const ForwardBatch& batch, std::vector<int64_t>& starts) {
  starts.clear();
  const int64_t rows = static_cast<int64_t>(batch.size());
  for (int64_t r = 0; r < rows; ++r) {
    const bool continues = r > 0 && batch.sequence[r] == batch.sequence[r - 1] &&
                           batch.positions[r] == batch.positions[r - 1] + 1 && r - starts.back() < kRunRows;
    if (!continues) starts.push_back(r);
  }
  starts.push_back(rows);
}

}  // namespace

void attention(const float* q, const ForwardBatch& batch, const KvCache& kv, int64_t layer,
               const AttentionShape& shape, float* out, std::vector<AttentionBlock>& scratch, ThreadPool& pool) {
  const int64_t rows = static_cast<int64_t>(batch.size());
  const int64_t q_dim = shape.n_heads * shape.head_dim;
  const int64_t group = shape.n_heads / shape.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  int64_t max_blocks = 0;
  for (int64_t r = 0; r < rows; ++r) max_blocks = std::max<int64_t>(max_blocks, batch.positions[r] / kv.block_tokens() + 1);
  const size_t per_thread = static_cast<size_t>(max_blocks);
  if (scratch.size() < per_thread * pool.size()) scratch.resize(per_thread * pool.size());
  thread_local std::vector<int64_t> run_buffer;  // no allocation per layer once warm
  row_runs(batch, run_buffer);
  // A local name: in the workers, run_buffer would be their own thread's.
  const std::vector<int64_t>& runs = run_buffer;
  const int64_t n_runs = static_cast<int64_t>(runs.size()) - 1;
  // Work items are (run, KV head): the group's queries share each key and value read.
  // Their cost grows with the run's position, so threads take them as they come free,
  // last runs (in prefill, the longest) first. The last run of each sequence in the
  // batch (every decode row) reads its blocks first and prefetches them; its
  // sequence's other runs find them in cache (prefetching for those cost prompt
  // attention 6 %).
  // A grab covers kMinGrainWork (keys x head_dim x query heads) at least, so a tiny
  // model's decode attention (stories260K: 4 items of 8-wide heads a layer) runs on the
  // calling thread: there a parallel region cost more than the work.
  constexpr int64_t kMinGrainWork = 64 * 1024;
  const int64_t run_rows = rows / std::max<int64_t>(1, n_runs);  // on average
  const int64_t item_work = max_blocks * kv.block_tokens() * shape.head_dim * group * run_rows;
  const int64_t grain = std::max<int64_t>(1, kMinGrainWork / std::max<int64_t>(1, item_work));
  const int64_t items = n_runs * shape.n_kv_heads;
  pool.parallel_for_dynamic(items, grain, [&](int64_t begin, int64_t end, int thread) {
    AttentionBlock* blocks = scratch.data() + per_thread * thread;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t item = items - 1 - i;
      const int64_t run = item / shape.n_kv_heads, kv_head = item % shape.n_kv_heads;
      const int64_t first = runs[run], last = runs[run + 1] - 1;
      const int64_t offset = first * q_dim + kv_head * group * shape.head_dim;
      const bool cold = last + 1 == rows || batch.sequence[last + 1] != batch.sequence[last];
      const int64_t n_blocks = key_blocks(batch.sequences[batch.sequence[last]], batch.positions[last], kv, layer,
                                          kv_head, shape.head_dim, blocks);
      attend({q + offset, out + offset, last + 1 - first, q_dim, group}, shape.head_dim, scale, blocks, n_blocks,
             kv.block_tokens(), shape.head_dim, cold);
    }
  });
}

}  // namespace tps
