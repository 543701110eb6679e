#include "support/exit_code.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "support/errors.hpp"
#include "support/printable.hpp"

namespace meshrun {

int exit_code_of(const Error& e) {
  if (dynamic_cast<const InputError*>(&e)) return kExitUsage;
  if (dynamic_cast<const CollectiveError*>(&e) || dynamic_cast<const DeviceError*>(&e))
    return kExitMesh;
  if (dynamic_cast<const NoCasesError*>(&e)) return kExitNoCases;
  if (dynamic_cast<const OutputError*>(&e)) return kExitOutput;
  if (dynamic_cast<const NonFiniteError*>(&e)) return kExitNonFinite;
  return kExitInternal;  // InternalError, whose message already says "internal error"
}

void report_error(const std::string& message) {
  std::string line = message;
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  // Any other control byte a message quotes from a file (an ESC in a JSON key, a primitive's
  // name, a case's field) is written as \xHH: no file can move the cursor or forge a line.
  line = escape_controls(line);
  write_stderr("meshrun: " + line + '\n');
}

bool write_stderr(std::string_view text) {
  int waits = 0;  // a stderr left non-blocking (O_NONBLOCK by whoever shares it) that is full
  while (!text.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && waits++ < 10) {
      // Up to 10 x 100 ms for the reader to make room, so a line is not cut short; never longer.
      pollfd out{STDERR_FILENO, POLLOUT, 0};
      ::poll(&out, 1, 100);
      continue;
    }
    if (n <= 0) {
      if (n == 0) errno = EIO;  // a write(2) that writes nothing and says no error
      return false;
    }
    text.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

namespace {
bool g_stderr_closed = false;  // set once at start, before any thread
}  // namespace

void stderr_was_closed() { g_stderr_closed = true; }

void write_stderr_report(std::string_view text, const char* flag) {
  if (g_stderr_closed) errno = EBADF;
  if (g_stderr_closed || !write_stderr(text))
    throw OutputError(std::string(flag) + ": cannot write stderr: " + std::strerror(errno));
}

}  // namespace meshrun
