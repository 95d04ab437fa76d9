#pragma once
// UTF-8 helpers shared by the tokenizers and the streaming decoder.
#include <cstdint>
#include <string>
#include <string_view>

namespace tps::utf8 {

inline constexpr char32_t kReplacement = 0xFFFD;

// Decodes the code point at `pos`. Returns its byte length, 0 when the bytes there
// are not valid UTF-8 (overlong, surrogate, out of range, bad continuation), or -1
// when the text ends before a sequence that is valid so far is complete.
int decode(std::string_view text, size_t pos, char32_t& cp);

// Bytes in the character at `pos`: its length when valid, else 1 (a lone invalid byte).
int char_length(std::string_view text, size_t pos);

void append(std::string& out, char32_t cp);

// Replaces every invalid byte with U+FFFD (one per byte, as llama.cpp does).
std::string sanitize(std::string_view text);

}  // namespace tps::utf8
