#include "io/expected_patch.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/file_set.hpp"
#include "io/output.hpp"

#include <nlohmann/json.hpp>

#include "support/errors.hpp"

namespace meshrun {
namespace {

[[noreturn]] void malformed(const std::string& what) { throw InputError("expected", what); }

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

class Scanner {
 public:
  explicit Scanner(std::string_view text) : s_(text) {}

  std::size_t pos() const { return pos_; }
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const {
    if (at_end()) malformed("the case ends inside its top-level object");
    return s_[pos_];
  }
  void skip(std::size_t n) { pos_ += n; }
  void skip_space() {
    while (!at_end() && is_space(s_[pos_])) ++pos_;
  }
  void expect(char c) {
    if (peek() != c) malformed(std::string("expected '") + c + "' at byte " + std::to_string(pos_));
    ++pos_;
  }
  // A string starting at the current '"'; returns its raw bytes, quotes included.
  std::string_view string() {
    const std::size_t begin = pos_;
    expect('"');
    while (peek() != '"') pos_ += peek() == '\\' ? 2 : 1;
    ++pos_;
    return s_.substr(begin, pos_ - begin);
  }
  // One value of any kind: nested brackets counted, strings skipped whole (they may hold any
  // bracket), a number or literal up to the next delimiter.
  void value() {
    const char c = peek();
    if (c == '"') {
      string();
    } else if (c == '{' || c == '[') {
      std::size_t depth = 0;
      do {
        const char d = peek();
        if (d == '"') {
          string();
          continue;
        }
        if (d == '{' || d == '[') ++depth;
        if (d == '}' || d == ']') --depth;
        ++pos_;
      } while (depth > 0);
    } else {
      const std::size_t begin = pos_;
      while (!at_end() && !is_space(s_[pos_]) && s_[pos_] != ',' && s_[pos_] != '}' &&
             s_[pos_] != ']')
        ++pos_;
      if (pos_ == begin) malformed("no value at byte " + std::to_string(pos_));
    }
  }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
};

// A key as JSON means it: "\u0065xpected" is "expected" to the case reader, so to us.
std::string decoded_key(std::string_view raw) {
  const auto key = nlohmann::json::parse(raw, nullptr, false);
  if (!key.is_string()) malformed("invalid key " + std::string(raw));
  return key.get<std::string>();
}

}  // namespace

ExpectedSpan find_expected(std::string_view text) {
  Scanner s(text);
  ExpectedSpan span;
  // A UTF-8 byte order mark, which the case reader skips as JSON parsers do, is kept as it is.
  if (text.starts_with("\xEF\xBB\xBF")) s.skip(3);
  s.skip_space();
  s.expect('{');
  s.skip_space();
  if (s.peek() == '}') {
    span.begin = span.end = s.pos();
    span.empty_object = true;
  } else {
    for (;;) {
      const std::string key = decoded_key(s.string());
      s.skip_space();
      s.expect(':');
      s.skip_space();
      const std::size_t begin = s.pos();
      s.value();
      if (key == "expected") {
        if (span.present) malformed("the case holds \"expected\" twice");
        span = {true, begin, s.pos(), false};
      } else if (!span.present) {
        span.begin = span.end = s.pos();
      }
      s.skip_space();
      if (s.peek() == '}') break;
      s.expect(',');
      s.skip_space();
    }
  }
  s.expect('}');
  s.skip_space();
  if (!s.at_end()) malformed("bytes after the case's object at byte " + std::to_string(s.pos()));
  return span;
}

std::string with_expected(std::string_view text, std::string_view value) {
  const ExpectedSpan span = find_expected(text);
  std::string out(text.substr(0, span.begin));
  if (!span.present) out += span.empty_object ? "\"expected\":" : ",\"expected\":";
  out += value;
  out += text.substr(span.end);
  return out;
}

std::string case_bytes(const std::string& path, std::uint64_t max_bytes) {
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); !ec && size > max_bytes) return "";
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw OutputError("--update: cannot read " + path + " back to update it");
  return text.str();
}

std::string rewrite_expected(const std::string& path, const std::string& ran_bytes,
                             std::string_view value, std::uint64_t max_bytes,
                             const std::vector<NpyFile>& inputs) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw OutputError("--update: cannot write " + path + ": " + std::strerror(errno));
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if ((st.st_mode & S_IWUSR) == 0) {
    return std::string("read-only (mode ") + mode + "); not blessed: make it writable first";
  }
  if (::access(path.c_str(), W_OK) != 0) {
    return "not writable by this user (owner uid " + std::to_string(st.st_uid) + ", mode " + mode +
           "); not blessed";
  }
  if (st.st_nlink > 1) {
    return "has " + std::to_string(st.st_nlink) +
           " hard links, which replacing it would split (the others would keep the old "
           "expected); not blessed";
  }
  OutputFile file(path, "--update", OutputFile::Mode::kAtomic);
  if (case_bytes(path, max_bytes) != ran_bytes) {
    return "changed during the run; not blessed (run --update again)";
  }
  for (const NpyFile& npy : inputs) {
    if (file_stamp(npy.path) != npy.stamp) {
      return npy.field + "'s " + npy.path +
             " changed during the run; not blessed (run --update again)";
    }
  }
  file.commit(with_expected(ran_bytes, value));
  return "";
}

}  // namespace meshrun
