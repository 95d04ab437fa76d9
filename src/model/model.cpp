#include "model/model.h"

#include "model/gguf_config.h"
#include "model/model_weights.h"
#include "model/transformer.h"

namespace tps {

std::unique_ptr<Model> Model::load(const std::string& path, TensorParallelGroup* group) {
  auto file = GgufFile::open(path);
  ModelConfig config = read_model_config(*file);
  ModelWeights weights = bind_model_weights(*file, config);
  auto tokenizer = Tokenizer::from_gguf(*file);
  return std::make_unique<Transformer>(std::move(file), std::move(config), std::move(weights), std::move(tokenizer),
                                       group);
}

}  // namespace tps
