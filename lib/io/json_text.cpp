#include "io/json_text.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <memory>

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/output.hpp"
#include "support/errors.hpp"

namespace meshrun {
namespace {

[[noreturn]] void throw_read_error(int err) {
  throw InputError("", std::string("cannot read: ") + std::strerror(err));
}

[[noreturn]] void throw_too_large(std::uint64_t max_bytes) {
  throw InputError("", "larger than the input limit of " + std::to_string(max_bytes) +
                           " bytes (--max-input-bytes)");
}

constexpr std::size_t kChunkBytes = std::size_t{1} << 16;

}  // namespace

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

std::string display_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

std::string excerpt(std::string_view text) {
  constexpr std::size_t kMax = 40;
  if (text.size() <= kMax) return std::string(text);
  std::size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "...";
}

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

namespace {

// A descriptor for reading `path` that no FIFO can hang: opened with O_NONBLOCK (which never
// waits for a writer), a FIFO then waits for its first bytes or its writer's close at most
// `wait`; made blocking again for the reads. -1 with errno set, or throws for a silent FIFO.
int open_for_reading(const std::string& path, std::chrono::milliseconds wait) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) return fd;  // O_NONBLOCK means nothing there
  if (S_ISFIFO(st.st_mode)) {
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(wait.count()));
    if (ready <= 0) {
      ::close(fd);
      throw InputError("", "cannot read: no process wrote to the FIFO within " + wait_text(wait) +
                               " (--timeout)");
    }
  }
  make_blocking(fd);
  return fd;
}

}  // namespace

JsonSource::JsonSource(const std::string& path, std::uint64_t max_bytes,
                       std::chrono::milliseconds open_wait)
    : file_(nullptr, &std::fclose),
      max_bytes_(max_bytes),
      buf_(new char[kChunkBytes]),
      capacity_(kChunkBytes) {
  if (path == "-") {
    file_.reset(stdin);
    file_.get_deleter() = [](std::FILE*) { return 0; };  // stdin is not ours to close
  } else {
    errno = 0;
    const int fd = open_for_reading(path, open_wait);
    if (fd < 0) throw_read_error(errno);
    file_.reset(::fdopen(fd, "rb"));
    if (!file_) {
      const int err = errno;
      ::close(fd);
      throw_read_error(err);
    }
  }
  // A regular file's size is known: refuse it before reading a byte. Anything else (a pipe,
  // /dev/zero) is counted as it streams.
  struct stat st {};
  if (fstat(fileno(file_.get()), &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::uint64_t>(st.st_size) > max_bytes_) {
    throw_too_large(max_bytes_);
  }
}

std::size_t JsonSource::fill(std::size_t from) {
  errno = 0;
  const std::size_t got = std::fread(buf_.get() + from, 1, capacity_ - from, file_.get());
  if (got == 0 && std::ferror(file_.get())) throw_read_error(errno != 0 ? errno : EIO);
  read_ += got;
  if (read_ > max_bytes_) throw_too_large(max_bytes_);
  return got;
}

bool JsonSource::at_end() {
  if (pos_ < len_) return false;
  if (std::feof(file_.get())) return true;
  len_ = fill(0);
  pos_ = 0;
  return len_ == 0;
}

std::string_view JsonSource::window(std::size_t want) {
  if (len_ - pos_ < want && !std::feof(file_.get())) {
    // Nobody holds a pointer into buf_ (the parser reads it a byte at a time through Iterator),
    // so the unread bytes can move to the front.
    std::memmove(buf_.get(), buf_.get() + pos_, len_ - pos_);
    len_ -= pos_;
    pos_ = 0;
    len_ += fill(len_);
  }
  return {buf_.get() + pos_, len_ - pos_};
}

void JsonSource::skip(std::size_t n) {
  // The line bookkeeping of advance(), in bulk: only newlines move it. The last few bytes go
  // through advance() itself so that position() finds their lines in recent_.
  const std::size_t tail = std::min<std::size_t>(n, recent_.size());
  const char* p = buf_.get() + pos_;
  const char* const bulk_end = p + (n - tail);
  while (const void* nl = std::memchr(p, '\n', static_cast<std::size_t>(bulk_end - p))) {
    p = static_cast<const char*>(nl) + 1;
    line_ = {line_.line + 1, delivered_ + static_cast<std::uint64_t>(p - (buf_.get() + pos_))};
  }
  delivered_ += n - tail;
  pos_ += n - tail;
  for (std::size_t i = 0; i < tail; ++i) advance();
  skipped_ += n;
}

void JsonSource::advance() {
  const char c = buf_[pos_++];
  recent_[delivered_ % recent_.size()] = line_;
  ++delivered_;
  if (c == '\n') line_ = {line_.line + 1, delivered_};
  if (c == '\0' && first_nul_ == 0) first_nul_ = delivered_;
  if (only_whitespace_ && c != ' ' && c != '\t' && c != '\r' && c != '\n') {
    only_whitespace_ = false;
  }
}

std::string JsonSource::position(std::uint64_t byte) const {
  // Everything before the offending byte counts; it is one of the last few delivered.
  const std::uint64_t end = std::min(byte > 0 ? byte - 1 : 0, delivered_);
  const LineState at = end == delivered_ || delivered_ - end > recent_.size()
                           ? line_
                           : recent_[end % recent_.size()];
  return "line " + std::to_string(at.line) + ", column " + std::to_string(end - at.line_start + 1) +
         " (byte " + std::to_string(byte) + ")";
}

void throw_parse_error(const JsonSource& source, std::uint64_t byte, const std::string& what) {
  if (source.only_whitespace()) throw InputError("", "the file is empty");
  byte += source.skipped();  // the parser did not count what the fast path read for it
  std::string reason = parse_error_reason(what);
  // A NUL byte reads as the end of the input to nlohmann; say what it is.
  if (byte == source.first_nul() && reason.find("unexpected end of input") != std::string::npos) {
    reason = "unexpected NUL byte";
  }
  throw InputError("", "invalid JSON at " + source.position(byte) + ": " + reason);
}

void check_nothing_after(const JsonSource& source) {
  // nlohmann's lexer takes a NUL byte for the end of the input, so "{...}\0garbage" parses.
  // A NUL can only end a document that way (inside a string it is a parse error).
  if (source.first_nul() != 0) {
    throw InputError("", "invalid JSON at " + source.position(source.first_nul()) +
                             ": unexpected NUL byte; expected end of input");
  }
}

}  // namespace meshrun
