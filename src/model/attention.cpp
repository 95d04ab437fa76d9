#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/ops.h"

namespace tps {

namespace {

// Per-thread state of one work item: the group's scaled queries, running max and sum
// per head, unnormalized outputs.
struct GroupState {
  float* q;
  float* m;
  float* l;
  float* o;
};

// Asks for one KV block's keys and values of one head ahead of use. Blocks sit
// anywhere in the pool, so the hardware prefetchers cannot run ahead across them, and a
// decode step's K/V (135 MB for 16 TinyLlama sequences of 192 positions) come from
// memory: without this, attention read them at 13 GB/s (with it 17; one block ahead
// measured better than two, or than all of a row's blocks into L2 at its start).
void prefetch_block(const uint16_t* keys_t, const uint16_t* values, int64_t bt, int64_t head_dim, int64_t stride) {
  constexpr int64_t kLine = 64 / sizeof(uint16_t);
  for (int64_t i = 0; i < head_dim * bt; i += kLine) __builtin_prefetch(keys_t + i);
  for (int64_t j = 0; j < bt; ++j)
    for (int64_t e = 0; e < head_dim; e += kLine) __builtin_prefetch(values + j * stride + e);
}

// The query heads of KV head `kv_head` for one row, over positions 0..position;
// `cold`: its blocks are likely not in cache yet, so prefetch them.
void attend_group(const float* q, const SequenceBlocks& seq, int64_t position, bool cold, const KvCache& kv,
                  int64_t layer, int64_t kv_head, int64_t group, int64_t head_dim, float scale, GroupState s,
                  float* out) {
  const int64_t bt = kv.block_tokens();
  const int64_t stride = kv.kv_dim();
  for (int64_t i = 0; i < group * head_dim; ++i) s.q[i] = q[i] * scale;
  std::fill(s.m, s.m + group, -std::numeric_limits<float>::infinity());
  std::fill(s.l, s.l + group, 0.0f);
  std::fill(s.o, s.o + group * head_dim, 0.0f);
  auto keys_of = [&](int64_t start) { return kv.keys(layer, seq.block_table[start / bt]) + kv_head * head_dim * bt; };
  auto values_of = [&](int64_t start) { return kv.values(layer, seq.block_table[start / bt]) + kv_head * head_dim; };
  if (cold) prefetch_block(keys_of(0), values_of(0), bt, head_dim, stride);
  for (int64_t start = 0; start <= position; start += bt) {
    const int64_t n = std::min(bt, position + 1 - start);
    const uint16_t* keys_t = keys_of(start);
    const uint16_t* values = values_of(start);
    if (cold && start + bt <= position)
      prefetch_block(keys_of(start + bt), values_of(start + bt), bt, head_dim, stride);
    for (int64_t j = 0; j < n; j += kAttentionKeys)
      attend_keys(s.q, group, head_dim, keys_t + j, bt, values + j * stride, stride,
                  std::min<int64_t>(kAttentionKeys, n - j), s.m, s.l, s.o);
  }
  for (int64_t h = 0; h < group; ++h) {
    const float inv = 1.0f / s.l[h];
    for (int64_t e = 0; e < head_dim; ++e) out[h * head_dim + e] = s.o[h * head_dim + e] * inv;
  }
}

}  // namespace

void attention(const float* q, const ForwardBatch& batch, const KvCache& kv, int64_t layer,
               const AttentionShape& shape, float* out, std::vector<float>& scratch, ThreadPool& pool) {
  const int64_t rows = static_cast<int64_t>(batch.size());
  const int64_t q_dim = shape.n_heads * shape.head_dim;
  const int64_t group = shape.n_heads / shape.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(shape.head_dim));
  const size_t per_thread = static_cast<size_t>(group * (2 * shape.head_dim + 2));
  if (scratch.size() < per_thread * pool.size()) scratch.resize(per_thread * pool.size());
  // Work items are (row, KV head): the group's queries share each key and value read.
  // Their cost grows with the row's position, so threads take them one at a time,
  // last rows (in prefill, the longest) first. The last row of each sequence in the
  // batch (every decode row) reads its blocks first; its sequence's other rows find
  // them in cache (prefetching for those cost prompt attention 6 %).
  const int64_t items = rows * shape.n_kv_heads;
  pool.parallel_for_dynamic(items, 1, [&](int64_t begin, int64_t end, int thread) {
    float* base = scratch.data() + per_thread * thread;
    GroupState s{base, base + group * shape.head_dim, base + group * shape.head_dim + group,
                 base + group * shape.head_dim + 2 * group};
    for (int64_t i = begin; i < end; ++i) {
      const int64_t item = items - 1 - i;
      const int64_t r = item / shape.n_kv_heads, kv_head = item % shape.n_kv_heads;
      const int64_t offset = r * q_dim + kv_head * group * shape.head_dim;
      const bool cold = r + 1 == rows || batch.sequence[r + 1] != batch.sequence[r];
      attend_group(q + offset, batch.sequences[batch.sequence[r]], batch.positions[r], cold, kv, layer, kv_head, group,
                   shape.head_dim, scale, s, out + offset);
    }
  });
}

}  // namespace tps
