#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace meshrun {
namespace {

// Progress is decoration: a failed write to the terminal is ignored, never an error of the run.
void draw(const std::string& text) {
  const ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

constexpr const char* kEraseLine = "\r\x1b[K";  // carriage return, then erase to the end of line

}  // namespace

Progress::Progress(std::string what, std::size_t total, std::string unit)
    : on_(::isatty(STDERR_FILENO) == 1),
      what_(std::move(what)),
      unit_(std::move(unit)),
      total_(total),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() { clear(); }

void Progress::update(std::size_t done, const std::string& status) {
  if (!on_) return;
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f s", elapsed);
  line_ = what_ + ": " + std::to_string(done) + "/" + std::to_string(total_) + " " + unit_ + ", " +
          status + ", " + seconds;
  redraw();
}

void Progress::redraw() {
  if (!on_ || line_.empty()) return;
  draw(kEraseLine + line_);
  drawn_ = true;
}

void Progress::clear() {
  if (!drawn_) return;
  draw(kEraseLine);
  drawn_ = false;
}

}  // namespace meshrun
