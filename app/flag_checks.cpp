#include "flag_checks.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "io/output.hpp"
#include "support/errors.hpp"

namespace meshrun {
namespace {

// The value as the user typed it, cut short: a flag's message stays one short line.
std::string shown(const std::string& text) {
  return "'" + (text.size() > 24 ? text.substr(0, 24) + "..." : text) + "'";
}

// As `std::ostream << v` prints it (%g, 6 significant digits), without building a stream and its
// locale: three of these run on every program start-up.
std::string number_text(double v) {
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
  const std::string range = "from " + number_text(min) + " to " + number_text(max) + unit;
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

CLI::Validator path_to_write(const std::string& kind) {
  const std::string message = kind == "DIR" ? "must name a directory" : "must name a file";
  return CLI::Validator(
      [message](const std::string& text) { return text.empty() ? message : std::string(); }, kind);
}

void refuse_case_file(const std::string& flag, const std::string& path,
                      const std::string& case_path) {
  if (case_path == "-") {
    struct stat in {
    }, out{};
    if (::fstat(STDIN_FILENO, &in) == 0 && S_ISREG(in.st_mode) && ::stat(path.c_str(), &out) == 0 &&
        in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
      throw InputError(flag, path +
                                 " is the case file being read (on stdin); refusing to "
                                 "overwrite it");
    }
    return;
  }
  if (path == case_path || same_file(path, case_path)) {
    throw InputError(flag, path + " is the case file being read; refusing to overwrite it");
  }
}

void refuse_same_file(const std::vector<std::pair<std::string, std::string>>& files) {
  // Neither file need exist yet: their absolute, normalised names are compared too.
  const auto name = [](const std::string& path) {
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(path, ec).lexically_normal();
    const std::filesystem::path p = std::filesystem::weakly_canonical(absolute, ec);
    return ec ? absolute : p;
  };
  for (std::size_t i = 0; i < files.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) {
      const auto& [flag, path] = files[i];
      const auto& [first_flag, first] = files[j];
      if (same_file(path, first) || name(path) == name(first)) {
        throw InputError(
            flag, path + " is also the " + first_flag + " file; refusing to write both to it");
      }
    }
  }
}

}  // namespace meshrun
