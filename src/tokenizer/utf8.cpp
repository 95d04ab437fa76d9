#include "tokenizer/utf8.h"

namespace tps::utf8 {

int decode(std::string_view text, size_t pos, char32_t& cp) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  if (lead < 0x80) {
    cp = lead;
    return 1;
  }
  int len;
  char32_t value;
  if (lead >= 0xC2 && lead <= 0xDF) {
    len = 2;
    value = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    len = 3;
    value = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    len = 4;
    value = lead & 0x07;
  } else {
    return 0;
  }
  for (int i = 1; i < len; ++i) {
    if (pos + i >= text.size()) return -1;
    const uint8_t c = byte(pos + i);
    if ((c & 0xC0) != 0x80) return 0;
    value = (value << 6) | (c & 0x3F);
    // Reject overlongs, surrogates and > U+10FFFF as soon as the second byte shows them,
    // so an impossible prefix is never held back as "incomplete".
    if (i == 1) {
      if (len == 3 && (value < 0x20 || (value >= 0x360 && value < 0x380))) return 0;
      if (len == 4 && (value < 0x10 || value > 0x10F)) return 0;
    }
  }
  cp = value;
  return len;
}

int char_length(std::string_view text, size_t pos) {
  char32_t cp;
  const int len = decode(text, pos, cp);
  return len > 0 ? len : 1;
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::string sanitize(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    char32_t cp;
    const int len = decode(text, pos, cp);
    if (len > 0) {
      out.append(text.substr(pos, len));
      pos += len;
    } else {
      append(out, kReplacement);
      ++pos;
    }
  }
  return out;
}

}  // namespace tps::utf8
