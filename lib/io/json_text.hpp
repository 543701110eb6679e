// Reading a case file's bytes for the JSON parser, with the limits a case reader needs: the file
// streams through a bounded buffer (never held whole), its size is capped, nesting is bounded (so
// hostile input cannot exhaust the stack or memory), and messages are one line that quotes at most
// a short excerpt of the input. Errors are InputError without the file name; read_case prefixes it
// (it knows the display name).
#pragma once

#include <array>
#include <cstddef>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace meshrun {

// Cases nest at most 3 levels (case -> input -> x -> row); 64 leaves room and still rejects
// pathological input like 100,000 nested '[' long before it costs anything.
inline constexpr int kMaxJsonDepth = 64;

// Inputs larger than this are refused before they are read whole (--max-input-bytes).
inline constexpr std::uint64_t kDefaultMaxInputBytes = std::uint64_t{1} << 30;

// How a path shows in messages: "-" (stdin) shows as "<stdin>".
std::string display_name(const std::string& path);

// `text` as quoted in a message: whole when short, else its first ~40 bytes (never cutting a
// UTF-8 sequence) and "...", so a 1 MB key or number never becomes a 1 MB stderr line.
std::string excerpt(std::string_view text);

// A number from the input as messages show it: "%g" ("1e+39", "2.5", "-3.5e+38").
std::string number_text(double value);

// A file ("-" = stdin) as a stream of bytes for nlohmann's parser: begin()/end() are input
// iterators over it, read in 64 KiB chunks. It counts what it delivers, so a parse error's byte
// offset can be turned into a line and column, and refuses to go past `max_bytes`.
class JsonSource {
 public:
  // Opens `path`; throws InputError "cannot read: <reason>", or "larger than ..." when a regular
  // file's size already exceeds `max_bytes`. A FIFO is opened without blocking, and its first
  // bytes (or its writer's close) must arrive within `open_wait`: a FIFO nobody writes is an
  // error, not a hang.
  JsonSource(const std::string& path, std::uint64_t max_bytes,
             std::chrono::milliseconds open_wait = std::chrono::seconds(10));

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    Iterator() = default;
    explicit Iterator(JsonSource* source) : source_(source) {}
    reference operator*() const { return source_->buf_[source_->pos_]; }
    Iterator& operator++() {
      source_->advance();
      return *this;
    }
    // Only "at the end or not" is compared: the parser asks `it != end` before each byte.
    bool operator==(const Iterator& other) const { return at_end() == other.at_end(); }

   private:
    bool at_end() const { return source_ == nullptr || source_->at_end(); }
    JsonSource* source_ = nullptr;
  };

  Iterator begin() { return Iterator(this); }
  Iterator end() { return Iterator(); }

  // Direct access for a scanner that reads ahead of the parser (json_summary's fast path for
  // arrays of numbers): window() is the buffered bytes the parser has not been handed yet,
  // refilled first (the unread bytes moved to the front) when fewer than `want` are left and the
  // file has more; skip(n) hands the window's first n bytes to nobody, counting them as
  // delivered (offsets, lines) -- the parser never sees them, so its byte offsets fall behind by
  // skipped().
  std::string_view window(std::size_t want);
  void skip(std::size_t n);
  std::uint64_t skipped() const { return skipped_; }

  // Bytes read from the file so far.
  std::uint64_t bytes_read() const { return read_; }
  // True when everything delivered so far is JSON whitespace (an empty file, or "  \n").
  bool only_whitespace() const { return only_whitespace_; }
  // The 1-based offset of the first NUL byte delivered, 0 if none. nlohmann's lexer takes NUL
  // for the end of the input, so the reader must tell it from the real end.
  std::uint64_t first_nul() const { return first_nul_; }
  // "line 2, column 5 (byte 12)" for the parser's 1-based offset of the offending byte, which
  // always lies among the last few delivered.
  std::string position(std::uint64_t byte) const;

 private:
  bool at_end();  // refills the buffer when it is used up
  void advance();
  std::size_t fill(std::size_t from);  // reads into buf_[from, size), returns the bytes read

  struct LineState {
    std::uint64_t line = 1;
    std::uint64_t line_start = 0;  // offset of the line's first byte
  };

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
  std::uint64_t max_bytes_;
  std::unique_ptr<char[]> buf_;  // kChunkBytes, not zeroed: only what fread wrote is read
  std::size_t capacity_;
  std::size_t pos_ = 0;
  std::size_t len_ = 0;
  std::uint64_t read_ = 0;             // bytes read from the file
  std::uint64_t delivered_ = 0;        // bytes the parser has passed (or skip() passed for it)
  std::uint64_t skipped_ = 0;          // bytes skip() passed
  LineState line_;                     // after the delivered bytes
  std::array<LineState, 4> recent_{};  // before each of the last 4 delivered bytes
  bool only_whitespace_ = true;
  std::uint64_t first_nul_ = 0;
};

// Throws the InputError for nlohmann's parse error `what` at 1-based `byte`: "the file is empty"
// when only whitespace came before, else "invalid JSON at line L, column C (byte B): <reason>".
[[noreturn]] void throw_parse_error(const JsonSource& source, std::uint64_t byte,
                                    const std::string& what);

// nlohmann's parse error message as meshrun quotes it: without its own position prefix and
// without the "last read" echo of the input.
std::string parse_error_reason(const std::string& what);

// After a successful parse: throws unless the parser stopped at the real end of the input.
void check_nothing_after(const JsonSource& source);

}  // namespace meshrun
