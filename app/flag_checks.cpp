#include "flag_checks.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "cli.hpp"

namespace meshrun {
namespace {

// The value as the user typed it, cut short: a flag's message stays one short line.
std::string shown(const std::string& text) {
  return "'" + (text.size() > 24 ? text.substr(0, 24) + "..." : text) + "'";
}

// As `std::ostream << v` prints it (%g, 6 significant digits), without building a stream and its
// locale: three of these run on every program start-up. (Not `number_text`: this file shares a
// translation unit with others that see io/json_text.hpp's, app/CMakeLists.txt.)
std::string flag_number_text(double v) {
  char text[32];
  const int n = std::snprintf(text, sizeof text, "%g", v);
  return std::string(text, static_cast<std::size_t>(n > 0 ? n : 0));
}

}  // namespace

CLI::Validator decimal_integer(long min, long max) {
  const std::string range = "from " + std::to_string(min) + " to " + std::to_string(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        long value = 0;
        const char* end = text.data() + text.size();
        const auto [p, ec] = std::from_chars(text.data(), end, value, 10);
        if (p != end || ec == std::errc::invalid_argument) {
          return "must be an integer, got " + shown(text);
        }
        if (ec == std::errc::result_out_of_range || value < min || value > max) {
          return "must be " + range + ", got " + shown(text);
        }
        text = std::to_string(value);
        return "";
      },
      "INT " + range);
}

CLI::Validator finite_real(double min, double max, const std::string& unit) {
  const std::string range = "from " + flag_number_text(min) + " to " + flag_number_text(max) + unit;
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        double value = 0;
        const char* end = text.data() + text.size();
        const auto [p, ec] = std::from_chars(text.data(), end, value);
        if (p != end || ec != std::errc() || !std::isfinite(value)) {
          return "must be a finite number " + range + ", got " + shown(text);
        }
        if (value < min || value > max) return "must be " + range + ", got " + shown(text);
        return "";
      },
      "NUMBER " + range);
}

CLI::Validator names(const std::string& what, const std::string& kind) {
  const std::string message = "must name " + what;
  return CLI::Validator(
      [message](const std::string& text) { return text.empty() ? message : std::string(); }, kind);
}

CLI::Validator path_to_write(const std::string& kind) {
  return names(kind == "DIR" ? "a directory" : "a file", kind);
}

}  // namespace meshrun
