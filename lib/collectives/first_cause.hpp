// Which failure a run reports when several devices fail, for every runner of device threads (the
// Mesh, and the tests' threads over one group): the first, by time, that is a cause -- not a
// consequence, an AbortedError, i.e. a device released because another one failed; if every
// failure is a consequence, the first of those. Lock-free: note() from any device thread, first()
// once they are all done (their joins or a counter's acquire order the notes before it).
#pragma once

#include <atomic>
#include <exception>

#include "support/errors.hpp"

namespace meshrun {

class FirstCause {
 public:
  void reset() {
    cause_.store(-1, std::memory_order_relaxed);
    consequence_.store(-1, std::memory_order_relaxed);
  }
  // Device `who` failed; `consequence`: with an AbortedError.
  void note(int who, bool consequence) {
    int none = -1;
    (consequence ? consequence_ : cause_)
        .compare_exchange_strong(none, who, std::memory_order_acq_rel);
  }
  void note(int who, const std::exception_ptr& error) { note(who, is_consequence(error)); }
  // The device whose failure to report, -1 if none failed.
  int first() const {
    const int c = cause_.load(std::memory_order_acquire);
    return c >= 0 ? c : consequence_.load(std::memory_order_acquire);
  }
  bool any_cause() const { return cause_.load(std::memory_order_acquire) >= 0; }

  static bool is_consequence(const std::exception_ptr& error) {
    try {
      std::rethrow_exception(error);
    } catch (const AbortedError&) {
      return true;
    } catch (...) {
      return false;
    }
  }

 private:
  std::atomic<int> cause_{-1}, consequence_{-1};
};

}  // namespace meshrun
