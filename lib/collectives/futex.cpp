#include "collectives/futex.hpp"

#include <thread>

#if defined(__linux__)
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>
#endif

namespace meshrun {

static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
                  std::atomic<std::uint32_t>::is_always_lock_free,
              "the futex word must be a plain lock-free 32-bit word");

#if defined(__linux__)
void futex_wait_for(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                    std::chrono::nanoseconds limit) {
  if (limit <= std::chrono::nanoseconds::zero()) return;
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(limit);
  timespec ts{};
  ts.tv_sec = static_cast<time_t>(s.count());
  ts.tv_nsec = static_cast<long>((limit - s).count());
  // Returns at once (EAGAIN) when word != expected; EINTR and ETIMEDOUT are fine too.
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAIT_PRIVATE, expected, &ts,
          nullptr, 0);
}

void futex_wake_all(std::atomic<std::uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX,
          nullptr, nullptr, 0);
}
#else
void futex_wait_for(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                    std::chrono::nanoseconds limit) {
  if (word.load(std::memory_order_acquire) == expected)
    std::this_thread::sleep_for(
        std::min<std::chrono::nanoseconds>(limit, std::chrono::microseconds(50)));
}
void futex_wake_all(std::atomic<std::uint32_t>&) {}
#endif

}  // namespace meshrun
