// Reading a case file's bytes and parsing them as JSON, with the limits a case reader needs:
// a nesting bound (so hostile input cannot exhaust the stack or memory) and one-line messages.
// Errors are InputError without the file name; read_case prefixes it (it knows the display name).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace meshrun {

// Cases nest at most 3 levels (case -> input -> x -> row); 64 leaves room and still rejects
// pathological input like 100,000 nested '[' long before it costs anything.
inline constexpr int kMaxJsonDepth = 64;

// How a path shows in messages: "-" (stdin) shows as "<stdin>".
std::string display_name(const std::string& path);

// The whole file ("-" = stdin). Throws InputError("cannot read: <reason>").
std::string read_text(const std::string& path);

// A key that occurs twice in one object: `path` is the object's field ("" for the top level,
// "input", "input.x[0]"), which the case reader completes (a bare input's fields are "input.*").
struct DuplicateKey {
  std::string path;
  std::string key;
};

struct ParsedJson {
  nlohmann::json doc;                      // for a duplicate key, the last value
  std::optional<DuplicateKey> duplicate;   // the first duplicate key, if any
};

// Parses `text`; throws InputError for an empty (or all-whitespace) text, invalid JSON (with its
// byte position; bytes after the value, a NUL byte included), a number outside double's range,
// or nesting deeper than kMaxJsonDepth.
ParsedJson parse_json_text(std::string_view text);

}  // namespace meshrun
