#include "io/json_text.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "support/errors.hpp"

namespace meshrun {
namespace {

// Thrown from the parser callback to stop parsing at the first too-deep container.
struct TooDeep {};

// The open containers while parsing, to find duplicate keys (nlohmann keeps the last silently,
// so a second "w" in `expected` could turn a FAIL into a PASS) and to name where they are.
struct Frame {
  bool object;
  std::string key;         // object: the member being parsed
  std::size_t index = 0;   // array: the element being parsed
  std::set<std::string> keys;
};

// "input.x[3]": the field holding the innermost open container.
std::string path_of(const std::vector<Frame>& frames) {
  std::string path;
  for (std::size_t i = 0; i + 1 < frames.size(); ++i) {
    const Frame& f = frames[i];
    if (!f.object) {
      path += '[';
      path += std::to_string(f.index);
      path += ']';
      continue;
    }
    if (!path.empty()) path += '.';
    path += f.key;
  }
  return path;
}

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

ParsedJson parse_json_text(std::string_view text) {
  if (all_whitespace(text)) throw InputError("", "the file is empty");
  // The callback sees every container start with the number of containers enclosing it. The
  // parser itself is iterative and nlohmann (>= 3.10) destroys values without recursion, so
  // stopping at the first container past the limit bounds both stack and memory.
  using Event = nlohmann::json::parse_event_t;
  std::vector<Frame> frames;
  ParsedJson result;
  const auto callback = [&](int depth, Event event, nlohmann::json& parsed) {
    const bool opens = event == Event::object_start || event == Event::array_start;
    if (opens && depth >= kMaxJsonDepth) throw TooDeep{};
    if (opens) {
      frames.push_back({event == Event::object_start, "", 0, {}});
    } else if (event == Event::key) {
      Frame& f = frames.back();
      f.key = parsed.get<std::string>();
      if (!f.keys.insert(f.key).second && !result.duplicate) {
        result.duplicate = DuplicateKey{path_of(frames), f.key};
      }
    } else if (event == Event::object_end || event == Event::array_end) {
      frames.pop_back();
    }
    const bool value_done = event == Event::value || event == Event::object_end ||
                            event == Event::array_end;
    if (value_done && !frames.empty() && !frames.back().object) ++frames.back().index;
    return true;
  };
  try {
    result.doc = nlohmann::json::parse(text, callback);
    // nlohmann's lexer takes a NUL byte for the end of the input, so "{...}\0garbage" parses.
    // A NUL can only end a document that way (inside a string it is a parse error).
    if (const auto nul = text.find('\0'); nul != std::string_view::npos) {
      throw InputError("", "invalid JSON at " + position(text, nul + 1) +
                               ": unexpected NUL byte; expected end of input");
    }
    return result;
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
