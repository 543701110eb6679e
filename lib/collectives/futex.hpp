// Parking on a 32-bit atomic word with a time limit. std::atomic<uint32_t>::wait has no timeout,
// and every wait in meshrun must be bounded, so on Linux this is the futex system call itself
// (the same call libstdc++'s atomic wait makes); elsewhere a short sleep stands in.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace meshrun {

// Sleeps while word == expected, at most `limit` (spurious returns allowed: callers re-check).
void futex_wait_for(std::atomic<std::uint32_t>& word, std::uint32_t expected,
                    std::chrono::nanoseconds limit);
// Wakes every thread sleeping on word.
void futex_wake_all(std::atomic<std::uint32_t>& word);

}  // namespace meshrun
