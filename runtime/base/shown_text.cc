#include "hetrun/base/shown_text.h"

#include <cstdint>
#include <cstdio>

namespace hetrun {
namespace {

// The length of the well-formed UTF-8 sequence at text[at] (1-4) and its code point; 0 when the
// bytes there are not one.
size_t SequenceAt(std::string_view text, size_t at, uint32_t* code_point) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char lead = byte(0);
  size_t length = 0;
  uint32_t cp = 0, least = 0;
  if (lead < 0x80) {
    *code_point = lead;
    return 1;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2, cp = lead & 0x1F, least = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3, cp = lead & 0x0F, least = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4, cp = lead & 0x07, least = 0x10000;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  if (cp < least || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  *code_point = cp;
  return length;
}

std::string Escaped(const char* format, unsigned value) {
  char out[8];
  std::snprintf(out, sizeof out, format, value);
  return out;
}

// What stands for the character (or the invalid byte) at text[at]; `used` gets its byte count.
std::string Piece(std::string_view text, size_t at, bool keep_newlines, size_t* used) {
  uint32_t cp = 0;
  size_t length = SequenceAt(text, at, &cp);
  if (length == 0) {
    *used = 1;
    return Escaped("\\x%02x", static_cast<unsigned char>(text[at]));
  }
  *used = length;
  if (cp == '\n') return keep_newlines ? "\n" : "\\n";
  if (cp == '\r') return "\\r";
  if (cp == '\t') return "\\t";
  if (cp < 0x20 || cp == 0x7F) return Escaped("\\x%02x", cp);
  if (cp >= 0x80 && cp <= 0x9F) return Escaped("\\u%04x", cp);
  return std::string(text.substr(at, length));
}

}  // namespace

std::string ShownText(std::string_view text, size_t max_bytes, bool keep_newlines) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    size_t used = 0;
    std::string piece = Piece(text, at, keep_newlines, &used);
    if (out.size() + piece.size() > max_bytes) return out + "...";
    out += piece;
    at += used;
  }
  return out;
}

bool IsValidUtf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    uint32_t cp = 0;
    size_t length = SequenceAt(text, at, &cp);
    if (length == 0) return false;
    at += length;
  }
  return true;
}

}  // namespace hetrun
