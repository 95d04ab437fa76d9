// tps inspect: what a GGUF model is: architecture, hyper-parameters, tokenizer, tensors.
#include <cstdio>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "model/model.h"

namespace tps::cli {

namespace {

struct InspectArgs {
  std::string model;
  bool json = false;
};

std::string shape_string(const std::vector<int64_t>& dims) { return fmt::format("[{}]", fmt::join(dims, ", ")); }

const char* rope_style_name(RopeStyle s) { return s == RopeStyle::kHalves ? "neox (halves)" : "adjacent pairs"; }

int run(const InspectArgs& a) {
  // A full load validates every tensor against the configuration.
  auto model = Model::load(a.model);
  const ModelConfig& c = model->config();
  const GgufFile& f = model->gguf();
  const std::string tokenizer_kind =
      fmt::format("{} ({}{})", model->tokenizer().kind() == TokenizerKind::kSpm ? "SentencePiece" : "byte-level BPE",
                  f.get_string("tokenizer.ggml.model", "?"),
                  f.has("tokenizer.ggml.pre") ? ", pre " + f.get_string("tokenizer.ggml.pre") : "");
  int64_t parameters = 0;  // what the file holds, whatever the formula for the shape says
  for (const GgufTensor& t : f.tensors()) parameters += t.n_elements();
  if (a.json) {
    nlohmann::json tensors = nlohmann::json::array();
    for (const GgufTensor& t : f.tensors())
      tensors.push_back({{"name", t.name}, {"type", type_name(t.type)}, {"shape", t.dims}, {"bytes", t.nbytes}});
    nlohmann::json out = {{"file", a.model},
                          {"gguf_version", f.version()},
                          {"architecture", c.arch},
                          {"name", c.name},
                          {"dim", c.dim},
                          {"layers", c.n_layers},
                          {"heads", c.n_heads},
                          {"kv_heads", c.n_kv_heads},
                          {"head_dim", c.head_dim},
                          {"ffn_dim", c.ffn_dim},
                          {"vocab_size", c.vocab_size},
                          {"context_length", c.context_length},
                          {"rope_base", c.rope_base},
                          {"rope_dims", c.rope_dims},
                          {"rope_style", rope_style_name(c.rope_style)},
                          {"rms_eps", c.rms_eps},
                          {"tied_output", c.tied_output},
                          {"qkv_bias", c.qkv_bias},
                          {"tokenizer", tokenizer_kind},
                          {"tokenizer_vocab_size", model->tokenizer().vocab_size()},
                          {"parameters", parameters},
                          {"file_bytes", f.file_size()},
                          {"weight_bytes", f.tensor_data_bytes()},
                          {"tensors", tensors}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  fmt::print("file            {} (GGUF v{}, {} bytes)\n", a.model, f.version(), f.file_size());
  fmt::print("architecture    {}{}\n", c.arch, c.name.empty() ? "" : fmt::format(" ({})", c.name));
  fmt::print("dim             {}\nlayers          {}\nheads           {} (kv {}, head dim {})\n", c.dim, c.n_layers,
             c.n_heads, c.n_kv_heads, c.head_dim);
  fmt::print("ffn             {}\nvocab           {}\ncontext         {}\n", c.ffn_dim, c.vocab_size, c.context_length);
  fmt::print("rope            base {}, {} dims, {}\nrms eps         {}\n", c.rope_base, c.rope_dims,
             rope_style_name(c.rope_style), c.rms_eps);
  fmt::print("output          {}{}\n", c.tied_output ? "tied to token_embd" : "output.weight",
             c.qkv_bias ? ", q/k/v biases" : "");
  fmt::print("tokenizer       {}, {} tokens\n", tokenizer_kind, model->tokenizer().vocab_size());
  fmt::print("parameters      {} ({:.2f} M)\n", parameters, parameters / 1e6);
  fmt::print("weight bytes    {} ({:.2f} MiB; {:.2f} MiB read per token)\n", f.tensor_data_bytes(),
             f.tensor_data_bytes() / 1048576.0, model->weight_bytes() / 1048576.0);
  fmt::print("\n{:<32} {:<6} {:<16} {:>12}\n", "tensor", "type", "shape", "bytes");
  for (const GgufTensor& t : f.tensors())
    fmt::print("{:<32} {:<6} {:<16} {:>12}\n", t.name, type_name(t.type), shape_string(t.dims), t.nbytes);
  return 0;
}

CommandRegistration registration{"inspect", "show a GGUF model's architecture, hyper-parameters and tensors",
                                 [](CLI::App& sub) {
                                   auto a = std::make_shared<InspectArgs>();
                                   sub.add_option("model", a->model, "GGUF model file")->required();
                                   sub.add_flag("--json", a->json, "print as JSON");
                                   return [a] { return run(*a); };
                                 }};

}  // namespace

}  // namespace tps::cli
