#include "roofline/gguf_model.h"

#include <cctype>
#include <map>

#include "core/error.h"
#include "formats/gguf.h"
#include "model/gguf_config.h"
#include "roofline/number_formats.h"

namespace tps {

namespace {

// The forward pass's reader accepts only the architectures it runs; the roofline also
// sizes others (deepseek2 with MLA, whose key and value lengths differ), from the same keys.
ModelConfig read_any_architecture(const GgufFile& f) {
  std::string arch = f.require_string("general.architecture");
  if (is_supported_architecture(arch)) return read_model_config(f);
  ModelConfig c;
  c.arch = arch;
  c.name = f.get_string("general.name", "");
  const std::string a = arch + ".";
  c.dim = f.require_int(a + "embedding_length");
  c.n_layers = f.require_int(a + "block_count");
  c.n_heads = f.require_int(a + "attention.head_count");
  c.n_kv_heads = f.get_int(a + "attention.head_count_kv", c.n_heads);
  c.ffn_dim = f.require_int(a + "feed_forward_length");
  c.context_length = f.get_int(a + "context_length", c.context_length);
  if (c.n_heads <= 0 || c.n_kv_heads <= 0 || c.n_layers <= 0 || c.dim <= 0)
    fail("{}: non-positive model dimensions in the metadata", f.path());
  c.head_dim = f.get_int(a + "attention.key_length", c.dim / c.n_heads);
  return c;
}

}  // namespace

GgufModelInfo read_gguf_model(const std::string& path) {
  auto f = GgufFile::open(path);
  RooflineModel m;
  m.base = read_any_architecture(*f);
  ModelConfig& c = m.base;
  if (c.name.empty()) c.name = path;
  auto key = [&](const char* k) { return c.arch + "." + k; };
  const GgufTensor* embd = f->find_tensor("token_embd.weight");
  if (!embd || embd->dims.size() != 2) fail("{}: no 2-D token_embd.weight tensor", path);
  c.vocab_size = embd->dims[1];
  c.tied_output = f->find_tensor("output.weight") == nullptr;
  c.qkv_bias = f->find_tensor("blk.0.attn_q.bias") != nullptr;

  m.n_experts = f->get_int(key("expert_count"), 0);
  if (m.n_experts > 0) {
    m.n_experts_active = f->require_int(key("expert_used_count"));
    m.expert_ffn_dim = f->get_int(key("expert_feed_forward_length"), c.ffn_dim);
    m.shared_ffn_dim = f->get_int(key("expert_shared_count"), 0) * m.expert_ffn_dim;
    m.first_dense_layers = f->get_int(key("leading_dense_block_count"), 0);
  }
  m.kv_lora_rank = f->get_int(key("attention.kv_lora_rank"), 0);
  if (m.kv_lora_rank > 0) {
    m.q_lora_rank = f->get_int(key("attention.q_lora_rank"), 0);
    m.qk_rope_head_dim = f->require_int(key("rope.dimension_count"));
    m.qk_nope_head_dim = c.head_dim - m.qk_rope_head_dim;
    m.v_head_dim = f->get_int(key("attention.value_length"), m.qk_nope_head_dim);
  }

  GgufModelInfo info{m, "", 0, 0, 0};
  std::map<std::string, int64_t> bytes_by_type;
  for (const auto& t : f->tensors()) {
    info.params += t.n_elements();
    info.weight_bytes += static_cast<int64_t>(t.nbytes);
    if (t.dims.size() >= 2) bytes_by_type[type_name(t.type)] += static_cast<int64_t>(t.nbytes);
  }
  for (const auto& [name, bytes] : bytes_by_type)
    if (info.weight_type.empty() || bytes > bytes_by_type[info.weight_type]) info.weight_type = name;
  if (info.params == 0) fail("{}: no tensors", path);
  for (char& ch : info.weight_type) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  // Quantized types the roofline has no entry for compute like the other block formats.
  bool known = false;
  for (const auto& wf : weight_formats()) known = known || wf.name == info.weight_type;
  if (!known) info.weight_type = "int8";
  info.bits_per_weight = 8.0 * info.weight_bytes / info.params;
  return info;
}

}  // namespace tps
