#include "model/model_shard.h"

#include <algorithm>

#include "core/error.h"
#include "quant/ggml_type.h"

namespace tps {

namespace {

// Rank r's part of n units split `ranks` ways, as evenly as they go.
ShardRange split(int64_t n, int rank, int ranks) { return {n * rank / ranks, n * (rank + 1) / ranks}; }

// Rows [begin, end) of w, in place.
WeightMatrix row_view(const WeightMatrix& w, int64_t begin, int64_t end) {
  WeightMatrix v = w;
  v.data = w.data + static_cast<size_t>(begin) * w.row_bytes;
  v.rows = end - begin;
  return v;
}

// Columns [begin, end) of w, in place: the rows keep the full stride, and the slice
// starts at the block holding `begin` (plan_model_shard checked it is a block edge).
WeightMatrix column_view(const WeightMatrix& w, int64_t begin, int64_t end) {
  const GgmlTypeInfo& t = type_info(w.type);
  WeightMatrix v = w;
  v.data = w.data + static_cast<size_t>(begin / t.block_size) * t.block_bytes;
  v.cols = end - begin;
  return v;
}

std::vector<float> slice(const std::vector<float>& v, int64_t begin, int64_t end) {
  if (v.empty()) return v;
  return std::vector<float>(v.begin() + begin, v.begin() + end);
}

// Fails unless every `cut` column of `name` in each layer is on one of its blocks' edges.
template <typename Get>
void check_block_edges(const ModelWeights& weights, const char* name, std::initializer_list<int64_t> cuts, int ranks,
                       Get get) {
  for (const LayerWeights& l : weights.layers) {
    const WeightMatrix& w = get(l);
    const int64_t block = type_info(w.type).block_size;
    for (int64_t cut : cuts)
      if (cut % block != 0)
        fail("--tp {}: {} ({}) would be cut at column {}, inside one of its {}-wide quantization blocks", ranks, name,
             type_name(w.type), cut, block);
  }
}

}  // namespace

ModelShard plan_model_shard(const ModelConfig& c, const ModelWeights& weights, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks) fail("rank {} of a tensor-parallel group of {}", rank, ranks);
  ModelShard s;
  s.rank = rank;
  s.ranks = ranks;
  if (c.n_heads % ranks != 0)
    fail("--tp {}: the model's {} attention heads do not split evenly over {} ranks", ranks, c.n_heads, ranks);
  s.q_heads = split(c.n_heads, rank, ranks);
  if (c.n_kv_heads % ranks == 0) {
    s.kv_heads = split(c.n_kv_heads, rank, ranks);
  } else if (ranks % c.n_kv_heads == 0) {
    const int64_t head = rank / (ranks / c.n_kv_heads);  // the one its query heads share
    s.kv_heads = {head, head + 1};
  } else {
    fail("--tp {}: the model's {} KV heads neither split over {} ranks nor divide them", ranks, c.n_kv_heads, ranks);
  }
  check_block_edges(weights, "attn_output.weight", {s.q_heads.begin * c.head_dim, s.q_heads.end * c.head_dim}, ranks,
                    [](const LayerWeights& l) -> const WeightMatrix& { return l.wo; });

  // FFN rows go in whole blocks of the down matrix, whose columns they are.
  int64_t unit = 1;
  for (const LayerWeights& l : weights.layers) unit = std::max(unit, type_info(l.w_down.type).block_size);
  if (c.ffn_dim % unit != 0 || c.ffn_dim / unit < ranks)
    fail("--tp {}: the FFN's {} rows do not make a block of {} for each of {} ranks", ranks, c.ffn_dim, unit, ranks);
  const ShardRange units = split(c.ffn_dim / unit, rank, ranks);
  s.ffn_rows = {units.begin * unit, units.end * unit};

  s.vocab_rows = split(c.vocab_size, rank, ranks);
  for (int r = 0; r < ranks; ++r) s.vocab_rows_per_rank.push_back(split(c.vocab_size, r, ranks).size());
  return s;
}

ModelConfig shard_config(const ModelConfig& config, const ModelShard& s) {
  ModelConfig c = config;
  c.n_heads = s.q_heads.size();
  c.n_kv_heads = s.kv_heads.size();
  c.ffn_dim = s.ffn_rows.size();
  c.vocab_size = s.vocab_rows.size();
  return c;
}

ModelWeights shard_weights(const ModelWeights& weights, const ModelConfig& c, const ModelShard& s) {
  const int64_t hd = c.head_dim;
  const int64_t q0 = s.q_heads.begin * hd, q1 = s.q_heads.end * hd;
  const int64_t k0 = s.kv_heads.begin * hd, k1 = s.kv_heads.end * hd;
  const int64_t f0 = s.ffn_rows.begin, f1 = s.ffn_rows.end;
  ModelWeights w;
  w.token_embd = weights.token_embd;  // each rank looks up whole rows
  w.output_norm = weights.output_norm;
  w.output = row_view(weights.output, s.vocab_rows.begin, s.vocab_rows.end);
  for (const LayerWeights& l : weights.layers) {
    LayerWeights& o = w.layers.emplace_back();
    o.attn_norm = l.attn_norm;
    o.wq = row_view(l.wq, q0, q1);
    o.wk = row_view(l.wk, k0, k1);
    o.wv = row_view(l.wv, k0, k1);
    o.wo = column_view(l.wo, q0, q1);
    o.bq = slice(l.bq, q0, q1);
    o.bk = slice(l.bk, k0, k1);
    o.bv = slice(l.bv, k0, k1);
    o.ffn_norm = l.ffn_norm;
    o.w_gate = row_view(l.w_gate, f0, f1);
    o.w_up = row_view(l.w_up, f0, f1);
    o.w_down = column_view(l.w_down, f0, f1);
  }
  return w;
}

}  // namespace tps
