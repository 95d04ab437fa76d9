#include "model/model_weights.h"

#include <fmt/format.h>

#include "core/error.h"
#include "quant/quantize.h"

namespace tps {

namespace {

std::string shape_string(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

class Binder {
 public:
  explicit Binder(const GgufFile& file) : file_(file) {}

  const GgufTensor& tensor(const std::string& name, std::vector<int64_t> dims) const {
    const GgufTensor* t = file_.find_tensor(name);
    if (!t) fail("{}: missing tensor '{}'", file_.path(), name);
    check(*t, dims);
    return *t;
  }

  WeightMatrix matrix(const std::string& name, int64_t rows, int64_t cols) const {
    const GgufTensor& t = tensor(name, {cols, rows});
    if (!is_supported_weight_type(t.type))
      fail("{}: tensor '{}' has type {}, which the engine cannot compute with", file_.path(), name, type_name(t.type));
    return {t.type, rows, cols, t.data, row_bytes(t.type, cols)};
  }

  // Norm weights and biases are small: kept as f32 copies whatever their stored type.
  std::vector<float> vector(const std::string& name, int64_t n) const {
    const GgufTensor& t = tensor(name, {n});
    if (!is_supported_weight_type(t.type))
      fail("{}: tensor '{}' has type {}, which the engine cannot compute with", file_.path(), name, type_name(t.type));
    std::vector<float> v(n);
    dequantize_row(t.type, t.data, v.data(), n);
    return v;
  }

 private:
  void check(const GgufTensor& t, const std::vector<int64_t>& dims) const {
    // GGUF may pad a shape with trailing 1s.
    std::vector<int64_t> got = t.dims;
    while (got.size() > dims.size() && got.back() == 1) got.pop_back();
    if (got != dims)
      fail("{}: tensor '{}' has shape {}, expected {}", file_.path(), t.name, shape_string(t.dims), shape_string(dims));
  }

  const GgufFile& file_;
};

}  // namespace

ModelWeights bind_model_weights(const GgufFile& file, ModelConfig& c) {
  Binder b(file);
  const GgufTensor* embd = file.find_tensor("token_embd.weight");
  if (!embd) fail("{}: missing tensor 'token_embd.weight'", file.path());
  if (embd->dims.size() != 2 || embd->dims[0] != c.dim || embd->dims[1] <= 0)
    fail("{}: tensor 'token_embd.weight' has shape {}, expected [{}, vocab size]", file.path(),
         shape_string(embd->dims), c.dim);
  c.vocab_size = embd->dims[1];

  ModelWeights w;
  w.token_embd = b.matrix("token_embd.weight", c.vocab_size, c.dim);
  w.output_norm = b.vector("output_norm.weight", c.dim);
  c.tied_output = file.find_tensor("output.weight") == nullptr;
  w.output = c.tied_output ? w.token_embd : b.matrix("output.weight", c.vocab_size, c.dim);

  // Layers are bound one by one (no resize to block_count first): a bogus count
  // ends at the first missing tensor, not in a huge allocation.
  for (int64_t i = 0; i < c.n_layers; ++i) {
    LayerWeights& l = w.layers.emplace_back();
    auto name = [i](const char* what) { return fmt::format("blk.{}.{}", i, what); };
    l.attn_norm = b.vector(name("attn_norm.weight"), c.dim);
    l.wq = b.matrix(name("attn_q.weight"), c.q_dim(), c.dim);
    l.wk = b.matrix(name("attn_k.weight"), c.kv_dim(), c.dim);
    l.wv = b.matrix(name("attn_v.weight"), c.kv_dim(), c.dim);
    l.wo = b.matrix(name("attn_output.weight"), c.dim, c.q_dim());
    if (c.qkv_bias) {
      l.bq = b.vector(name("attn_q.bias"), c.q_dim());
      l.bk = b.vector(name("attn_k.bias"), c.kv_dim());
      l.bv = b.vector(name("attn_v.bias"), c.kv_dim());
    }
    l.ffn_norm = b.vector(name("ffn_norm.weight"), c.dim);
    l.w_gate = b.matrix(name("ffn_gate.weight"), c.ffn_dim, c.dim);
    l.w_up = b.matrix(name("ffn_up.weight"), c.ffn_dim, c.dim);
    l.w_down = b.matrix(name("ffn_down.weight"), c.dim, c.ffn_dim);
  }
  return w;
}

}  // namespace tps
