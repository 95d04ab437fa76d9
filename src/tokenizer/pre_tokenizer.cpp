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
    // Letters with case, spelled as code points: some are canonical singletons that
    // text tools would silently normalize (U+2126 OHM SIGN into U+03A9 ...).
    (*t)["deepseek-llm"] = {{
        "[\r\n]",
        "\\s?[A-Za-z\\x{B5}\\x{C0}-\\x{D6}\\x{D8}-\\x{F6}\\x{F8}-\\x{1BA}\\x{1BC}-\\x{1BF}"
        "\\x{1C4}-\\x{293}\\x{295}-\\x{2AF}\\x{370}-\\x{373}\\x{376}\\x{377}\\x{37B}-\\x{37D}"
        "\\x{37F}\\x{386}\\x{388}-\\x{38A}\\x{38C}\\x{38E}-\\x{3A1}\\x{3A3}-\\x{3F5}"
        "\\x{3F7}-\\x{481}\\x{48A}-\\x{52F}\\x{531}-\\x{556}\\x{10A0}-\\x{10C5}"
        "\\x{13A0}-\\x{13F5}\\x{13F8}-\\x{13FD}\\x{1C90}-\\x{1CBA}\\x{1CBD}-\\x{1CBF}"
        "\\x{1D00}-\\x{1D2B}\\x{1D6B}-\\x{1D77}\\x{1D79}-\\x{1D9A}\\x{1E00}-\\x{1F15}"
        "\\x{1F18}-\\x{1F1D}\\x{1F20}-\\x{1F45}\\x{1F48}-\\x{1F4D}\\x{1F50}-\\x{1F57}\\x{1F59}"
        "\\x{1F5B}\\x{1F5D}\\x{1F5F}-\\x{1F7D}\\x{1F80}-\\x{1FB4}\\x{1FB6}-\\x{1FBC}\\x{1FBE}"
        "\\x{1FC2}-\\x{1FC4}\\x{1FC6}-\\x{1FCC}\\x{1FD0}-\\x{1FD3}\\x{1FD6}-\\x{1FDB}"
        "\\x{1FE0}-\\x{1FEC}\\x{1FF2}-\\x{1FF4}\\x{1FF6}-\\x{1FFC}\\x{2102}\\x{2107}"
        "\\x{210A}-\\x{2113}\\x{2115}\\x{2119}-\\x{211D}\\x{2124}\\x{2126}\\x{2128}"
        "\\x{212A}-\\x{212D}\\x{212F}-\\x{2134}\\x{2139}\\x{213C}-\\x{213F}\\x{2145}-\\x{2149}"
        "\\x{214E}\\x{2183}\\x{2184}\\x{2C00}-\\x{2C7B}\\x{2C7E}-\\x{2CE4}\\x{2CEB}-\\x{2CEE}"
        "\\x{2CF2}\\x{2CF3}\\x{A640}-\\x{A66D}\\x{A680}-\\x{A69B}\\x{A722}-\\x{A76F}"
        "\\x{A771}-\\x{A787}\\x{A78B}-\\x{A78E}\\x{AB70}-\\x{ABBF}\\x{FB00}-\\x{FB06}"
        "\\x{FB13}-\\x{FB17}\\x{FF21}-\\x{FF3A}\\x{FF41}-\\x{FF5A}\\x{10400}-\\x{1044F}"
        "\\x{104B0}-\\x{104D3}\\x{104D8}-\\x{104FB}\\x{10C80}-\\x{10CB2}\\x{10CC0}-\\x{10CF2}"
        "\\x{118A0}-\\x{118DF}\\x{1E900}-\\x{1E943}]+",
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

std::vector<std::string> pre_tokenizer_names() {
  std::vector<std::string> names;
  for (const auto& [name, spec] : specs()) names.push_back(name);
  return names;
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
        int rc = pcre2_match(regex->code, subject, piece.size(), pos, PCRE2_NO_UTF_CHECK, match, nullptr);
        // The JIT's small fixed stack can run out on long inputs; the interpreter's grows on the heap.
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
          rc = pcre2_match(regex->code, subject, piece.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, match, nullptr);
        if (rc < 0) break;  // no further match (or a match limit): the rest stays one piece
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match);
        const size_t begin = ov[0];
        const size_t end = ov[1];
        if (end <= begin) {  // an empty match: move one character on
          if (begin >= piece.size()) break;
          pos = begin + utf8::char_length(piece, begin);
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
