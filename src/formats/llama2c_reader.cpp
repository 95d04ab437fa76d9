#include <cstring>
#include <fstream>

#include "core/error.h"
#include "formats/llama2c.h"

namespace tps {

namespace {

constexpr uint32_t kExportMagic = 0x616b3432;  // "ak42"
constexpr size_t kLegacyHeaderBytes = 7 * 4;
constexpr size_t kExportHeaderBytes = 256;
// Far above any real model; keeps every size computation below inside int64.
constexpr int64_t kMaxDim = 1 << 20;
constexpr int64_t kMaxLayers = 4096;

int32_t load_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

// Validates the seven header integers; `vocab` may be negative in the legacy format.
void read_params(Llama2cCheckpoint& c, const uint8_t* p, const std::string& path) {
  int32_t v[7];
  for (int i = 0; i < 7; ++i) v[i] = load_i32(p + 4 * i);
  c.dim = v[0];
  c.hidden_dim = v[1];
  c.n_layers = v[2];
  c.n_heads = v[3];
  c.n_kv_heads = v[4];
  c.vocab_size = v[5];
  c.seq_len = v[6];
  if (c.version == 0 && c.vocab_size < 0) {
    c.shared_classifier = false;
    c.vocab_size = -c.vocab_size;
  }
  auto in_range = [](int64_t x, int64_t hi) { return x > 0 && x <= hi; };
  bool ok = in_range(c.dim, kMaxDim) && in_range(c.hidden_dim, kMaxDim) && in_range(c.n_layers, kMaxLayers) &&
            in_range(c.n_heads, c.dim) && in_range(c.n_kv_heads, c.n_heads) && in_range(c.vocab_size, kMaxDim) &&
            in_range(c.seq_len, kMaxDim);
  if (!ok)
    fail("'{}' is not a llama2.c checkpoint: header dim={} hidden_dim={} n_layers={} n_heads={} n_kv_heads={} "
         "vocab_size={} seq_len={} is out of range",
         path, v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
  if (c.dim % c.n_heads != 0 || c.n_heads % c.n_kv_heads != 0 || c.head_dim() % 2 != 0)
    fail("'{}': dim {} with {} heads and {} kv heads is not a valid attention shape", path, c.dim, c.n_heads,
         c.n_kv_heads);
}

// Lays out tensors at consecutive offsets; data pointers are fixed up once the total
// size has been checked against the file.
class Layout {
 public:
  Layout(size_t start, int64_t group_size) : offset_(start), group_size_(group_size) {}

  Llama2cTensor add(std::string name, int64_t rows, int64_t cols, bool quantized) {
    Llama2cTensor t;
    t.name = std::move(name);
    t.rows = rows;
    t.cols = cols;
    t.group_size = quantized ? group_size_ : 0;
    t.data = reinterpret_cast<const uint8_t*>(offset_);  // relative until resolve()
    offset_ += t.stored_bytes();
    return t;
  }
  void skip(size_t bytes) { offset_ += bytes; }
  size_t end() const { return offset_; }

 private:
  size_t offset_;
  int64_t group_size_;
};

std::string layer_name(int64_t layer, const char* what) { return "blk." + std::to_string(layer) + "." + what + ".weight"; }

}  // namespace

size_t Llama2cTensor::stored_bytes() const {
  size_t n = static_cast<size_t>(n_elements());
  if (group_size == 0) return n * 4;
  return n + n / group_size * 4;
}

void Llama2cTensor::read_f32(float* dst) const {
  int64_t n = n_elements();
  if (group_size == 0) {
    std::memcpy(dst, data, static_cast<size_t>(n) * 4);
    return;
  }
  // Scales follow all the int8 values; group g covers flattened elements [g*G, (g+1)*G).
  const auto* q = reinterpret_cast<const int8_t*>(data);
  const uint8_t* scales = data + n;
  for (int64_t g = 0; g < n / group_size; ++g) {
    float s = load_f32(scales + 4 * g);
    for (int64_t i = g * group_size; i < (g + 1) * group_size; ++i) dst[i] = q[i] * s;
  }
}

std::unique_ptr<Llama2cModel> Llama2cModel::open(const std::string& path) {
  std::unique_ptr<Llama2cModel> m(new Llama2cModel(path));
  const uint8_t* base = m->file_.data();
  size_t size = m->file_.size();
  Llama2cCheckpoint& c = m->ckpt_;

  if (size >= 4 && std::memcmp(base, "GGUF", 4) == 0) fail("'{}' is a GGUF file, not a llama2.c checkpoint", path);
  bool exported = size >= 4 && static_cast<uint32_t>(load_i32(base)) == kExportMagic;
  size_t header = exported ? kExportHeaderBytes : kLegacyHeaderBytes;
  if (size < header)
    fail("'{}' is too short for a llama2.c checkpoint: {} bytes, the header alone is {}", path, size, header);
  if (exported) {
    c.version = load_i32(base + 4);
    if (c.version != 1 && c.version != 2)
      fail("'{}': unsupported llama2.c export version {} (supported: legacy, 1, 2)", path, c.version);
    read_params(c, base + 8, path);
    c.shared_classifier = base[36] != 0;
    if (c.version == 2) {
      c.group_size = load_i32(base + 37);  // packed right after the flag byte
      if (c.group_size <= 0 || c.group_size > kMaxDim)
        fail("'{}': version 2 group size {} is out of range", path, c.group_size);
    }
  } else {
    read_params(c, base, path);
  }

  const int64_t L = c.n_layers, dim = c.dim, hidden = c.hidden_dim;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim();
  const bool q8 = c.version == 2;
  Layout layout(header, c.group_size);
  // Each kind of weight is stored for all layers before the next kind.
  auto per_layer = [&](const char* what, int64_t rows, int64_t cols, bool quantized) {
    std::vector<Llama2cTensor> v;
    for (int64_t l = 0; l < L; ++l) v.push_back(layout.add(layer_name(l, what), rows, cols, quantized));
    return v;
  };
  Llama2cTensor embedding, final_norm, classifier;
  std::vector<Llama2cTensor> att_norm, ffn_norm, wq, wk, wv, wo, w1, w2, w3;
  auto matrices = [&] {
    wq = per_layer("attn_q", dim, dim, q8);
    wk = per_layer("attn_k", kv_dim, dim, q8);
    wv = per_layer("attn_v", kv_dim, dim, q8);
    wo = per_layer("attn_output", dim, dim, q8);
  };
  auto ffn = [&] {
    w1 = per_layer("ffn_gate", hidden, dim, q8);
    w2 = per_layer("ffn_down", dim, hidden, q8);
    w3 = per_layer("ffn_up", hidden, dim, q8);
  };
  if (c.version == 0) {
    embedding = layout.add("token_embd.weight", c.vocab_size, dim, false);
    att_norm = per_layer("attn_norm", 1, dim, false);
    matrices();
    ffn_norm = per_layer("ffn_norm", 1, dim, false);
    ffn();
    final_norm = layout.add("output_norm.weight", 1, dim, false);
    layout.skip(static_cast<size_t>(2 * c.seq_len * c.head_dim() / 2) * 4);  // freq_cis real, imag
  } else {
    att_norm = per_layer("attn_norm", 1, dim, false);
    ffn_norm = per_layer("ffn_norm", 1, dim, false);
    final_norm = layout.add("output_norm.weight", 1, dim, false);
    embedding = layout.add("token_embd.weight", c.vocab_size, dim, q8);
    matrices();
    ffn();
  }
  if (!c.shared_classifier) classifier = layout.add("output.weight", c.vocab_size, dim, q8);

  if (layout.end() != size) {
    std::string kind = c.version == 0 ? "legacy llama2.c checkpoint" : fmt::format("llama2.c version {} export", c.version);
    fail("'{}' has {} bytes, but a {} with dim={} hidden_dim={} n_layers={} n_heads={} n_kv_heads={} "
         "vocab_size={} seq_len={}{} needs {} ({})",
         path, size, kind, dim, hidden, L, c.n_heads, c.n_kv_heads, c.vocab_size, c.seq_len,
         c.shared_classifier ? "" : " (unshared classifier)", layout.end(),
         layout.end() > size ? "truncated" : "trailing data");
  }
  if (q8) {
    // The exporter asserts this; a file that breaks it was not written by it.
    auto check = [&](const Llama2cTensor& t) {
      if (t.n_elements() % c.group_size != 0)
        fail("'{}': tensor {} has {} elements, not a multiple of the group size {}", path, t.name, t.n_elements(),
             c.group_size);
    };
    check(embedding);
    for (const auto* v : {&wq, &wk, &wv, &wo, &w1, &w2, &w3})
      for (const auto& t : *v) check(t);
  }

  if (c.shared_classifier) {
    classifier = embedding;
    classifier.name = "output.weight";
  }
  c.tensors = {embedding, final_norm, classifier};
  for (int64_t l = 0; l < L; ++l)
    for (const auto* v : {&wq, &wk, &wv, &wo, &att_norm, &w1, &w2, &w3, &ffn_norm}) c.tensors.push_back((*v)[l]);
  for (auto& t : c.tensors) t.data = base + reinterpret_cast<size_t>(t.data);
  return m;
}

Llama2cVocab read_llama2c_vocab(const std::string& path, int64_t vocab_size) {
  MappedFile file(path);
  const uint8_t* p = file.data();
  size_t size = file.size(), at = 4;
  if (size < 4) fail("'{}' is not a llama2.c tokenizer: {} bytes", path, size);
  int32_t max_len = load_i32(p);
  if (max_len <= 0 || max_len > (1 << 16))
    fail("'{}' is not a llama2.c tokenizer: max_token_length {} is out of range", path, max_len);
  Llama2cVocab vocab;
  vocab.tokens.reserve(vocab_size);
  vocab.scores.reserve(vocab_size);
  for (int64_t i = 0; i < vocab_size; ++i) {
    if (size - at < 8)
      fail("'{}' ends after {} tokens, but the model's vocabulary has {} (truncated or another model's)", path, i,
           vocab_size);
    float score = load_f32(p + at);
    int32_t len = load_i32(p + at + 4);
    at += 8;
    if (len < 0 || len > max_len)
      fail("'{}': token {} has length {}, outside 0..max_token_length {}", path, i, len, max_len);
    if (static_cast<size_t>(len) > size - at)
      fail("'{}' ends inside token {} of the model's {} (truncated)", path, i, vocab_size);
    vocab.tokens.emplace_back(reinterpret_cast<const char*>(p + at), len);
    vocab.scores.push_back(score);
    at += len;
  }
  if (at != size)
    fail("'{}' has {} bytes after its first {} tokens: it belongs to a model with a larger vocabulary", path,
         size - at, vocab_size);
  return vocab;
}

}  // namespace tps
