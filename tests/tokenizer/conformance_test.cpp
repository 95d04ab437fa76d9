// llama.cpp's tokenizer conformance vectors: every string must give exactly the
// expected ids (no BOS/EOS, special-token text not parsed) and decode back to itself.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

namespace tps {
namespace {

class Conformance : public ::testing::TestWithParam<std::string> {};

TEST_P(Conformance, ReproducesEveryVector) {
  const auto path = test::fixtures_dir() / "vocab" / ("ggml-vocab-" + GetParam() + ".gguf");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "fixture absent: " << path;
  auto file = GgufFile::open(path.string());
  auto tok = Tokenizer::from_gguf(*file);
  const auto cases = test::read_conformance(path);
  ASSERT_GT(cases.size(), 10u);
  size_t round_trips = 0;
  for (const auto& c : cases) {
    EXPECT_EQ(tok->encode(c.text, false, false), c.ids) << "text: '" << c.text << "'";
    // SentencePiece adds a space prefix that decoding drops after BOS, so decode after BOS.
    std::vector<int32_t> with_bos = c.ids;
    if (tok->bos_id() >= 0) with_bos.insert(with_bos.begin(), tok->bos_id());
    if (tok->decode(with_bos) == c.text) ++round_trips;
    else ADD_FAILURE() << "no round trip for '" << c.text << "': '" << tok->decode(with_bos) << "'";
  }
  EXPECT_EQ(round_trips, cases.size());
}

INSTANTIATE_TEST_SUITE_P(Vocabs, Conformance, ::testing::Values("llama-spm", "phi-3", "gpt-2", "starcoder", "deepseek-coder"));

}  // namespace
}  // namespace tps
