#include "support/printable.hpp"

#include <algorithm>
#include <cstdio>

namespace meshrun {
namespace {

bool is_control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

// A C1 control (U+0080..U+009F) as UTF-8 is 0xC2 then 0x80..0x9F: U+009B is CSI, which a
// terminal acts on as ESC [ (xterm does), so it is a control byte pair like ESC.
bool is_c1_at(const std::string& text, std::size_t i) {
  return static_cast<unsigned char>(text[i]) == 0xc2 && i + 1 < text.size() &&
         static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
         static_cast<unsigned char>(text[i + 1]) <= 0x9f;
}

bool has_control(const std::string& text) {
  for (std::size_t i = 0; i < text.size(); ++i)
    if (is_control(text[i]) || is_c1_at(text, i)) return true;
  return false;
}

std::string escaped(const std::string& text, bool quote) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (is_c1_at(text, i)) {
      char hex[16];
      std::snprintf(hex, sizeof hex, "\\xc2\\x%02x", static_cast<unsigned char>(text[i + 1]));
      out += hex;
      ++i;
      continue;
    }
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += quote ? "\\\"" : "\"";
        break;
      default:
        if (is_control(c)) {
          char hex[8];
          std::snprintf(hex, sizeof hex, "\\x%02x", static_cast<unsigned char>(c));
          out += hex;
        } else {
          out += c;
        }
    }
  }
  return out;
}

}  // namespace

bool holds_control(const std::string& text) { return has_control(text); }

std::string escape_controls(const std::string& text) {
  return has_control(text) ? escaped(text, false) : text;
}

std::string printable(const std::string& path) {
  return has_control(path) ? "\"" + escaped(path, true) + "\"" : path;
}

}  // namespace meshrun
