// One updating progress line on stderr for long runs (`check`, `bench allreduce`):
//   check: 12/40 cases, 1 failed, 3.2 s
// drawn only when stderr is a terminal -- a script, a CI log or a file sees exactly the normal
// output -- rewritten in place with \r, and erased when the run ends (also by an error, whose
// one line then starts on a clean line).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace meshrun {

class Progress {
 public:
  // `what` starts the line ("check"), `unit` names what is counted ("cases").
  Progress(std::string what, std::size_t total, std::string unit);
  ~Progress();  // erases the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` of the total finished; `status` ("1 failed") follows the count.
  void update(std::size_t done, const std::string& status);
  // Erases the line now: before anything else is printed on stderr, or on stdout (which may be
  // the same terminal); update() draws it again.
  void clear();
  // Draws the last update again after clear().
  void redraw();

 private:
  bool on_;
  bool drawn_ = false;
  std::string what_, unit_;
  std::string line_;  // the last update's text
  std::size_t total_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace meshrun
