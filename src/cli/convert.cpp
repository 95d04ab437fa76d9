// `tps convert`: import models from other formats into GGUF.
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "cli/command.h"
#include "core/error.h"
#include "formats/llama2c.h"

namespace tps::cli {

namespace {

struct ConvertArgs {
  std::string llama2c;
  std::string tokenizer;
  std::string output;
};

int convert_llama2c(const ConvertArgs& a) {
  auto model = Llama2cModel::open(a.llama2c);
  const auto& c = model->checkpoint();
  Llama2cVocab vocab = read_llama2c_vocab(a.tokenizer, c.vocab_size);
  std::string name = std::filesystem::path(a.llama2c).stem().string();
  write_llama2c_gguf(*model, vocab, name, a.output);
  fmt::print("{}: llama2.c {}{}, dim {}, {} layers, {} heads ({} kv), ffn {}, vocab {}, context {} -> {} (F32)\n",
             a.llama2c, c.version == 0 ? "legacy checkpoint" : fmt::format("version {} export", c.version),
             c.version == 2 ? fmt::format(" (int8, groups of {})", c.group_size) : "", c.dim, c.n_layers, c.n_heads,
             c.n_kv_heads, c.hidden_dim, c.vocab_size, c.seq_len, a.output);
  return 0;
}

const CommandRegistration kConvert{
    "convert", "convert a llama2.c checkpoint (legacy, version 1 or 2) and its tokenizer to GGUF",
    [](CLI::App& sub) {
      auto a = std::make_shared<ConvertArgs>();
      sub.add_option("--llama2c", a->llama2c, "llama2.c model file (e.g. stories15M.bin)")->required();
      sub.add_option("--tokenizer", a->tokenizer, "llama2.c tokenizer file (e.g. tokenizer.bin)")->required();
      sub.add_option("-o,--output", a->output, "GGUF file to write")->required();
      return [a]() { return convert_llama2c(*a); };
    }};

}  // namespace

}  // namespace tps::cli
