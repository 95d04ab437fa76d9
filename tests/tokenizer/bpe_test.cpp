// Byte-level BPE details beyond the conformance vectors: pre-tokenizer splits, special
// tokens, end-of-generation ids, streaming of characters split across tokens.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "core/error.h"
#include "formats/gguf.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

#include "support/test_files.h"

namespace tps {
namespace {

using Words = std::vector<std::string_view>;

Words split(std::string_view pre, std::string_view text) {
  PreTokenizer p(pre_tokenizer_spec(pre).patterns);
  return p.split(text);
}

TEST(PreTokenizer, EveryKnownNameCompilesAndCoversTheText) {
  const std::string text =
      "Hello world's 12345 caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xD0\x9F\xD1\x80\xD0\xB8 \t\n\n  x?!  "
      "\xF0\x9F\x98\x80 IMGIMGABZ <sentinel:12>";
  for (const std::string& name : pre_tokenizer_names()) {
    SCOPED_TRACE(name);
    std::string joined;
    for (std::string_view w : split(name, text)) {
      EXPECT_FALSE(w.empty());
      joined += w;
    }
    EXPECT_EQ(joined, text);
  }
}

TEST(PreTokenizer, Gpt2Words) {
  EXPECT_EQ(split("gpt-2", "Hello world's  123"), (Words{"Hello", " world", "'s", " ", " 123"}));
}

TEST(PreTokenizer, DigitGrouping) {
  EXPECT_EQ(split("llama-bpe", "1234567"), (Words{"123", "456", "7"}));
  EXPECT_EQ(split("qwen2", "123"), (Words{"1", "2", "3"}));
  EXPECT_EQ(split("llama-bpe", "I'M here"), (Words{"I", "'M", " here"}));
}

TEST(PreTokenizer, UnknownNameFallsBackToDefault) {
  EXPECT_EQ(&pre_tokenizer_spec("no-such-pre-tokenizer"), &pre_tokenizer_spec("default"));
  EXPECT_TRUE(pre_tokenizer_spec("llama-bpe").ignore_merges);
  EXPECT_FALSE(pre_tokenizer_spec("gpt-2").ignore_merges);
}

class Gpt2 : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto path = test::fixtures_dir() / "vocab" / "ggml-vocab-gpt-2.gguf";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "fixture absent: " << path;
    file_ = GgufFile::open(path.string());
    tok_ = Tokenizer::from_gguf(*file_);
  }
  std::unique_ptr<GgufFile> file_;
  std::unique_ptr<Tokenizer> tok_;
};

TEST_F(Gpt2, Metadata) {
  EXPECT_EQ(tok_->kind(), TokenizerKind::kBpe);
  EXPECT_EQ(tok_->vocab_size(), 50257);
  EXPECT_EQ(tok_->eos_id(), 50256);
  EXPECT_FALSE(tok_->add_bos());
  EXPECT_TRUE(tok_->is_eog(50256));
  EXPECT_TRUE(tok_->is_control(50256));
  EXPECT_EQ(tok_->find_token("\xC4\xA0world"), 995);  // "Ġworld"
}

TEST_F(Gpt2, SpecialTokenText) {
  EXPECT_EQ(tok_->encode("a<|endoftext|>b", false, true), (std::vector<int32_t>{64, 50256, 65}));
  const auto plain = tok_->encode("<|endoftext|>", false, false);
  EXPECT_GT(plain.size(), 1u);
  EXPECT_EQ(tok_->decode(plain), "<|endoftext|>");
  EXPECT_EQ(tok_->decode({64, 50256, 65}), "ab");
  EXPECT_EQ(tok_->decode({64, 50256, 65}, true), "a<|endoftext|>b");
}

TEST_F(Gpt2, InvalidUtf8BecomesReplacementCharacters) {
  const auto ids = tok_->encode("a\xFF" "b", false, false);
  EXPECT_EQ(tok_->decode(ids), "a\xEF\xBF\xBD" "b");
}

TEST_F(Gpt2, StreamingHoldsPartialCharacters) {
  const std::string text = " \xF0\x9F\x98\x80\xF0\x9F\x98\x80 ok \xE4\xB8\xAD";
  const auto ids = tok_->encode(text, false, false);
  ASSERT_GT(ids.size(), 3u);
  StreamingDecoder dec(*tok_);
  std::string out;
  for (int32_t id : ids) {
    const std::string part = dec.push(id);
    // Every chunk is whole characters: it is its own sanitized form.
    EXPECT_EQ(part.find("\xEF\xBF\xBD"), std::string::npos);
    out += part;
  }
  out += dec.flush();
  EXPECT_EQ(out, text);
}

TEST_F(Gpt2, LongInputs) {
  // One long word and a long whitespace run: each is a single pre-token.
  const std::string word(20000, 'a');
  EXPECT_EQ(tok_->decode(tok_->encode(word, false, false)), word);
  const std::string spaces = "x" + std::string(20000, ' ') + "y";
  EXPECT_EQ(tok_->decode(tok_->encode(spaces, false, false)), spaces);
}

// Small GGUFs with broken tokenizer metadata.
class BadVocab : public ::testing::Test {
 protected:
  std::unique_ptr<Tokenizer> load(GgufWriter& w) {
    const auto path = std::filesystem::path(tps::test::temp_path("bad_vocab.gguf"));
    w.write(path.string());
    auto file = GgufFile::open(path.string());
    std::filesystem::remove(path);
    return Tokenizer::from_gguf(*file);
  }
};

TEST_F(BadVocab, Rejected) {
  {
    GgufWriter w;
    w.set_string("general.architecture", "llama");
    EXPECT_THROW(load(w), Error);  // no tokenizer at all
  }
  {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "bert");
    w.set_string_array("tokenizer.ggml.tokens", {"a"});
    EXPECT_THROW(load(w), Error);
  }
  {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "llama");
    EXPECT_THROW(load(w), Error);  // no tokens
  }
  {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", {"a", "b"});
    w.set_f32_array("tokenizer.ggml.scores", {0.0f});
    EXPECT_THROW(load(w), Error);  // scores do not match tokens
  }
  {
    GgufWriter w;
    w.set_string("tokenizer.ggml.model", "gpt2");
    w.set_string_array("tokenizer.ggml.tokens", {"a", "b"});
    EXPECT_THROW(load(w), Error);  // no merges
  }
}

TEST_F(BadVocab, MinimalSpmWithoutScoresOrTypesWorks) {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "llama");
  w.set_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "\xE2\x96\x81" "a", "b"});
  w.set_u32("tokenizer.ggml.bos_token_id", 4000000000u);  // out of range: the default (1) stays
  auto tok = load(w);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->encode("ab", true, false), (std::vector<int32_t>{1, 3, 4}));
  // No byte tokens: a character the vocabulary lacks becomes <unk>.
  EXPECT_EQ(tok->encode("c", false, false), (std::vector<int32_t>{0, 0}));
}

}  // namespace
}  // namespace tps

namespace tps {
namespace {

// A tiny byte-level vocabulary where "abc" is a token no merge sequence reaches.
std::unique_ptr<Tokenizer> tiny_bpe(const std::string& pre, std::unique_ptr<GgufFile>& file) {
  std::vector<std::string> tokens = {"a", "b", "c", "ab", "abc", "<|eot_id|>"};
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_string_array("tokenizer.ggml.merges", {"a b"});
  w.set_u32("tokenizer.ggml.bos_token_id", 5);
  const auto path = std::filesystem::path(tps::test::temp_path("tiny_bpe.gguf"));
  w.write(path.string());
  file = GgufFile::open(path.string());
  std::filesystem::remove(path);
  return Tokenizer::from_gguf(*file);
}

TEST(TinyBpe, IgnoreMergesFollowsThePreTokenizer) {
  std::unique_ptr<GgufFile> f1, f2;
  auto gpt2 = tiny_bpe("gpt-2", f1);
  auto llama3 = tiny_bpe("llama-bpe", f2);
  EXPECT_EQ(gpt2->encode("abc", false, false), (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(llama3->encode("abc", false, false), (std::vector<int32_t>{4}));
  // llama3-style vocabularies add BOS by default, GPT-2 ones do not.
  EXPECT_FALSE(gpt2->add_bos());
  EXPECT_TRUE(llama3->add_bos());
  EXPECT_EQ(llama3->encode("abc", true, false), (std::vector<int32_t>{5, 4}));
  // Found by its text: an end-of-turn token, even though the file calls it normal.
  EXPECT_TRUE(gpt2->is_eog(5));
  EXPECT_TRUE(gpt2->is_control(5));
  EXPECT_EQ(gpt2->encode("a<|eot_id|>", false, true), (std::vector<int32_t>{0, 5}));
}

}  // namespace
}  // namespace tps
