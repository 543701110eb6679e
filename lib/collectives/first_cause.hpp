// Which failure a run reports when several devices fail, for every runner of device threads (the
// Mesh, and the tests' threads over one group): that of the lowest-numbered device whose failure
// is a cause -- not a consequence, an AbortedError, i.e. a device released because another one
// failed; if every failure is a consequence, the lowest-numbered of those. By number, not by time:
// two devices that both fail on their own (two --inject faults at the same collective, every
// device refusing the same mismatch) give the same verdict on every run, where the first by time
// made it exit 3 on one run and 4 on the next. Lock-free: note() from any device thread, first()
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
    std::atomic<int>& lowest = consequence ? consequence_ : cause_;
    int seen = lowest.load(std::memory_order_relaxed);
    while ((seen < 0 || who < seen) &&
           !lowest.compare_exchange_weak(seen, who, std::memory_order_acq_rel)) {
    }
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
