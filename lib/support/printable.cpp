#include "support/printable.hpp"

#include <algorithm>
#include <cstdio>

namespace meshrun {
namespace {

bool is_control(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f;
}

bool has_control(const std::string& text) {
  return std::any_of(text.begin(), text.end(), is_control);
}

std::string escaped(const std::string& text, bool quote) {
  std::string out;
  for (const char c : text) {
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

std::string escape_controls(const std::string& text) {
  return has_control(text) ? escaped(text, false) : text;
}

std::string printable(const std::string& path) {
  return has_control(path) ? "\"" + escaped(path, true) + "\"" : path;
}

}  // namespace meshrun
