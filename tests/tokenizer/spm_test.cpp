// The stories260K vocabulary (llama2.c's 512-token SentencePiece model) against the
// prompt ids and continuation llama.cpp produced for it, and SentencePiece details.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

#include "support/test_files.h"

namespace tps {
namespace {

class Stories : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto path = test::fixtures_dir() / "models" / "stories260K.gguf";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "fixture absent: " << path;
    file_ = GgufFile::open(path.string());
    tok_ = Tokenizer::from_gguf(*file_);
  }
  nlohmann::json golden(const std::string& name) {
    return nlohmann::json::parse(test::read_file(test::fixtures_dir() / "golden" / "llama.cpp" / name));
  }
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(Stories, Metadata) {
  EXPECT_EQ(tok_->kind(), TokenizerKind::kSpm);
  EXPECT_EQ(tok_->vocab_size(), 512);
  EXPECT_EQ(tok_->bos_id(), 1);
  EXPECT_EQ(tok_->eos_id(), 2);
  EXPECT_TRUE(tok_->add_bos());
  EXPECT_TRUE(tok_->is_eog(2));
  EXPECT_FALSE(tok_->is_eog(1));
  EXPECT_TRUE(tok_->is_control(1));
  EXPECT_FALSE(tok_->is_control(403));
  EXPECT_EQ(tok_->find_token("<0x0A>"), 13);
  EXPECT_EQ(tok_->find_token("no such token"), -1);
}

TEST_F(Stories, PromptsMatchLlamaCpp) {
  for (const char* name : {"stories260K.p1.json", "stories260K.p2.json"}) {
    const auto g = golden(name);
    const std::string prompt = name == std::string("stories260K.p1.json")
        ? "Once upon a time"
        : "The little dog ran to the park and saw a big red ball. He wanted to play with it, so he";
    EXPECT_EQ(tok_->encode(prompt, true, false), g["prompt_ids"].get<std::vector<int32_t>>()) << name;
    std::vector<int32_t> all = g["prompt_ids"].get<std::vector<int32_t>>();
    const auto generated = g["generated_ids"].get<std::vector<int32_t>>();
    all.insert(all.end(), generated.begin(), generated.end());
    const auto bytes = g["generated_bytes"].get<std::vector<uint8_t>>();
    EXPECT_EQ(tok_->decode(all), prompt + std::string(bytes.begin(), bytes.end())) << name;
  }
}

TEST_F(Stories, LeadingSpaceDroppedOnlyAfterBos) {
  const auto ids = tok_->encode("Once upon", false, false);
  EXPECT_EQ(tok_->decode(ids), " Once upon");
  EXPECT_EQ(tok_->piece_after(1, ids[0]), "Once");
  EXPECT_EQ(tok_->piece_after(-1, ids[0]), " Once");
}

TEST_F(Stories, ByteFallbackRoundTrips) {
  const std::string text = "caf\xC3\xA9 \xE2\x9C\x93 \t\n\xF0\x9F\x98\x80!";
  const auto ids = tok_->encode(text, true, false);
  EXPECT_EQ(tok_->decode(ids), text);
  // Raw invalid bytes survive too: each becomes its <0xNN> token.
  const std::string bad = "a\xFF\xC3";
  EXPECT_EQ(tok_->decode(tok_->encode(bad, true, false)), bad);
}

TEST_F(Stories, SpecialTextParsedOnlyWhenAsked) {
  EXPECT_EQ(tok_->encode("<s>", false, true), std::vector<int32_t>({1}));
  const auto plain = tok_->encode("<s>", false, false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(tok_->decode(plain), " <s>");
  EXPECT_EQ(tok_->encode("a</s>b", false, true),
            (std::vector<int32_t>{tok_->encode("a", false, false)[0], 2,
                                   tok_->encode("b", false, false)[0]}));
  EXPECT_EQ(tok_->token_to_piece(2), "");
  EXPECT_EQ(tok_->token_to_piece(2, true), "</s>");
}

TEST_F(Stories, StreamingDecoderMatchesLlama2c) {
  const std::string golden_text = test::read_file(test::fixtures_dir() / "golden" / "llama2c" / "greedy_n200.txt");
  const auto g = golden("stories260K.p1.json");
  std::vector<int32_t> ids = g["prompt_ids"].get<std::vector<int32_t>>();
  const auto generated = g["generated_ids"].get<std::vector<int32_t>>();
  ids.insert(ids.end(), generated.begin(), generated.end());
  StreamingDecoder dec(*tok_);
  std::string text;
  for (int32_t id : ids) text += dec.push(id);
  text += dec.flush();
  EXPECT_EQ(golden_text.substr(0, text.size()), text);
}

TEST_F(Stories, OutOfRangeIdIsAnError) {
  EXPECT_THROW(tok_->token_to_piece(512), Error);
  EXPECT_THROW(tok_->token_text(-1), Error);
  EXPECT_FALSE(tok_->is_eog(9999));
}

TEST_F(Stories, StreamingDecoderHoldsSplitCharacters) {
  // U+00E9 as two byte tokens: nothing is printed until the character is whole.
  const int32_t c3 = tok_->find_token("<0xC3>");
  const int32_t a9 = tok_->find_token("<0xA9>");
  ASSERT_GE(c3, 0);
  StreamingDecoder dec(*tok_);
  EXPECT_EQ(dec.push(c3), "");
  EXPECT_EQ(dec.push(a9), "\xC3\xA9");
  EXPECT_EQ(dec.push(c3), "");
  EXPECT_EQ(dec.flush(), "\xEF\xBF\xBD");  // a dangling lead byte becomes U+FFFD
  StreamingDecoder dec2(*tok_);
  EXPECT_EQ(dec2.push(a9), "\xEF\xBF\xBD");  // a stray continuation byte at once
}

}  // namespace
}  // namespace tps

namespace tps {
namespace {

TEST(Phi3, ChatTokens) {
  const auto path = test::fixtures_dir() / "vocab" / "ggml-vocab-phi-3.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "fixture absent: " << path;
  auto file = GgufFile::open(path.string());
  auto tok = Tokenizer::from_gguf(*file);
  const int32_t end = tok->find_token("<|end|>");
  const int32_t user = tok->find_token("<|user|>");
  ASSERT_GE(end, 0);
  ASSERT_GE(user, 0);
  EXPECT_TRUE(tok->is_eog(end));
  EXPECT_TRUE(tok->is_eog(tok->eos_id()));
  EXPECT_FALSE(tok->is_eog(user));
  const auto ids = tok->encode("<|user|>\nHi<|end|>", true, true);
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids[0], tok->bos_id());
  EXPECT_EQ(ids[1], user);
  EXPECT_EQ(ids.back(), end);
}

}  // namespace
}  // namespace tps

namespace tps {
namespace {

// Merging word by word is only exact when no token joins one word to the next; a
// vocabulary with such a token ("a▁") must be merged across the space.
TEST(SpmMerges, TokenSpanningASpaceIsFound) {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens",
                     {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "a\xE2\x96\x81", "\xE2\x96\x81" "a"});
  w.set_f32_array("tokenizer.ggml.scores", {0, 0, 0, -1, -1, -1, -2, -5});
  const auto path = std::filesystem::path(tps::test::temp_path("spm_span.gguf"));
  w.write(path.string());
  auto file = GgufFile::open(path.string());
  std::filesystem::remove(path);
  auto tok = Tokenizer::from_gguf(*file);
  EXPECT_EQ(tok->encode("a b", false, false), (std::vector<int32_t>{3, 6, 5}));
}

}  // namespace
}  // namespace tps
