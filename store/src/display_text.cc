#include "shardscope/store/display_text.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace shardscope::store {
namespace {

// The length of the UTF-8 sequence at text[i] and its code point; 0 when it is not valid
// UTF-8 (overlong forms and surrogates included).
size_t DecodeUtf8(std::string_view text, size_t i, uint32_t* code) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t lead = byte(i);
  if (lead < 0x80) {
    *code = lead;
    return 1;
  }
  size_t length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 0;
  if (length == 0 || lead > 0xf4 || i + length > text.size()) return 0;
  uint32_t c = lead & (0x7f >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    c = (c << 6) | (byte(i + k) & 0x3f);
  }
  static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (c < kSmallest[length] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
  *code = c;
  return length;
}

// C0 and C1 controls, DEL, and the bidirectional marks and overrides (they reorder what a
// terminal shows after them).
bool IsUnsafe(uint32_t c, bool allow_newlines) {
  if (c == '\n') return !allow_newlines;
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f ||
         (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

}  // namespace

std::string EscapeControls(std::string_view text, const EscapeOptions& options) {
  std::string out;
  out.reserve(std::min(text.size(), options.max_bytes) + 16);
  size_t i = 0;
  while (i < text.size()) {
    if (out.size() >= options.max_bytes) {
      out += "... (" + std::to_string(text.size()) + " bytes)";
      break;
    }
    uint32_t code = 0;
    const size_t length = DecodeUtf8(text, i, &code);
    char escape[16];
    if (length == 0) {
      std::snprintf(escape, sizeof(escape), "\\x%02x", static_cast<uint8_t>(text[i]));
      out += escape;
      ++i;
      continue;
    }
    if (IsUnsafe(code, options.keep_newlines)) {
      std::snprintf(escape, sizeof(escape), "\\u%04x", code);
      out += escape;
    } else {
      out.append(text, i, length);
    }
    i += length;
  }
  return out;
}

bool HasControls(std::string_view text, bool allow_newlines) {
  size_t i = 0;
  while (i < text.size()) {
    uint32_t code = 0;
    const size_t length = DecodeUtf8(text, i, &code);
    if (length == 0 || IsUnsafe(code, allow_newlines)) return true;
    i += length;
  }
  return false;
}

}  // namespace shardscope::store
