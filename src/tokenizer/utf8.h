#pragma once
// UTF-8 helpers shared by the tokenizers and the streaming decoder.
#include <cstdint>
#include <string>
#include <string_view>

namespace tps::utf8 {

inline constexpr char32_t kReplacement = 0xFFFD;

// Length of the sequence a lead byte announces (1 for invalid lead bytes, so a
// scan always advances).
int sequence_length(uint8_t lead);

// Decodes the code point at `pos`. Returns its byte length, 0 when the bytes there
// are not valid UTF-8 (overlong, surrogate, out of range, bad continuation), or -1
// when the text ends before a sequence that is valid so far is complete.
int decode(std::string_view text, size_t pos, char32_t& cp);

void append(std::string& out, char32_t cp);

// Replaces every invalid byte with U+FFFD (one per byte, as llama.cpp does).
std::string sanitize(std::string_view text);

}  // namespace tps::utf8
