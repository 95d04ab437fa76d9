#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <map>

#include "core/error.h"
#include "tokenizer/utf8.h"

namespace tps {
namespace {

// The patterns are llama.cpp's adaptations of each model's tokenizer.json regex
// (case-insensitive groups spelled out, as llama.cpp matches them).
const char* const kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const char* const kLlama3 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kQwen2 =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* const kPoro = R"( ?[^(\s|.,!?…。，、।۔،)]+)";
const char* const kCjk = "[一-龥ࠀ-一가-퟿]+";

const std::map<std::string, PreTokenizerSpec, std::less<>>& specs() {
  static const auto* table = [] {
    auto* t = new std::map<std::string, PreTokenizerSpec, std::less<>>;
    const PreTokenizerSpec gpt2{{kGpt2}};
    const PreTokenizerSpec llama3{{kLlama3}, true, true};
    const PreTokenizerSpec llama3_regex{{kLlama3}};
    const PreTokenizerSpec qwen2{{kQwen2}};
    const PreTokenizerSpec starcoder{{R"(\p{N})", kGpt2}};
    const PreTokenizerSpec poro{{kPoro}};
    (*t)["default"] = {{R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, R"(\p{N}+)", "[0-9][0-9][0-9]"}};
    for (const char* n : {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "lfm2"})
      (*t)[n] = llama3;
    for (const char* n : {"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"}) (*t)[n] = llama3_regex;
    (*t)["deepseek-llm"] = {{
        "[\r\n]",
        "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-"
        "ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-"
        "ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
        "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
        "\\s+$",
        kCjk,
        "\\p{N}+",
    }};
    (*t)["deepseek-coder"] = {{"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kCjk, R"(\p{N})"}};
    (*t)["deepseek-v3"] = {{
        R"(\p{N}{1,3})",
        "[一-龥぀-ゟ゠-ヿ]+",
        R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    }};
    (*t)["falcon"] = {{R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, "[0-9][0-9][0-9]"}};
    for (const char* n : {"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"})
      (*t)[n] = starcoder;
    for (const char* n : {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v1-en", "jina-v2-es",
                          "jina-v2-de", "jina-v2-code", "roberta-bpe", "mpt", "olmo", "jais", "exaone4",
                          "trillion", "mellum"})
      (*t)[n] = gpt2;
    for (const char* n : {"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez", "hunyuan", "grok-2"})
      (*t)[n] = qwen2;
    for (const char* n : {"poro-chat", "bloom", "gpt3-finnish"}) (*t)[n] = poro;
    (*t)["viking"] = {{kPoro, R"(\p{N})"}};
    (*t)["tekken"] = {{
        R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
    }, true, true};
    const char* const gpt4o =
        R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    for (const char* n : {"gpt-4o", "llama4", "minimax-m2"}) (*t)[n] = {{gpt4o}};
    (*t)["chameleon"] = {{
        "<sentinel:[0-9]+>", "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z", R"(([\t\n]|    |  ))", R"(\p{N})",
        R"([\p{P}!-/:-@\[-`{-~])", kGpt2,
    }, false, true};
    (*t)["seed-coder"] = {{
        R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)",
    }};
    return t;
  }();
  return *table;
}

}  // namespace

const PreTokenizerSpec& pre_tokenizer_spec(std::string_view name) {
  auto it = specs().find(name);
  return it != specs().end() ? it->second : specs().at("default");
}

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

PreTokenizer::PreTokenizer(const std::vector<std::string>& patterns) {
  for (const std::string& pattern : patterns) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    auto regex = std::make_unique<Regex>();
    regex->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    if (!regex->code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error, message, sizeof message);
      fail("pre-tokenizer regex error at {}: {} in '{}'", offset, reinterpret_cast<char*>(message), pattern);
    }
    pcre2_jit_compile(regex->code, PCRE2_JIT_COMPLETE);  // optional speed-up; falls back to the interpreter
    regexes_.push_back(std::move(regex));
  }
}

PreTokenizer::~PreTokenizer() = default;

std::vector<std::string_view> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (!text.empty()) pieces.push_back(text);
  std::vector<std::string_view> next;
  for (const auto& regex : regexes_) {
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(regex->code, nullptr);
    if (!match) throw std::bad_alloc();
    next.clear();
    for (std::string_view piece : pieces) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t gap = 0;  // start of text not yet assigned to a word
      size_t pos = 0;
      while (pos < piece.size()) {
        const int rc = pcre2_match(regex->code, subject, piece.size(), pos, PCRE2_NO_UTF_CHECK, match, nullptr);
        if (rc < 0) break;  // no further match (or a match limit): the rest stays one piece
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
        const size_t begin = ov[0];
        const size_t end = ov[1];
        if (end <= begin) {  // an empty match: move one character on
          if (begin >= piece.size()) break;
          pos = begin + utf8::sequence_length(static_cast<uint8_t>(piece[begin]));
          continue;
        }
        if (begin > gap) next.push_back(piece.substr(gap, begin - gap));
        next.push_back(piece.substr(begin, end - begin));
        gap = pos = end;
      }
      if (gap < piece.size()) next.push_back(piece.substr(gap));
    }
    pcre2_match_data_free(match);
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace tps
