#include "model/transformer.h"

#include <algorithm>

#include "core/error.h"
#include "core/mapped_file.h"
#include "model/attention.h"
#include "kernels/ops.h"
#include "quant/quantize.h"

namespace tps {

namespace {

// A shard's column slice keeps the full row stride: count only its own columns.
size_t matrix_bytes(const WeightMatrix& w) { return row_bytes(w.type, w.cols) * w.rows; }

// Applies fn(row) to rows [0, rows) on the pool. The work per row is small and
// element-wise: rows are grouped so that a barrier is paid only for real work.
template <typename F>
void for_rows(ThreadPool& pool, int64_t rows, int64_t width, F&& fn) {
  constexpr int64_t kMinElementsPerThread = 1 << 15;
  pool.parallel_for(rows, std::max<int64_t>(1, kMinElementsPerThread / width), [&](int64_t begin, int64_t end, int) {
    for (int64_t r = begin; r < end; ++r) fn(r);
  });
}

}  // namespace

Transformer::Transformer(std::unique_ptr<GgufFile> file, ModelConfig config, ModelWeights weights,
                         std::unique_ptr<Tokenizer> tokenizer, TensorParallelGroup* group)
    : group_(group),
      file_(std::move(file)),
      config_(std::move(config)),
      shard_(plan_model_shard(config_, weights, group ? group->rank() : 0, group ? group->ranks() : 1)),
      local_(tps::shard_config(config_, shard_)),
      weights_(shard_weights(weights, config_, shard_)),
      tokenizer_(std::move(tokenizer)) {
  // Per token: one embedding row, every layer matrix, the output head.
  weight_bytes_ = weights_.token_embd.row_bytes + matrix_bytes(weights_.output);
  for (const LayerWeights& l : weights_.layers)
    for (const WeightMatrix* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      weight_bytes_ += matrix_bytes(*w);
  pack_matrices();
  prefault_pages(weights_.token_embd.data, matrix_bytes(weights_.token_embd));
}

void Transformer::pack_matrices() {
  std::vector<WeightMatrix*> matrices = {&weights_.output};
  for (LayerWeights& l : weights_.layers)
    for (WeightMatrix* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) matrices.push_back(w);
  // Panels are whole cache lines, so each matrix starts on one.
  size_t total = 0;
  for (const WeightMatrix* w : matrices) total += packed_bytes(*w);
  arena_ = allocate_huge_pages(total);
  arena_bytes_ = total;
  packed_.reserve(matrices.size());  // pointers into packed_ must stay valid
  ThreadPool pool(ThreadPool::default_threads());
  uint8_t* next = arena_.get();
  // A model of a few MB (stories260K: 1.1) stays in the caches between steps, even on
  // a two-core slice of a server CPU: its matrices cost compute, not reads.
  constexpr size_t kCacheResidentBytes = 4 << 20;
  for (WeightMatrix* w : matrices) {
    packed_.push_back(pack_weights_into(*w, next, &pool));
    packed_.back().set_cache_resident(total <= kCacheResidentBytes);
    w->packed = &packed_.back();
    next += packed_bytes(*w);
    // The kernels read the packed copy: the file's pages of the matrix need not stay in
    // this process's resident set (a rank's shard of a row-split matrix touches every
    // page of it, its columns interleaved with the other ranks').
    const size_t stride = w->row_bytes != 0 ? w->row_bytes : row_bytes(w->type, w->cols);
    if (w->rows > 0) release_pages(w->data, stride * static_cast<size_t>(w->rows - 1) + row_bytes(w->type, w->cols));
  }
}

void Transformer::check_batch(const ForwardBatch& batch, const KvCache& kv) const {
  const size_t n = batch.size();
  if (batch.positions.size() != n || batch.sequence.size() != n || batch.want_logits.size() != n)
    fail("forward batch has {} tokens but {} positions, {} sequence ids, {} logit flags", n, batch.positions.size(),
         batch.sequence.size(), batch.want_logits.size());
  if (kv.kv_dim() != local_.kv_dim()) fail("KV cache of width {} does not fit the model's {}", kv.kv_dim(), local_.kv_dim());
  for (size_t r = 0; r < n; ++r) {
    if (batch.tokens[r] < 0 || batch.tokens[r] >= config_.vocab_size)
      fail("token id {} is outside the vocabulary of {}", batch.tokens[r], config_.vocab_size);
    if (batch.sequence[r] < 0 || static_cast<size_t>(batch.sequence[r]) >= batch.sequences.size())
      fail("batch row {} names sequence {} of {}", r, batch.sequence[r], batch.sequences.size());
    const SequenceBlocks& seq = batch.sequences[batch.sequence[r]];
    const int64_t pos = batch.positions[r];
    if (pos < 0 || pos / kv.block_tokens() >= seq.n_blocks)
      fail("position {} is outside the {} KV blocks of its sequence", pos, seq.n_blocks);
    // Attention reads every block up to the row's position.
    for (int64_t b = 0; b <= pos / kv.block_tokens(); ++b)
      if (seq.block_table[b] < 0 || seq.block_table[b] >= kv.n_blocks())
        fail("KV block id {} is outside the cache of {} blocks", seq.block_table[b], kv.n_blocks());
  }
}

void Transformer::grow_scratch(int64_t rows) {
  if (rows <= scratch_rows_) return;
  const ModelConfig& c = local_;
  x_.resize(rows * c.dim);
  xn_.resize(rows * c.dim);
  proj_.resize(rows * c.dim);
  q_.resize(rows * c.q_dim());
  att_.resize(rows * c.q_dim());
  k_.resize(rows * c.kv_dim());
  v_.resize(rows * c.kv_dim());
  gate_.resize(rows * c.ffn_dim);
  up_.resize(rows * c.ffn_dim);
  scratch_rows_ = rows;
}

void Transformer::forward(const ForwardBatch& batch, KvCache& kv, float* logits, ThreadPool& pool) {
  check_batch(batch, kv);
  const int64_t rows = static_cast<int64_t>(batch.size());
  if (rows == 0) return;
  grow_scratch(rows);
  embed(batch, pool);
  for (int64_t layer = 0; layer < config_.n_layers; ++layer) {
    attention_block(layer, batch, kv, pool);
    feed_forward_block(layer, rows, pool);
  }
  output_head(batch, logits, pool);
}

void Transformer::embed(const ForwardBatch& batch, ThreadPool& pool) {
  PhaseClock clock(trace_, ForwardPhase::kEmbed);
  const WeightMatrix& e = weights_.token_embd;
  for_rows(pool, static_cast<int64_t>(batch.size()), config_.dim, [&](int64_t r) {
    dequantize_row(e.type, e.data + e.row_bytes * batch.tokens[r], &x_[r * config_.dim], config_.dim);
  });
}

void Transformer::attention_block(int64_t layer, const ForwardBatch& batch, KvCache& kv, ThreadPool& pool) {
  const ModelConfig& c = local_;
  const LayerWeights& w = weights_.layers[layer];
  const int64_t rows = static_cast<int64_t>(batch.size());
  {
    PhaseClock clock(trace_, ForwardPhase::kNorm);
    for_rows(pool, rows, c.dim, [&](int64_t r) { rmsnorm(&x_[r * c.dim], w.attn_norm.data(), c.dim, c.rms_eps, &xn_[r * c.dim]); });
  }
  {
    PhaseClock clock(trace_, ForwardPhase::kQkv, {&w.wq, &w.wk, &w.wv});
    matmul_parts({{&w.wq, q_.data()}, {&w.wk, k_.data()}, {&w.wv, v_.data()}}, xn_.data(), rows, pool);
  }
  const int64_t bt = kv.block_tokens();
  {
    PhaseClock clock(trace_, ForwardPhase::kRopeKv);
    for_rows(pool, rows, c.q_dim() + 2 * c.kv_dim(), [&](int64_t r) {
      float* q = &q_[r * c.q_dim()];
      float* k = &k_[r * c.kv_dim()];
      float* v = &v_[r * c.kv_dim()];
      if (c.qkv_bias) {
        axpy(1.0f, w.bq.data(), q, c.q_dim());
        axpy(1.0f, w.bk.data(), k, c.kv_dim());
        axpy(1.0f, w.bv.data(), v, c.kv_dim());
      }
      const int64_t pos = batch.positions[r];
      rope(q, c.n_heads, c.head_dim, pos, c.rope_base, c.rope_style);
      rope(k, c.n_kv_heads, c.head_dim, pos, c.rope_base, c.rope_style);
      const SequenceBlocks& seq = batch.sequences[batch.sequence[r]];
      kv.store(layer, seq.block_table[pos / bt], pos % bt, k, v);
    });
  }
  {
    PhaseClock clock(trace_, ForwardPhase::kAttention);
    attention(q_.data(), batch, kv, layer, {c.n_heads, c.n_kv_heads, c.head_dim}, att_.data(), attention_scratch_, pool);
  }
  {
    PhaseClock clock(trace_, ForwardPhase::kAttnOut, {&w.wo});
    matmul(w.wo, att_.data(), rows, proj_.data(), pool);
  }
  sum_over_ranks(proj_.data(), rows * c.dim);
  axpy(1.0f, proj_.data(), x_.data(), rows * c.dim);  // residual
}

void Transformer::feed_forward_block(int64_t layer, int64_t rows, ThreadPool& pool) {
  const ModelConfig& c = local_;
  const LayerWeights& w = weights_.layers[layer];
  {
    PhaseClock clock(trace_, ForwardPhase::kNorm);
    for_rows(pool, rows, c.dim, [&](int64_t r) { rmsnorm(&x_[r * c.dim], w.ffn_norm.data(), c.dim, c.rms_eps, &xn_[r * c.dim]); });
  }
  {
    PhaseClock clock(trace_, ForwardPhase::kFfnUp, {&w.w_gate, &w.w_up});
    matmul_parts({{&w.w_gate, gate_.data()}, {&w.w_up, up_.data()}}, xn_.data(), rows, pool);
  }
  {
    PhaseClock clock(trace_, ForwardPhase::kFfnAct);
    for_rows(pool, rows, c.ffn_dim, [&](int64_t r) { silu_mul(&gate_[r * c.ffn_dim], &up_[r * c.ffn_dim], c.ffn_dim, &gate_[r * c.ffn_dim]); });
  }
  {
    PhaseClock clock(trace_, ForwardPhase::kFfnDown, {&w.w_down});
    matmul(w.w_down, gate_.data(), rows, proj_.data(), pool);
  }
  sum_over_ranks(proj_.data(), rows * c.dim);
  axpy(1.0f, proj_.data(), x_.data(), rows * c.dim);  // residual
}

void Transformer::output_head(const ForwardBatch& batch, float* logits, ThreadPool& pool) {
  const int64_t dim = config_.dim;
  // Only rows that want logits go through the (large) output matrix.
  const auto n = static_cast<int64_t>(std::count(batch.want_logits.begin(), batch.want_logits.end(), uint8_t{1}));
  if (n == 0) return;
  PhaseClock clock(trace_, ForwardPhase::kOutput, {&weights_.output});
  int64_t i = 0;
  for (size_t r = 0; r < batch.size(); ++r)
    if (batch.want_logits[r]) rmsnorm(&x_[r * dim], weights_.output_norm.data(), dim, config_.rms_eps, &xn_[i++ * dim]);
  if (group_ == nullptr) return matmul(weights_.output, xn_.data(), n, logits, pool);
  // Each rank has the logits of its vocabulary rows; the leader lays them out per row.
  shard_logits_.resize(n * local_.vocab_size);
  matmul(weights_.output, xn_.data(), n, shard_logits_.data(), pool);
  std::vector<int> counts;
  for (int64_t v : shard_.vocab_rows_per_rank) counts.push_back(static_cast<int>(n * v));
  if (group_->leader()) gathered_logits_.resize(n * config_.vocab_size);
  group_->gather(shard_logits_.data(), counts, gathered_logits_.data());
  if (!group_->leader()) return;
  const float* part = gathered_logits_.data();
  int64_t first = 0;  // the rank's first vocabulary row
  for (int64_t v : shard_.vocab_rows_per_rank) {
    for (int64_t t = 0; t < n; ++t) std::copy(part + t * v, part + (t + 1) * v, logits + t * config_.vocab_size + first);
    part += n * v;
    first += v;
  }
}

void Transformer::sum_over_ranks(float* data, size_t n) {
  if (group_ == nullptr) return;
  PhaseClock clock(trace_, ForwardPhase::kCollective);
  group_->sum(data, n);
}

}  // namespace tps
