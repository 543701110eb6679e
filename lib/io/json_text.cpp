#include "io/json_text.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "support/errors.hpp"

namespace meshrun {
namespace {

// Thrown from the parser callback to stop parsing at the first too-deep container.
struct TooDeep {};

[[noreturn]] void throw_read_error(int err) {
  throw InputError("", std::string("cannot read: ") + std::strerror(err));
}

// Reads all of `f`; fread (not iostreams) so a 50 MB case costs one copy and errno is kept.
std::string read_all(std::FILE* f) {
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const std::size_t n = std::fread(buf, 1, sizeof buf, f);
    text.append(buf, n);
    if (n < sizeof buf) break;
  }
  if (std::ferror(f)) throw_read_error(errno != 0 ? errno : EIO);
  return text;
}

// nlohmann's message minus its "[json.exception...] parse error at line L, column C: " prefix
// (we print our own position) and minus "; last read: '...'", which echoes arbitrary input.
std::string parse_error_reason(const std::string& what) {
  std::string reason = what;
  if (const auto colon = reason.find(": "); colon != std::string::npos) {
    reason = reason.substr(colon + 2);
  }
  if (const auto last = reason.find("; last read:"); last != std::string::npos) {
    reason.erase(last);
  }
  return reason;
}

// "line 2, column 5 (byte 12)" for nlohmann's 1-based byte position of the offending character.
std::string position(std::string_view text, std::size_t byte) {
  const std::size_t end = std::min(byte > 0 ? byte - 1 : 0, text.size());
  std::size_t line = 1;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(end - line_start + 1) +
         " (byte " + std::to_string(byte) + ")";
}

bool all_whitespace(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

}  // namespace

std::string display_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

std::string read_text(const std::string& path) {
  if (path == "-") return read_all(stdin);
  errno = 0;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw_read_error(errno);
  return read_all(f.get());
}

nlohmann::json parse_json_text(std::string_view text) {
  if (all_whitespace(text)) throw InputError("", "the file is empty");
  // The callback sees every container start with the number of containers enclosing it. The
  // parser itself is iterative and nlohmann (>= 3.10) destroys values without recursion, so
  // stopping at the first container past the limit bounds both stack and memory.
  const auto limit_depth = [](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
    const bool opens = event == nlohmann::json::parse_event_t::object_start ||
                       event == nlohmann::json::parse_event_t::array_start;
    if (opens && depth >= kMaxJsonDepth) throw TooDeep{};
    return true;
  };
  try {
    return nlohmann::json::parse(text, limit_depth);
  } catch (const TooDeep&) {
    throw InputError("", "nesting deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError("", "invalid JSON at " + position(text, e.byte) + ": " +
                             parse_error_reason(e.what()));
  } catch (const nlohmann::json::out_of_range& e) {
    // 406 "number overflow parsing '1e400'": beyond double's range, so beyond float32's too.
    // nlohmann gives no position for it; we name the number.
    const std::string what = e.what();
    const auto open = what.find('\'');
    const auto close = what.rfind('\'');
    const std::string number =
        open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : "a number";
    throw InputError("", number + " overflows float32");
  }
}

}  // namespace meshrun
