#include "model/synth.h"

#include <cmath>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include <fmt/ranges.h>

#include "core/error.h"
#include "formats/gguf.h"
#include "model/synth_vocab.h"
#include "tokenizer/vocab.h"
#include "quant/quantize.h"

namespace tps {

namespace {

struct SchemeEntry {
  const char* name;
  GgmlType base;
  uint32_t file_type;
};

// general.file_type values from llama.cpp's llama_ftype; a pure K-quant is its "_S".
constexpr SchemeEntry kSchemes[] = {
    {"f32", GgmlType::kF32, 0},    {"f16", GgmlType::kF16, 1},    {"bf16", GgmlType::kBF16, 32},
    {"q8_0", GgmlType::kQ8_0, 7},  {"q4_0", GgmlType::kQ4_0, 2},  {"q4_1", GgmlType::kQ4_1, 3},
    {"q5_0", GgmlType::kQ5_0, 8},  {"q5_1", GgmlType::kQ5_1, 9},  {"q4_k", GgmlType::kQ4_K, 14},
    {"q5_k", GgmlType::kQ5_K, 16}, {"q6_k", GgmlType::kQ6_K, 18}, {"q4_k_m", GgmlType::kQ4_K, 15},
    {"q2_k", GgmlType::kQ2_K, 21}, {"q3_k", GgmlType::kQ3_K, 11}, {"iq4_nl", GgmlType::kIQ4_NL, 25},
    {"iq4_xs", GgmlType::kIQ4_XS, 30},
};

// llama.cpp's layers that get more bits in the _M mixes: the first and last eighth, and
// every third in between.
bool use_more_bits(int64_t layer, int64_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

// Random numbers: splitmix64 seeds a xoshiro256** per row, so a row's values depend
// only on (seed, tensor, row) and not on which thread makes them.
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed) {
    for (auto& w : s_) w = splitmix64(seed);
  }
  uint64_t next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

 private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// Approximately normal(0, stddev): the sum of four 16-bit uniforms (Irwin-Hall), one
// generator call per value; far cheaper than Box-Muller and plenty for dummy weights.
void fill_normal(float* dst, int64_t n, float stddev, uint64_t seed) {
  Xoshiro256 rng(seed);
  const float scale = stddev * std::sqrt(3.0f) / 65536.0f;  // sum of 4 U(0,1) has variance 1/3
  for (int64_t i = 0; i < n; ++i) {
    uint64_t r = rng.next();
    int64_t sum = static_cast<int64_t>(r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48);
    dst[i] = static_cast<float>(sum - 2 * 65535) * scale;
  }
}

struct TensorPlan {
  std::string name;
  std::string kind;  // for matrices: "attn_q", "output", ...
  GgmlType intended;
  GgmlType type;
  std::vector<int64_t> dims;  // dims[0] = row length
  enum class Init { kNormal, kOnes } init;
};

std::vector<TensorPlan> plan_tensors(const ModelConfig& c, const WeightScheme& scheme) {
  std::vector<TensorPlan> plan;
  auto matrix = [&](const std::string& name, const std::string& kind, int64_t layer, int64_t in, int64_t out) {
    plan.push_back({name, kind, scheme.intended_type(kind, layer, c.n_layers),
                    scheme.type_for(kind, layer, c.n_layers, in), {in, out}, TensorPlan::Init::kNormal});
  };
  auto vector = [&](const std::string& name, int64_t n, TensorPlan::Init init) {
    plan.push_back({name, "", GgmlType::kF32, GgmlType::kF32, {n}, init});
  };
  matrix("token_embd.weight", c.tied_output ? "output" : "token_embd", -1, c.dim, c.vocab_size);
  vector("output_norm.weight", c.dim, TensorPlan::Init::kOnes);
  if (!c.tied_output) matrix("output.weight", "output", -1, c.dim, c.vocab_size);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    std::string p = "blk." + std::to_string(l) + ".";
    vector(p + "attn_norm.weight", c.dim, TensorPlan::Init::kOnes);
    matrix(p + "attn_q.weight", "attn_q", l, c.dim, c.q_dim());
    matrix(p + "attn_k.weight", "attn_k", l, c.dim, c.kv_dim());
    matrix(p + "attn_v.weight", "attn_v", l, c.dim, c.kv_dim());
    if (c.qkv_bias) {
      vector(p + "attn_q.bias", c.q_dim(), TensorPlan::Init::kNormal);
      vector(p + "attn_k.bias", c.kv_dim(), TensorPlan::Init::kNormal);
      vector(p + "attn_v.bias", c.kv_dim(), TensorPlan::Init::kNormal);
    }
    matrix(p + "attn_output.weight", "attn_output", l, c.q_dim(), c.dim);
    vector(p + "ffn_norm.weight", c.dim, TensorPlan::Init::kOnes);
    matrix(p + "ffn_gate.weight", "ffn_gate", l, c.dim, c.ffn_dim);
    matrix(p + "ffn_up.weight", "ffn_up", l, c.dim, c.ffn_dim);
    matrix(p + "ffn_down.weight", "ffn_down", l, c.ffn_dim, c.dim);
  }
  return plan;
}

void set_model_metadata(GgufWriter& w, const ModelConfig& c, const WeightScheme& scheme) {
  const std::string& a = c.arch;
  w.set_string("general.architecture", a);
  w.set_string("general.name", c.name);
  w.set_u32("general.file_type", scheme.file_type());
  if (scheme.base != GgmlType::kF32 && scheme.base != GgmlType::kF16 && scheme.base != GgmlType::kBF16)
    w.set_u32("general.quantization_version", 2);
  w.set_u32("general.alignment", 32);
  w.set_u32(a + ".vocab_size", static_cast<uint32_t>(c.vocab_size));
  w.set_u32(a + ".context_length", static_cast<uint32_t>(c.context_length));
  w.set_u32(a + ".embedding_length", static_cast<uint32_t>(c.dim));
  w.set_u32(a + ".block_count", static_cast<uint32_t>(c.n_layers));
  w.set_u32(a + ".feed_forward_length", static_cast<uint32_t>(c.ffn_dim));
  w.set_u32(a + ".attention.head_count", static_cast<uint32_t>(c.n_heads));
  w.set_u32(a + ".attention.head_count_kv", static_cast<uint32_t>(c.n_kv_heads));
  w.set_u32(a + ".attention.key_length", static_cast<uint32_t>(c.head_dim));
  w.set_u32(a + ".attention.value_length", static_cast<uint32_t>(c.head_dim));
  w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(c.rope_dims ? c.rope_dims : c.head_dim));
  w.set_f32(a + ".rope.freq_base", c.rope_base);
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", c.rms_eps);
}

// What --output-skew needs to know of a vocabulary: each token's type, and whether it is
// byte-level BPE, whose first 256 normal tokens are single bytes.
struct VocabShape {
  std::vector<TokenType> types;
  bool byte_level = false;
};

// Copies only the tokenizer.* keys of `from`; returns the shape of its vocabulary, read
// as the tokenizer reads it.
VocabShape copy_vocab(GgufWriter& w, const GgufFile& from) {
  const auto* tokens = from.get_string_array("tokenizer.ggml.tokens");
  if (!tokens || tokens->empty()) fail("'{}' has no tokenizer.ggml.tokens to copy", from.path());
  std::set<std::string> other_prefixes;
  for (const auto& [key, value] : from.metadata())
    if (key.rfind("tokenizer.", 0) != 0) other_prefixes.insert(key.substr(0, key.find('.') + 1));
  w.copy_metadata(from, {other_prefixes.begin(), other_prefixes.end()});
  const std::string model = from.get_string("tokenizer.ggml.model");
  return {Vocab::from_gguf(from, model == "llama").types, model == "gpt2"};
}

// Writes the built-in byte-level BPE vocabulary of `size` tokens; returns its shape.
VocabShape set_builtin_vocab(GgufWriter& w, int64_t size) {
  BpeVocab v = builtin_bpe_vocab(size);
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", "gpt-2");  // llama.cpp's name for GPT-2's pre-tokenizer
  w.set_string_array("tokenizer.ggml.tokens", v.tokens);
  w.set_i32_array("tokenizer.ggml.token_type", v.token_types);
  w.set_string_array("tokenizer.ggml.merges", v.merges);
  w.set_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(v.bos_id));
  w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(v.eos_id));
  std::vector<TokenType> types;
  for (int32_t t : v.token_types) types.push_back(static_cast<TokenType>(t));
  return {types, true};
}

// --output-skew S: trained models' logits carry each token's frequency, so a few frequent
// tokens win most argmaxes and small models' greedy text falls into loops. Random weights
// get the same by scaling the output rows of the first 1000 normal tokens (byte tokens
// skipped; BPE and SentencePiece vocabularies list tokens roughly by frequency) from S at
// rank 0 down to 1 at rank 999, along a power law. A tied model's output head is its
// token embedding table, so those tokens' embeddings widen too.
std::vector<float> output_row_scales(const VocabShape& v, float skew) {
  constexpr int kRanked = 1000;
  constexpr int kByteTokens = 256;
  std::vector<float> scale(v.types.size(), 1.0f);
  if (skew == 1.0f) return scale;
  const float alpha = std::log(skew) / std::log(static_cast<float>(kRanked));
  int rank = 0;
  int bytes_skipped = 0;
  for (size_t id = 0; id < scale.size() && rank < kRanked; ++id) {
    if (v.types[id] != TokenType::kNormal) continue;
    if (v.byte_level && bytes_skipped < kByteTokens) {
      ++bytes_skipped;
      continue;
    }
    scale[id] = skew * std::pow(static_cast<float>(rank + 1), -alpha);
    ++rank;
  }
  return scale;
}

}  // namespace

uint32_t WeightScheme::file_type() const {
  for (const auto& s : kSchemes)
    if (name == s.name) return s.file_type;
  return 0;
}

GgmlType WeightScheme::intended_type(const std::string& kind, int64_t layer, int64_t n_layers) const {
  if (q4_k_m && (kind == "output" || ((kind == "attn_v" || kind == "ffn_down") && use_more_bits(layer, n_layers))))
    return GgmlType::kQ6_K;
  return base;
}

GgmlType WeightScheme::type_for(const std::string& kind, int64_t layer, int64_t n_layers, int64_t row_length) const {
  GgmlType t = intended_type(kind, layer, n_layers);
  auto fits = [&](GgmlType x) { return row_length % type_info(x).block_size == 0; };
  if (!fits(t)) {
    if (t == GgmlType::kQ4_K) t = GgmlType::kQ5_0;
    else if (t == GgmlType::kQ5_K) t = GgmlType::kQ5_1;
    else if (t == GgmlType::kQ6_K) t = GgmlType::kQ8_0;
    else if (t == GgmlType::kIQ4_XS || t == GgmlType::kQ3_K || t == GgmlType::kQ2_K) t = GgmlType::kIQ4_NL;
  }
  return fits(t) ? t : GgmlType::kF16;
}

std::optional<WeightScheme> parse_weight_scheme(const std::string& name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const auto& s : kSchemes)
    if (lower == s.name) return WeightScheme{s.name, s.base, lower == "q4_k_m"};
  return std::nullopt;
}

const std::vector<std::string>& weight_scheme_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& s : kSchemes) v.push_back(s.name);
    return v;
  }();
  return names;
}

SynthResult synthesize_model(const SynthOptions& options, const std::string& path, ThreadPool& pool) {
  SynthResult result;
  ModelConfig c = options.config;
  if (c.dim <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.ffn_dim <= 0 || c.head_dim <= 0)
    fail("model shape has a non-positive size");
  GgufWriter w;
  if (!(options.output_skew >= 1.0f && options.output_skew <= kMaxOutputSkew))
    fail("output skew must be in [1, {}], not {}", kMaxOutputSkew, options.output_skew);
  VocabShape vocab;
  if (!options.vocab_from.empty()) {
    auto from = GgufFile::open(options.vocab_from);
    vocab = copy_vocab(w, *from);
    const auto n = static_cast<int64_t>(vocab.types.size());
    if (n != c.vocab_size)
      result.notes.push_back(fmt::format("vocabulary size {} from '{}' replaces the preset's {}", n,
                                         options.vocab_from, c.vocab_size));
    c.vocab_size = n;
  } else {
    vocab = set_builtin_vocab(w, c.vocab_size);
  }
  const std::vector<float> output_scale = output_row_scales(vocab, options.output_skew);
  set_model_metadata(w, c, options.scheme);

  std::vector<TensorPlan> plan = plan_tensors(c, options.scheme);
  // One note per fallback: "rows of 64 fit no q4_k block: q5_0 for token_embd attn_q ...".
  std::map<std::tuple<GgmlType, GgmlType, int64_t>, std::vector<std::string>> fallbacks;
  for (const auto& t : plan) {
    if (t.type == t.intended) continue;
    auto& kinds = fallbacks[{t.intended, t.type, t.dims[0]}];
    if (std::find(kinds.begin(), kinds.end(), t.kind) == kinds.end()) kinds.push_back(t.kind);
  }
  for (const auto& [key, kinds] : fallbacks) {
    auto [intended, actual, cols] = key;
    result.notes.push_back(fmt::format("rows of {} are not a multiple of the {} block ({}): {} for {}", cols,
                                       type_name(intended), type_info(intended).block_size, type_name(actual),
                                       fmt::join(kinds, " ")));
  }

  const uint64_t seed = options.seed;
  std::vector<std::vector<float>> rows(pool.size());
  for (const auto& t : plan) {
    const int64_t cols = t.dims[0];
    const int64_t n_rows = t.dims.size() == 2 ? t.dims[1] : 1;
    const size_t rb = row_bytes(t.type, cols);
    uint64_t tensor_seed = fnv1a(t.name) ^ (seed * 0xD1B54A32D192ED03ull);
    result.weight_bytes += rb * n_rows;
    w.add_tensor(t.name, t.type, t.dims, [&, t, cols, n_rows, rb, tensor_seed](std::span<uint8_t> dst) {
      if (t.init == TensorPlan::Init::kOnes) {
        std::vector<float> ones(cols, 1.0f);
        std::memcpy(dst.data(), ones.data(), rb);
        return;
      }
      const float stddev = 0.02f;
      pool.parallel_for(n_rows, 16, [&](int64_t begin, int64_t end, int ti) {
        auto& row = rows[ti];
        row.resize(cols);
        for (int64_t r = begin; r < end; ++r) {
          uint64_t s = tensor_seed + static_cast<uint64_t>(r);
          const float row_stddev = t.kind == "output" ? stddev * output_scale[r] : stddev;
          fill_normal(row.data(), cols, row_stddev, splitmix64(s));
          uint8_t* out = dst.data() + rb * r;
          if (t.type == GgmlType::kF32) std::memcpy(out, row.data(), rb);
          else quantize_row(t.type, row.data(), out, cols);
        }
      });
    });
  }
  w.write(path);
  result.config = c;
  result.file_bytes = std::filesystem::file_size(path);
  return result;
}

}  // namespace tps
